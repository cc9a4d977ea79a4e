// Chain manifests: the bundled sample chains parse with the wiring they describe, and every
// wiring mistake is refused up front with a message naming the file and the JSON place.
#include "shardgate/chain.h"

#include "shardgate/io.h"
#include "support/json_schema_lite.h"

#include <gtest/gtest.h>

#include <string>

namespace sg {
namespace {

// Manifests written inline are parsed as if they lived in tests/data/chain/, so relative shard
// paths resolve against the fixtures there.
const std::string kPath = SG_TEST_DATA_DIR "/chain/inline.json";
const std::string kShard = "../fixtures/llm/attention_fp16.mlpackage";

std::string chain_with_steps(const std::string& steps, const std::string& checkpoints =
                                                           R"([{"tensor": "out", "golden": "out", "kind": "hidden"}])") {
  return R"({"schema": "shardgate/chain@1", "name": "t", "inputs": {"x": "npy:goldens/hidden.npy"},
             "steps": )" +
         steps + R"(, "checkpoints": )" + checkpoints + "}";
}

std::string shard_step(const std::string& id, const std::string& in, const std::string& out) {
  return R"({"id": ")" + id + R"(", "shard": ")" + kShard + R"(", "inputs": {"hidden": ")" + in +
         R"("}, "outputs": {"hidden_out": ")" + out + R"("}})";
}

Status parse_error(const std::string& text) {
  auto m = parse_chain_manifest(text, kPath);
  if (m.is_ok()) return Status::ok();
  return m.status();
}

void expect_error(const std::string& text, ErrorCode code, const std::string& fragment) {
  const Status s = parse_error(text);
  ASSERT_FALSE(s.is_ok()) << "accepted: " << text;
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("inline.json"), std::string::npos) << "no file named: " << s.message();
}

TEST(ChainManifest, SampleChainsParseWithTheirWiring) {
  for (const char* variant : {"fp16", "int8", "lut4"}) {
    const std::string path =
        std::string(SG_SOURCE_DIR "/goldens/sample/chains/chain_") + variant + ".json";
    auto m = load_chain_manifest(path);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m->name, std::string("tiny-moe-4l-") + variant);
    ASSERT_EQ(m->steps.size(), 21u);
    EXPECT_EQ(m->checkpoints.size(), 6u);
    ASSERT_EQ(m->inputs.size(), 1u);
    EXPECT_EQ(m->inputs[0].source, ChainInput::Source::kGolden);
    EXPECT_EQ(m->inputs[0].ref, "input_ids");
    // Paths are relative to the manifest.
    EXPECT_TRUE(is_directory(m->goldens)) << m->goldens;
    EXPECT_TRUE(is_directory(m->steps[0].shard)) << m->steps[0].shard;
    const ChainStep* combine = m->find_step("L0.combine");
    ASSERT_NE(combine, nullptr);
    EXPECT_TRUE(combine->is_combine);
    EXPECT_EQ(combine->combine, CombineKind::kSum);
    EXPECT_EQ(combine->combine_inputs,
              (std::vector<std::string>{"L0.attn_out", "L0.moe_p0", "L0.moe_p1"}));
    const ChainStep* concat = m->find_step("head.concat");
    ASSERT_NE(concat, nullptr);
    EXPECT_EQ(concat->combine, CombineKind::kConcat);
    EXPECT_EQ(concat->axis, -1);
    const ChainStep* attn = m->find_step("L1.attn");
    ASSERT_NE(attn, nullptr);
    EXPECT_EQ(attn->layer, 1);
    EXPECT_EQ(attn->residual_input, "hidden");
    EXPECT_EQ(m->producer("hidden.0"), m->find_step("L0.combine"));
  }
}

TEST(ChainManifest, TestChainsParse) {
  for (const char* name : {"wiring.json", "kv_two_calls.json"}) {
    auto m = load_chain_manifest(std::string(SG_TEST_DATA_DIR "/chain/") + name);
    EXPECT_TRUE(m.is_ok()) << name << ": " << m.status().to_string();
  }
  auto kv = load_chain_manifest(SG_TEST_DATA_DIR "/chain/kv_two_calls.json");
  ASSERT_TRUE(kv.is_ok());
  EXPECT_EQ(kv->steps[0].state,
            (std::vector<std::pair<std::string, std::string>>{{"k_cache", "L0.k"}, {"v_cache", "L0.v"}}));
}

// The published JSON Schema and the parser agree on every chain the repository ships.
TEST(ChainManifest, ShippedChainsFollowThePublishedSchema) {
  auto schema = read_file(SG_SOURCE_DIR "/reports/schema/chain.schema.json");
  ASSERT_TRUE(schema.is_ok()) << schema.status().to_string();
  for (const std::string& path :
       {std::string(SG_SOURCE_DIR "/goldens/sample/chains/chain_fp16.json"),
        std::string(SG_SOURCE_DIR "/goldens/sample/chains/chain_int8.json"),
        std::string(SG_SOURCE_DIR "/goldens/sample/chains/chain_lut4.json"),
        std::string(SG_TEST_DATA_DIR "/chain/wiring.json"),
        std::string(SG_TEST_DATA_DIR "/chain/kv_two_calls.json"),
        std::string(SG_TEST_DATA_DIR "/chain/chain_bad_L1.json")}) {
    auto text = read_file(path);
    ASSERT_TRUE(text.is_ok()) << path;
    EXPECT_EQ(testing::json_schema_violations(*schema, *text), std::vector<std::string>{}) << path;
    EXPECT_TRUE(parse_chain_manifest(*text, path).is_ok()) << path;
  }
  // A mistake the schema can see is refused by both.
  const std::string bad = chain_with_steps(R"([{"id": "c", "combine": "mean", "inputs": ["x"], "output": "out"}])");
  EXPECT_FALSE(testing::json_schema_violations(*schema, bad).empty());
  EXPECT_FALSE(parse_chain_manifest(bad, kPath).is_ok());
}

TEST(ChainManifest, AValidInlineChainParses) {
  const std::string text = chain_with_steps("[" + shard_step("a", "x", "out") + "]");
  auto m = parse_chain_manifest(text, kPath);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->steps[0].function, "main");
}

TEST(ChainManifest, UnknownTensorIsRefused) {
  expect_error(chain_with_steps("[" + shard_step("L0.moe", "L0.attn_out", "out") + "]"),
               ErrorCode::kFormat,
               "steps[0].inputs.hidden: tensor 'L0.attn_out' is not produced by any earlier step");
}

TEST(ChainManifest, ForwardReferenceIsRefused) {
  expect_error(chain_with_steps("[" + shard_step("a", "mid", "out") + ", " +
                                shard_step("b", "x", "mid") + "]"),
               ErrorCode::kFormat, "steps[0].inputs.hidden: tensor 'mid' is not produced by any earlier step: steps[1] 'b' produces it later");
}

TEST(ChainManifest, CycleIsRefused) {
  // A step that reads its own output, and a two-step cycle.
  expect_error(chain_with_steps("[" + shard_step("a", "out", "out") + "]"), ErrorCode::kFormat,
               "produces it itself");
  expect_error(chain_with_steps("[" + shard_step("a", "y", "out") + ", " + shard_step("b", "out", "y") + "]"),
               ErrorCode::kFormat, "a forward reference or a cycle");
}

TEST(ChainManifest, MissingShardIsAnIoError) {
  const std::string step =
      R"({"id": "a", "shard": "../nowhere/L0.mlpackage", "inputs": {"hidden": "x"}, "outputs": {"hidden_out": "out"}})";
  expect_error(chain_with_steps("[" + step + "]"), ErrorCode::kIO,
               "steps[0].shard: shard '../nowhere/L0.mlpackage' of step 'a' not found");
  // Without file checks the same manifest parses (record may write a chain's files later).
  EXPECT_TRUE(parse_chain_manifest(chain_with_steps("[" + step + "]"), kPath, false).is_ok());
}

TEST(ChainManifest, BadCombineIsRefused) {
  const std::string first = shard_step("a", "x", "y") + ", ";
  expect_error(chain_with_steps("[" + first + R"({"id": "c", "combine": "mean", "inputs": ["y"], "output": "out"}])"),
               ErrorCode::kFormat, "steps[1].combine: unknown combine 'mean' (expected \"sum\" or \"concat\")");
  expect_error(chain_with_steps("[" + first + R"({"id": "c", "combine": "concat", "inputs": ["y"], "output": "out"}])"),
               ErrorCode::kFormat, "\"concat\" needs an integer 'axis'");
  expect_error(chain_with_steps("[" + first + R"({"id": "c", "combine": "concat", "axis": 1.5, "inputs": ["y"], "output": "out"}])"),
               ErrorCode::kFormat, "steps[1].axis");
  expect_error(chain_with_steps("[" + first + R"({"id": "c", "combine": "sum", "axis": 0, "inputs": ["y"], "output": "out"}])"),
               ErrorCode::kFormat, "applies to \"concat\" only");
  expect_error(chain_with_steps("[" + first + R"({"id": "c", "combine": "sum", "inputs": [], "output": "out"}])"),
               ErrorCode::kFormat, "steps[1].inputs: empty list");
  expect_error(chain_with_steps("[" + first + R"({"id": "c", "combine": "sum", "inputs": {"a": "y"}, "output": "out"}])"),
               ErrorCode::kFormat, "takes a list of chain tensors");
  expect_error(chain_with_steps("[" + first + R"({"id": "c", "combine": "sum", "shard": "x", "inputs": ["y"], "output": "out"}])"),
               ErrorCode::kFormat, "not both");
}

TEST(ChainManifest, OtherMistakesAreRefused) {
  // A tensor produced twice.
  expect_error(chain_with_steps("[" + shard_step("a", "x", "out") + ", " + shard_step("b", "x", "out") + "]"),
               ErrorCode::kFormat, "steps[1].outputs.hidden_out: tensor 'out' is already produced by steps[0].outputs.hidden_out");
  // Duplicate step ids.
  expect_error(chain_with_steps("[" + shard_step("a", "x", "y") + ", " + shard_step("a", "y", "out") + "]"),
               ErrorCode::kFormat, "step id 'a' is already used by steps[0]");
  // A typo in a key must not pass silently.
  expect_error(chain_with_steps(R"([{"id": "a", "shard": ")" + kShard +
                                R"(", "inputs": {"hidden": "x"}, "ouputs": {"hidden_out": "out"}}])"),
               ErrorCode::kFormat, "unknown key 'ouputs'");
  // residual_input must name an input and needs a layer.
  expect_error(chain_with_steps(R"([{"id": "a", "layer": 0, "shard": ")" + kShard +
                                R"(", "residual_input": "h", "inputs": {"hidden": "x"}, "outputs": {"hidden_out": "out"}}])"),
               ErrorCode::kFormat, "steps[0].residual_input: 'h' is not one of the step's inputs");
  expect_error(chain_with_steps(R"([{"id": "a", "shard": ")" + kShard +
                                R"(", "residual_input": "hidden", "inputs": {"hidden": "x"}, "outputs": {"hidden_out": "out"}}])"),
               ErrorCode::kFormat, "needs the step's 'layer'");
  // Checkpoint of a tensor nobody produces.
  expect_error(chain_with_steps("[" + shard_step("a", "x", "out") + "]",
                                R"([{"tensor": "nope", "golden": "g", "kind": "hidden"}])"),
               ErrorCode::kFormat, "checkpoints[0].tensor: tensor 'nope' is not produced");
  // Unknown input source, schema, missing npy input.
  expect_error(R"({"schema": "shardgate/chain@1", "name": "t", "inputs": {"x": "file:a.npy"}, "steps": [)" +
                   shard_step("a", "x", "out") + R"(], "checkpoints": []})",
               ErrorCode::kFormat, "inputs.x: unknown source 'file:a.npy'");
  expect_error(R"({"schema": "shardgate/chain@2", "name": "t", "steps": [], "checkpoints": []})",
               ErrorCode::kFormat, "schema: expected \"shardgate/chain@1\"");
  expect_error(R"({"schema": "shardgate/chain@1", "name": "t", "inputs": {"x": "npy:missing.npy"}, "steps": [)" +
                   shard_step("a", "x", "out") + R"(], "checkpoints": []})",
               ErrorCode::kIO, "inputs.x: file 'npy:missing.npy' not found");
  // A state key declared at top level but used by no step.
  expect_error(R"({"schema": "shardgate/chain@1", "name": "t", "inputs": {"x": "npy:goldens/hidden.npy"}, "steps": [)" +
                   shard_step("a", "x", "out") + R"(], "states": {"k": {"shape": [1], "dtype": "fp16"}}, "checkpoints": []})",
               ErrorCode::kFormat, "states.k: state key not used by any step");
  // Broken JSON names the byte.
  expect_error("{\"schema\": ", ErrorCode::kFormat, "invalid JSON at byte");
}

}  // namespace
}  // namespace sg
