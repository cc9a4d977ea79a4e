// RunOptions::weight_overrides, the hook `golden-validator advise` measures with: a compile-time
// value given in the options replaces the shard's own, and the compressed form behind it is
// neither decoded nor streamed. Overriding every compressed weight of the sample's INT8 MoE
// pack with its FP16 baseline's weights must reproduce the FP16 shard's outputs bit for bit;
// an executor that ignored an override (or decoded it anyway) would not.
#include "shardgate/executor.h"
#include "shardgate/probe.h"
#include "shardgate/shard.h"
#include "shardgate/weight_diagnostics.h"
#include "support/tensor_values.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

namespace sg {
namespace {
using sg::testing::bit_equal;

const std::string kShards = std::string(SG_SOURCE_DIR) + "/goldens/sample/shards/";

struct Pair {
  std::shared_ptr<const Shard> int8, fp16;
  std::map<std::string, Tensor> inputs;
  // Every compressed weight of the INT8 shard -> its baseline's fp16 weight.
  std::map<std::string, Tensor> baseline_weights;
};

Pair open_pair(const std::string& name) {
  Pair p;
  auto q = Shard::open(kShards + name + "_int8.mlpackage");
  auto f = Shard::open(kShards + name + "_fp16.mlpackage");
  EXPECT_TRUE(q.is_ok() && f.is_ok());
  p.int8 = *q;
  p.fp16 = *f;
  auto in = make_seeded_inputs(*p.fp16, "main", 3);
  EXPECT_TRUE(in.is_ok()) << in.status().to_string();
  p.inputs = in->inputs;
  auto diag = diagnose_weights(*p.int8, p.fp16.get());
  EXPECT_TRUE(diag.is_ok()) << diag.status().to_string();
  const Function& base_fn = *p.fp16->program().function("main");
  for (const WeightDiagnostic& w : diag->weights) {
    EXPECT_TRUE(w.has_baseline) << w.name;
    auto t = materialize_weight(*p.fp16, base_fn, w.baseline_name);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    p.baseline_weights[w.name] = *t;
  }
  return p;
}

Result<RunResult> run(const std::shared_ptr<const Shard>& shard, const std::map<std::string, Tensor>& in,
                      const std::map<std::string, Tensor>* overrides) {
  RunOptions o;
  o.weight_overrides = overrides;
  return Executor(shard).run("main", in, o);
}

TEST(WeightOverride, EveryInt8WeightReplacedGivesTheFp16ShardsOutputs) {
  for (const char* name : {"L0_moe_p0", "L2_attn", "head_p1"}) {
    Pair p = open_pair(name);
    ASSERT_FALSE(p.baseline_weights.empty()) << name;
    auto fp16 = run(p.fp16, p.inputs, nullptr);
    auto int8 = run(p.int8, p.inputs, nullptr);
    auto replaced = run(p.int8, p.inputs, &p.baseline_weights);
    ASSERT_TRUE(fp16.is_ok() && int8.is_ok()) << name;
    ASSERT_TRUE(replaced.is_ok()) << replaced.status().to_string();
    EXPECT_EQ(replaced->stats.weights_overridden, static_cast<int64_t>(p.baseline_weights.size())) << name;
    // The compressed forms were not touched: every read they served before is gone.
    EXPECT_EQ(replaced->stats.weights_streamed, 0) << name;
    EXPECT_LT(replaced->stats.weights_decoded, int8->stats.weights_decoded + int8->stats.weights_streamed)
        << name;
    for (const auto& [out, t] : fp16->outputs) {
      EXPECT_TRUE(bit_equal(replaced->outputs.at(out), t)) << name << " " << out;
      EXPECT_FALSE(bit_equal(int8->outputs.at(out), t)) << name << " " << out << ": int8 must differ";
    }
  }
}

TEST(WeightOverride, OneWeightReplacedIsNotReadFromItsCompressedForm) {
  Pair p = open_pair("L0_moe_p0");
  const std::string gate = "experts_gate_weight_0_quantized";
  ASSERT_TRUE(p.baseline_weights.count(gate));
  const std::map<std::string, Tensor> one = {{gate, p.baseline_weights.at(gate)}};
  auto plain = run(p.int8, p.inputs, nullptr);
  auto replaced = run(p.int8, p.inputs, &one);
  ASSERT_TRUE(plain.is_ok() && replaced.is_ok()) << replaced.status().to_string();
  EXPECT_EQ(replaced->stats.weights_overridden, 1);
  EXPECT_EQ(replaced->stats.weights_streamed + 1, plain->stats.weights_streamed);
  // A captured override is the given tensor, not the decoded int8 weight.
  RunOptions o;
  o.weight_overrides = &one;
  o.capture = {gate, "experts_gate"};
  auto captured = Executor(p.int8).run("main", p.inputs, o);
  ASSERT_TRUE(captured.is_ok()) << captured.status().to_string();
  EXPECT_TRUE(bit_equal(captured->captured.at(gate), one.at(gate)));
  o.weight_overrides = nullptr;
  auto decoded = Executor(p.int8).run("main", p.inputs, o);
  ASSERT_TRUE(decoded.is_ok());
  EXPECT_FALSE(bit_equal(decoded->captured.at("experts_gate"), captured->captured.at("experts_gate")));
}

TEST(WeightOverride, AWrongShapeOrAnUnknownNameIsRefused) {
  Pair p = open_pair("L0_moe_p0");
  auto wrong = Tensor::zeros(DType::kF16, {3, 4});
  ASSERT_TRUE(wrong.is_ok());
  const std::map<std::string, Tensor> bad_shape = {{"experts_gate_weight_0_quantized", *wrong}};
  auto r = run(p.int8, p.inputs, &bad_shape);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kShape);
  EXPECT_NE(r.status().message().find("override of experts_gate_weight_0_quantized"), std::string::npos)
      << r.status().to_string();
  const std::map<std::string, Tensor> unknown = {{"no_such_weight", *wrong}};
  auto u = run(p.int8, p.inputs, &unknown);
  ASSERT_FALSE(u.is_ok());
  EXPECT_EQ(u.status().code(), ErrorCode::kUsage);
  EXPECT_NE(u.status().message().find("no compile-time value 'no_such_weight'"), std::string::npos);
}

}  // namespace
}  // namespace sg
