// Precision advice without a chain: the greedy-then-prune search against a known answer, its
// run bound, and the ranking of the sample's INT8 MoE pack (culprit evidence first).
#include "shardgate/advise.h"

#include "shardgate/culprits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace sg {
namespace {

// The gate passes when the set holds every one of `needed`.
AdviceEvaluator needs(std::set<size_t> needed, int64_t* calls) {
  return [needed = std::move(needed), calls](const std::vector<size_t>& set) -> Result<AdviceVerdict> {
    ++*calls;
    AdviceVerdict v;
    v.passes = true;
    for (size_t k : needed) v.passes = v.passes && std::find(set.begin(), set.end(), k) != set.end();
    v.summary = v.passes ? "pass" : "fail";
    return v;
  };
}

TEST(AdviceSearch, GrowsInRankOrderThenPrunesToTheNeededSet) {
  int64_t calls = 0;
  auto s = search_advice(8, 200, 1, needs({1, 4}, &calls));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_TRUE(s->found);
  EXPECT_EQ(s->chosen, (std::vector<size_t>{1, 4}));
  // 5 adds (0..4), then one drop tried per weight of the grown set (0, 1, 2, 3, 4).
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(s->runs, 11);  // the run before the search counts
  ASSERT_EQ(s->trials.size(), 10u);
  EXPECT_EQ(s->trials[4].action, "add");
  EXPECT_TRUE(s->trials[4].passes);
  EXPECT_EQ(s->trials[5].action, "drop");
  EXPECT_TRUE(s->trials[5].kept);    // 0 dropped
  EXPECT_FALSE(s->trials[6].kept);   // 1 needed
  EXPECT_NE(s->stopped.find("pruning dropped 3, 2 left"), std::string::npos) << s->stopped;
}

TEST(AdviceSearch, StopsAtTheRunBound) {
  int64_t calls = 0;
  auto s = search_advice(8, 4, 1, needs({6}, &calls));
  ASSERT_TRUE(s.is_ok());
  EXPECT_FALSE(s->found);
  EXPECT_TRUE(s->chosen.empty());
  EXPECT_EQ(s->runs, 4);
  EXPECT_EQ(calls, 3);
  EXPECT_NE(s->stopped.find("stopped at --max-runs 4 after adding 3 of 8"), std::string::npos) << s->stopped;
  // A bound reached while pruning keeps the passing set found so far.
  calls = 0;
  auto p = search_advice(8, 9, 1, needs({6}, &calls));
  ASSERT_TRUE(p.is_ok());
  EXPECT_TRUE(p->found);
  EXPECT_EQ(p->chosen.size(), 6u);  // 7 added, one drop (0) made before the bound
  EXPECT_NE(p->stopped.find("pruning stopped at --max-runs 9"), std::string::npos) << p->stopped;
}

TEST(AdviceSearch, NoSetIsEnoughWhenNothingPasses) {
  int64_t calls = 0;
  auto s = search_advice(3, 200, 1, needs({7}, &calls));
  ASSERT_TRUE(s.is_ok());
  EXPECT_FALSE(s->found);
  EXPECT_EQ(calls, 3);
  EXPECT_NE(s->stopped.find("every one of the 3 candidates"), std::string::npos) << s->stopped;
}

TEST(AdviceCandidates, CulpritSourceWeightsRankFirstThenTheMeasuredError) {
  const std::string dir = std::string(SG_SOURCE_DIR) + "/goldens/sample/shards/";
  auto cand = Shard::open(dir + "L0_moe_p0_int8.mlpackage");
  auto base = Shard::open(dir + "L0_moe_p0_fp16.mlpackage");
  ASSERT_TRUE(cand.is_ok() && base.is_ok());
  std::vector<AdviceShard> shards = {{"L0.moe.p0", *cand, *base, "main"}};
  std::vector<std::string> notes;
  // Without culprit evidence: the weight diagnostics' measured error alone.
  auto plain = advice_candidates(shards, nullptr, notes);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_EQ(plain->size(), 4u);
  for (size_t i = 0; i + 1 < plain->size(); ++i) {
    EXPECT_EQ((*plain)[i].evidence, "weights");
    EXPECT_GE((*plain)[i].sensitivity, (*plain)[i + 1].sensitivity);
  }
  EXPECT_EQ(plain->back().key, "router.weight");  // 0.008: the best-kept weight
  // A culprit report naming experts_up as the only source puts it first, whatever its error.
  std::vector<CulpritResult> report;
  CulpritResult r;
  r.candidate = (*cand)->path();
  OpComparison up;
  up.op_type = "linear";
  up.output = "experts_up";
  up.cosine = 0.95;
  up.fails = up.source = true;
  up.compressed_weights = {"experts_up_weight_0_quantized"};
  r.ops.push_back(up);
  report.push_back(r);
  auto ranked = advice_candidates(shards, &report, notes);
  ASSERT_TRUE(ranked.is_ok());
  EXPECT_EQ((*ranked)[0].key, "experts_up.weight");
  EXPECT_EQ((*ranked)[0].evidence, "culprit");
  EXPECT_NEAR((*ranked)[0].sensitivity, 0.05, 1e-12);
  EXPECT_EQ((*ranked)[1].evidence, "weights");
  // Added bytes: 16384 int8 codes and one fp16 scale against 16384 fp16 weights.
  EXPECT_EQ((*ranked)[0].fp16_bytes, 32768);
  EXPECT_EQ((*ranked)[0].compressed_bytes, 16386);
  EXPECT_EQ((*ranked)[0].readers, (std::vector<std::string>{"#40 linear 'experts_up'"}));
  EXPECT_TRUE(notes.empty());
}

}  // namespace
}  // namespace sg
