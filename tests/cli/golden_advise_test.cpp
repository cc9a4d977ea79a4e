// golden-validator advise on the sample chains: the set it recommends for the INT8 chain is
// the one the committed re-converted variant keeps at fp16 (read from the shards themselves),
// that variant passes `run` (the proof by actual re-conversion), passing chains need no
// search, the run bound and the usage errors.
#include "shardgate/io.h"
#include "shardgate/shard.h"

#include "support/cli_run.h"
#include "support/json_schema_lite.h"
#include "support/temp_dir_test.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace sg {
namespace {

namespace fs = std::filesystem;

class GoldenAdviseCli : public testing::TempDirTest {
 protected:
  GoldenAdviseCli() : TempDirTest("sg_advise_") {}
  static CliRun golden(const std::string& args) { return run_golden_validator(args); }
  static nlohmann::json load(const std::string& path) {
    auto t = read_file(path);
    EXPECT_TRUE(t.is_ok()) << path;
    return nlohmann::json::parse(t.is_ok() ? *t : "{}");
  }
  static void expect_schema_valid(const std::string& path) {
    auto schema = read_file(SG_SOURCE_DIR "/reports/schema/advice.schema.json");
    ASSERT_TRUE(schema.is_ok());
    auto doc = read_file(path);
    ASSERT_TRUE(doc.is_ok()) << path;
    EXPECT_EQ(testing::json_schema_violations(*schema, *doc), std::vector<std::string>{});
  }
};

// Weights of `fn` read by runtime ops, by use ("<reader output>.<parameter>") -> the op type
// producing them ("const" when stored dense, "constexpr_*" when compressed).
std::map<std::string, std::string> weight_producers(const Function& fn) {
  std::map<std::string, std::string> producer_type;
  for (const Op& op : fn.block.ops) {
    for (const NamedType& o : op.outputs) producer_type[o.name] = op.type;
  }
  std::map<std::string, std::string> out;
  for (const Op& op : fn.block.ops) {
    if (op.is_compile_time() || op.outputs.empty()) continue;
    const Argument* w = op.input("weight");
    if (w == nullptr || w->bindings.size() != 1 || !w->bindings[0].is_reference()) continue;
    out[op.outputs[0].name + ".weight"] = producer_type[w->bindings[0].name];
  }
  return out;
}

// What the committed advised variant keeps at fp16: "<int8 shard file>:<use>" for every weight
// that is compressed in the INT8 shard and dense in its advised re-conversion.
std::set<std::string> kept_fp16_by_the_advised_variant() {
  std::set<std::string> kept;
  const fs::path shards = fs::path(SG_SOURCE_DIR) / "goldens/sample/shards";
  for (const auto& e : fs::directory_iterator(shards)) {
    const std::string name = e.path().filename().string();
    const std::string tag = "_int8_advised.mlpackage";
    if (name.size() <= tag.size() || name.compare(name.size() - tag.size(), tag.size(), tag) != 0) continue;
    const std::string int8 = name.substr(0, name.size() - tag.size()) + "_int8.mlpackage";
    auto advised = Shard::open(e.path().string());
    auto plain = Shard::open((shards / int8).string());
    EXPECT_TRUE(advised.is_ok() && plain.is_ok()) << name;
    if (!advised.is_ok() || !plain.is_ok()) continue;
    const auto a = weight_producers(*(*advised)->program().function("main"));
    const auto p = weight_producers(*(*plain)->program().function("main"));
    EXPECT_EQ(a.size(), p.size()) << name;
    for (const auto& [use, type] : p) {
      if (type.rfind("constexpr_", 0) == 0 && a.count(use) && a.at(use) == "const") {
        kept.insert(int8 + ":" + use);
      } else {
        EXPECT_EQ(a.count(use) ? a.at(use) : "", type) << name << " " << use << ": changed otherwise";
      }
    }
  }
  return kept;
}

TEST_F(GoldenAdviseCli, Int8SampleSetEqualsTheOneTheCommittedAdvisedVariantKeepsFp16) {
  const CliRun r = golden("advise goldens/sample/chains/chain_int8.json --baseline-replace _int8=_fp16 --json " +
                          out("a.json") + " --junit " + out("a.xml") + " --markdown " + out("a.md"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("The tool recommends; the user re-converts"), std::string::npos) << r.output;
  // The logits' gated cosine before and after, each with its worst position.
  const size_t logits_line = r.output.find("  logits                cosine min");
  ASSERT_NE(logits_line, std::string::npos) << r.output;
  const std::string line = r.output.substr(logits_line, r.output.find('\n', logits_line) - logits_line);
  EXPECT_NE(line.find("0.957965 @6"), std::string::npos) << line;
  EXPECT_NE(line.find("0.983013 @7"), std::string::npos) << line;
  EXPECT_NE(line.find("fail -> pass"), std::string::npos) << line;
  expect_schema_valid(out("a.json"));
  const nlohmann::json j = load(out("a.json"));
  EXPECT_EQ(j["summary"]["outcome"], "found");
  {
    // The schema can refuse: a report without its set, or with an unknown evidence, is invalid.
    auto schema = read_file(SG_SOURCE_DIR "/reports/schema/advice.schema.json");
    ASSERT_TRUE(schema.is_ok());
    nlohmann::json no_set = j;
    no_set.erase("chosen");
    EXPECT_FALSE(testing::json_schema_violations(*schema, no_set.dump()).empty());
    nlohmann::json bad_evidence = j;
    bad_evidence["chosen"][0]["evidence"] = "guess";
    EXPECT_FALSE(testing::json_schema_violations(*schema, bad_evidence.dump()).empty());
  }
  std::set<std::string> advised;
  int64_t added = 0;
  for (const auto& c : j["chosen"]) {
    advised.insert(fs::path(c["shard"].get<std::string>()).filename().string() + ":" + c["key"].get<std::string>());
    added += c["added_bytes"].get<int64_t>();
    // The culprit search ranked them: the linears reading per-tensor INT8 expert banks.
    EXPECT_EQ(c["evidence"], "culprit") << c.dump();
  }
  EXPECT_EQ(j["summary"]["added_bytes"].get<int64_t>(), added);
  const std::set<std::string> kept = kept_fp16_by_the_advised_variant();
  EXPECT_FALSE(kept.empty());
  EXPECT_EQ(advised, kept);
  // Before and after: the logits fail, then pass.
  bool logits = false;
  for (const auto& c : j["checks"]) {
    if (c["id"] != "logits") continue;
    logits = true;
    EXPECT_EQ(c["verdict_before"], "fail");
    EXPECT_EQ(c["verdict_after"], "pass");
  }
  EXPECT_TRUE(logits);
  auto xml = read_file(out("a.xml"));
  auto md = read_file(out("a.md"));
  ASSERT_TRUE(xml.is_ok() && md.is_ok());
  EXPECT_NE(xml->find("failures=\"0\""), std::string::npos) << *xml;
  EXPECT_NE(md->find("## Precision advice: keep"), std::string::npos) << *md;
}

// The proof by actual re-conversion: the advised variant (coremltools, those weights left
// uncompressed) passes the gate the INT8 chain fails.
TEST_F(GoldenAdviseCli, TheReconvertedAdvisedChainPassesRun) {
  EXPECT_EQ(golden("run goldens/sample/chains/chain_int8.json -q").code, 1);
  const CliRun r = golden("run goldens/sample/chains/chain_int8_advised.json -q");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("PASS"), std::string::npos) << r.output;
}

TEST_F(GoldenAdviseCli, APassingChainNeedsNoSearch) {
  for (const char* args : {"goldens/sample/chains/chain_lut4.json --baseline-replace _lut4=_fp16",
                           "goldens/sample/chains/chain_int8_advised.json --baseline-replace _int8=_fp16"}) {
    const CliRun r = golden(std::string("advise ") + args + " --json " + out("p.json"));
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("already passes its gate: nothing to advise (no search)"), std::string::npos)
        << r.output;
    expect_schema_valid(out("p.json"));
    const nlohmann::json j = load(out("p.json"));
    EXPECT_EQ(j["summary"]["outcome"], "already_passes");
    EXPECT_EQ(j["summary"]["runs"], 1);
    EXPECT_TRUE(j["trials"].empty());
    EXPECT_TRUE(j["chosen"].empty());
  }
}

TEST_F(GoldenAdviseCli, TheRunBoundStopsTheSearchWithExitOne) {
  const CliRun r = golden("advise goldens/sample/chains/chain_int8.json --baseline-replace _int8=_fp16 "
                          "--max-runs 4 --json " + out("b.json") + " --junit " + out("b.xml"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("stopped at --max-runs 4"), std::string::npos) << r.output;
  expect_schema_valid(out("b.json"));
  const nlohmann::json j = load(out("b.json"));
  EXPECT_EQ(j["summary"]["outcome"], "not_found");
  EXPECT_EQ(j["summary"]["runs"], 4);
  auto xml = read_file(out("b.xml"));
  ASSERT_TRUE(xml.is_ok());
  EXPECT_NE(xml->find("failures=\"1\""), std::string::npos) << *xml;
}

// A gate with no threshold judges nothing: the run is "no evidence" whatever the weights, so
// there is nothing to search. It used to re-run the chain once per candidate (53 runs on the
// INT8 sample) and end "the gate still fails: no set of these weights is enough". The report's
// verdict is no_evidence, as `run`'s on the same chain and gate (it read "fail").
TEST_F(GoldenAdviseCli, AGateThatJudgesNothingIsNotSearched) {
  std::ofstream(out("gate.json")) << R"({"schema": "shardgate/fidelity-gate@1", "description": "gates nothing",
    "topk": 5, "defaults": {"statistic": {"value": "min", "reason": "r"},
    "min_cosine": {"value": null, "reason": "r"}, "norm_ratio": {"value": null, "reason": "r"}},
    "overrides": []})";
  const CliRun r = golden("advise goldens/sample/chains/chain_int8.json --baseline-replace _int8=_fp16 --gate " +
                          out("gate.json") + " --json " + out("n.json"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("no passing set found within 1 chain run(s): the gate judges nothing as built (no "
                          "check was judged"),
            std::string::npos)
      << r.output;
  expect_schema_valid(out("n.json"));
  const nlohmann::json j = load(out("n.json"));
  EXPECT_EQ(j["summary"]["outcome"], "not_found");
  EXPECT_EQ(j["summary"]["runs"], 1);
  EXPECT_TRUE(j["trials"].empty());
  EXPECT_EQ(j["verdict"], "no_evidence");
  EXPECT_EQ(j["exit_code"], 1);
}

// A stateful step (a KV cache carried across two calls) cannot be culprit-searched on golden
// inputs: the ranking falls back to the weight diagnostics with a note, and the command still
// answers (this fp16 chain made to fail by --min-cosine 1 has no compressed weight: no set, 1).
TEST_F(GoldenAdviseCli, AStatefulStepLeavesTheRankingToTheWeightDiagnostics) {
  auto text = read_file(SG_TEST_DATA_DIR "/chain/kv_two_calls.json");
  ASSERT_TRUE(text.is_ok());
  nlohmann::json chain = nlohmann::json::parse(*text);
  const std::string data = SG_TEST_DATA_DIR;
  chain["goldens"] = data + "/chain/goldens";
  for (auto& [name, src] : chain["inputs"].items()) {
    src = "npy:" + data + "/chain/" + src.get<std::string>().substr(4);
  }
  for (auto& step : chain["steps"]) {
    if (step.contains("shard")) step["shard"] = data + "/chain/" + step["shard"].get<std::string>();
  }
  {
    std::ofstream(out("kv.json")) << chain.dump(1);
  }
  const CliRun r = golden("advise " + out("kv.json") + " --baseline-replace _fp16=_fp16 --min-cosine 1 --json " +
                          out("kv_advice.json"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("no culprit search ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("carries chain state"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ranked by the weight diagnostics only"), std::string::npos) << r.output;
  expect_schema_valid(out("kv_advice.json"));
}

TEST_F(GoldenAdviseCli, UsageErrorsAreExitTwo) {
  const CliRun none = golden("advise goldens/sample/chains/chain_int8.json");
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("advise needs --baseline-replace OLD=NEW"), std::string::npos) << none.output;
  const CliRun html = golden("advise goldens/sample/chains/chain_int8.json --baseline-replace _int8=_fp16 --html x.html");
  EXPECT_EQ(html.code, 2) << html.output;
  const CliRun missing = golden("advise goldens/sample/chains/no_such.json --baseline-replace _int8=_fp16");
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("no_such.json"), std::string::npos) << missing.output;
  const CliRun absent = golden("advise goldens/sample/chains/chain_int8.json --baseline-replace _q8=_fp16");
  EXPECT_EQ(absent.code, 2) << absent.output;
  EXPECT_NE(absent.output.find("'_q8' does not occur"), std::string::npos) << absent.output;
}

}  // namespace
}  // namespace sg
