// The chain manifest schema (reports/schema/chain.schema.json) accepts the bundled sample chains
// and refuses manifests that break the documented format.
#include "shardgate/io.h"
#include "support/json_schema_lite.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace sg {
namespace {

namespace fs = std::filesystem;

std::string chain_schema() {
  auto s = read_file(SG_SOURCE_DIR "/reports/schema/chain.schema.json");
  EXPECT_TRUE(s.is_ok());
  return s.is_ok() ? *s : std::string();
}

const char* kMinimalChain = R"({
  "schema": "shardgate/chain@1", "name": "c", "goldens": "../g",
  "inputs": {"input_ids": "golden:input_ids"},
  "steps": [
    {"id": "embed", "shard": "e.mlpackage", "inputs": {"input_ids": "input_ids"}, "outputs": {"hidden": "embed"}},
    {"id": "L0.attn", "layer": 0, "shard": "a.mlpackage", "residual_input": "hidden",
     "state": {"k_cache": "L0.k"}, "inputs": {"hidden": "embed"}, "outputs": {"hidden_out": "hidden.0"}},
    {"id": "cat", "combine": "concat", "axis": -1, "inputs": ["hidden.0", "embed"], "output": "both"}
  ],
  "states": {},
  "checkpoints": [{"tensor": "hidden.0", "golden": "hidden.0", "kind": "hidden", "layer": 0}]
})";

TEST(ChainSchema, AcceptsTheDocumentedForm) {
  EXPECT_EQ(testing::json_schema_violations(chain_schema(), kMinimalChain), std::vector<std::string>{});
}

TEST(ChainSchema, RefusesBrokenChains) {
  using Json = nlohmann::json;
  const Json base = Json::parse(kMinimalChain);
  std::vector<Json> broken(5, base);
  broken[0]["schema"] = "shardgate/chain@2";
  broken[1].erase("checkpoints");
  broken[2]["steps"][2]["combine"] = "mean";            // unknown combine
  broken[3]["steps"][1].erase("outputs");               // neither a shard step nor a combine
  broken[4]["checkpoints"][0].erase("golden");
  for (size_t i = 0; i < broken.size(); ++i) {
    EXPECT_FALSE(testing::json_schema_violations(chain_schema(), broken[i].dump()).empty()) << i;
  }
}

TEST(ChainSchema, BundledSampleChainsFollowTheSchema) {
  const fs::path dir = SG_SOURCE_DIR "/goldens/sample/chains";
  ASSERT_TRUE(fs::exists(dir)) << "goldens/sample is missing";
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    auto text = read_file(e.path().string());
    ASSERT_TRUE(text.is_ok());
    EXPECT_EQ(testing::json_schema_violations(chain_schema(), *text), std::vector<std::string>{})
        << e.path();
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace sg
