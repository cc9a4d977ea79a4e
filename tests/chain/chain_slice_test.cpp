// Teacher-forced step groups (teacher_forced_groups, chain.h): the units `run --teacher-forced
// --shard-index/--shard-count` splits. A group must hold every step whose output another step
// reads without teacher forcing replacing it, and every step sharing a chain state key; and
// a slice of the groups must check exactly the checkpoints its steps make.
#include "shardgate/chain.h"

#include "shardgate/golden.h"
#include "shardgate/io.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sg {
namespace {

using sg::testing::kChainDataDir;
using sg::testing::kSampleDir;

std::vector<std::vector<std::string>> steps_of(const std::vector<SliceGroup>& groups) {
  std::vector<std::vector<std::string>> out;
  for (const SliceGroup& g : groups) out.push_back(g.steps);
  return out;
}

// The sample chain: the embedding, each layer (attention, its two MoE packs reading the
// attention output, their sum) and the head (three parts reading hidden.3, their concat).
TEST(TeacherForcedGroups, SampleChainGroupsAreLayers) {
  auto chain = load_chain_manifest(kSampleDir + "chains/chain_int8.json");
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  auto goldens = open_golden_source(chain->goldens);
  ASSERT_TRUE(goldens.is_ok()) << goldens.status().to_string();
  auto groups = teacher_forced_groups(*chain, **goldens);
  ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
  std::vector<std::vector<std::string>> expected = {{"embed"}};
  for (int l = 0; l < 4; ++l) {
    const std::string L = "L" + std::to_string(l);
    expected.push_back({L + ".attn", L + ".moe.p0", L + ".moe.p1", L + ".combine"});
  }
  expected.push_back({"head.p0", "head.p1", "head.p2", "head.concat"});
  EXPECT_EQ(steps_of(*groups), expected);
  for (size_t i = 0; i < groups->size(); ++i) EXPECT_EQ((*groups)[i].index, static_cast<int64_t>(i));
}

// Two calls of one stateful shard share the KV cache: one group even though no tensor passes
// between them; without the shared state key they are two.
TEST(TeacherForcedGroups, AChainStateKeyTiesItsSteps) {
  auto goldens = open_golden_source(kChainDataDir + "goldens");
  ASSERT_TRUE(goldens.is_ok()) << goldens.status().to_string();
  auto manifest = [](bool state) {
    const std::string st = state ? R"(, "state": {"k_cache": "L0.k", "v_cache": "L0.v"})" : "";
    return std::string(R"({"schema": "shardgate/chain@1", "name": "kv", "goldens": "goldens",
      "inputs": {"h.a": "npy:a.npy", "s.a": "npy:s.npy", "h.b": "npy:b.npy", "s.b": "npy:t.npy"},
      "steps": [
        {"id": "call0", "layer": 0, "shard": "kv.mlpackage", "inputs": {"hidden": "h.a", "start": "s.a"},
         "outputs": {"hidden_out": "out.a"})") + st + R"(},
        {"id": "call1", "layer": 0, "shard": "kv.mlpackage", "inputs": {"hidden": "h.b", "start": "s.b"},
         "outputs": {"hidden_out": "out.b"})" + st + R"(}],
      "checkpoints": [{"tensor": "out.b", "golden": "attn_full", "kind": "hidden", "layer": 0}]})";
  };
  for (bool state : {true, false}) {
    auto chain = parse_chain_manifest(manifest(state), kChainDataDir + "kv.json", false);
    ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
    auto groups = teacher_forced_groups(*chain, **goldens);
    ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
    EXPECT_EQ(groups->size(), state ? 1u : 2u) << "state " << state;
  }
}

// Slice 1 of 2 of the sample runs groups 1, 3 and 5 and checks only what they make.
TEST(TeacherForcedGroups, ASliceRunsItsGroupsAndChecksTheirCheckpoints) {
  auto chain = load_chain_manifest(kSampleDir + "chains/chain_lut4.json");
  ASSERT_TRUE(chain.is_ok());
  auto goldens = open_golden_source(chain->goldens);
  ASSERT_TRUE(goldens.is_ok());
  ChainFidelityOptions o;
  o.modes = {ChainMode::kTeacherForced};
  o.slice_index = 1;
  o.slice_count = 2;
  auto run = run_chain_fidelity(*chain, **goldens, o);
  ASSERT_TRUE(run.is_ok()) << run.status().to_string();
  std::vector<std::string> checked;
  for (const CheckResult& c : run->checks) checked.push_back(c.identity.checkpoint);
  EXPECT_EQ(checked, (std::vector<std::string>{"hidden.0", "hidden.2", "logits"}));
  ASSERT_TRUE(run->slice.has_value());
  EXPECT_EQ(run->slice->groups_total, 6);
  ASSERT_EQ(run->slice->groups.size(), 3u);
  EXPECT_EQ(run->slice->groups[2].index, 5);
  EXPECT_EQ(run->shards.size(), 9u);  // L0 and L2: attention + 2 packs each; the head's 3 parts
  // Free-running steps cannot be split.
  o.modes = {ChainMode::kFreeRunning};
  EXPECT_EQ(run_chain_fidelity(*chain, **goldens, o).status().code(), ErrorCode::kUsage);
}

}  // namespace
}  // namespace sg
