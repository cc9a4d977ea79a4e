// Executor behaviour on programs built in memory: precision modes, lazy weight decoding and
// release, captures, non-finite detection, state carried across calls, and the errors a user
// sees for unknown ops and wrong inputs. Expected values are exact by construction (fp16
// representable inputs, results checked by hand in the comments).
#include "../../runtime/core/parallel.h"
#include "shardgate/executor.h"
#include "support/op_harness.h"
#include "support/tensor_values.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sg {
namespace {
using sg::testing::doubles;
using testing::f16s;  // fp16 literal from floats (support/op_harness.h)

ValueType tensor_type(DType dtype, Shape shape) {
  ValueType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

ValueType state_type(DType dtype, Shape shape) {
  ValueType t;
  t.kind = ValueType::Kind::kState;
  t.members.push_back(tensor_type(dtype, std::move(shape)));
  return t;
}

Value literal(Tensor t) {
  Value v;
  v.type = tensor_type(t.dtype(), t.shape());
  v.tensor = std::move(t);
  return v;
}

// Builds one function "main" op by op; statement indices and lines follow insertion order.
class ProgramBuilder {
 public:
  ProgramBuilder() {
    fn_.name = "main";
    fn_.opset = "ios18";
  }

  ProgramBuilder& input(const std::string& name, ValueType type) {
    fn_.inputs.push_back({name, std::move(type)});
    return *this;
  }

  // refs: parameter -> value name; lits: parameter -> inline literal.
  ProgramBuilder& op(const std::string& type, std::vector<std::pair<std::string, std::string>> refs,
                     std::vector<std::pair<std::string, Tensor>> lits,
                     std::vector<NamedType> outputs) {
    Op op;
    op.type = type;
    for (auto& [key, name] : refs) {
      Argument a;
      Binding b;
      b.name = name;
      a.bindings.push_back(b);
      op.inputs.emplace_back(key, std::move(a));
    }
    for (auto& [key, t] : lits) {
      Argument a;
      Binding b;
      b.literal = literal(t);
      a.bindings.push_back(std::move(b));
      op.inputs.emplace_back(key, std::move(a));
    }
    std::sort(op.inputs.begin(), op.inputs.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    op.outputs = std::move(outputs);
    add(std::move(op));
    return *this;
  }

  // const op holding `t` inline as its `val` attribute.
  ProgramBuilder& constant(const std::string& name, Tensor t) {
    Op op;
    op.type = "const";
    op.outputs.push_back({name, tensor_type(t.dtype(), t.shape())});
    op.attributes.emplace_back("name", literal(Tensor::from_strings({}, {name})));
    op.attributes.emplace_back("val", literal(std::move(t)));
    add(std::move(op));
    return *this;
  }

  ProgramBuilder& output(const std::string& name) {
    fn_.block.outputs.push_back(name);
    return *this;
  }

  std::shared_ptr<Shard> shard() {
    Program p;
    p.version = "1.3";
    p.functions.push_back(fn_);
    return Shard::from_program(std::move(p), ModelInfo{}, "");
  }

 private:
  void add(Op op) {
    op.index = static_cast<int64_t>(fn_.block.ops.size());
    op.line = op.index + 3;  // as if the function header took lines 1-2
    fn_.block.ops.push_back(std::move(op));
  }
  Function fn_;
};

NamedType out(const std::string& name, DType dtype, Shape shape) {
  return {name, tensor_type(dtype, std::move(shape))};
}

// x + 1 - 2048 with x = 2048: fp16 storage after the add rounds 2049 to 2048 (ties to even),
// the fp32 reference keeps 2049.
std::shared_ptr<Shard> rounding_program() {
  return ProgramBuilder()
      .input("x", tensor_type(DType::kF16, {2}))
      .op("add", {{"x", "x"}}, {{"y", f16s({}, {1.0f})}}, {out("a", DType::kF16, {2})})
      .op("sub", {{"x", "a"}}, {{"y", f16s({}, {2048.0f})}}, {out("b", DType::kF16, {2})})
      .output("b")
      .shard();
}

TEST(Executor, Fp16ModeRoundsAfterEveryOpFp32ModeDoesNot) {
  Executor ex(rounding_program());
  const std::map<std::string, Tensor> in = {{"x", f16s({2}, {2048.0f, 1.0f})}};
  RunOptions fp16;
  auto r16 = ex.run("main", in, fp16);
  ASSERT_TRUE(r16.is_ok()) << r16.status().to_string();
  EXPECT_EQ(r16->outputs.at("b").dtype(), DType::kF16);
  EXPECT_EQ(doubles(r16->outputs.at("b")), (std::vector<double>{0.0, -2046.0}));

  RunOptions fp32;
  fp32.precision = Precision::kFp32;
  auto r32 = ex.run("main", in, fp32);
  ASSERT_TRUE(r32.is_ok()) << r32.status().to_string();
  EXPECT_EQ(r32->outputs.at("b").dtype(), DType::kF32);
  EXPECT_EQ(doubles(r32->outputs.at("b")), (std::vector<double>{1.0, -2046.0}));
  EXPECT_EQ(r32->stats.ops_run, 2);
}

TEST(Executor, Fp32InputsAreAcceptedForFp16Parameters) {
  Executor ex(rounding_program());
  // 2048.5 is not representable in fp16: the input conversion rounds it to 2048.
  auto r = ex.run("main", {{"x", Tensor::from_f32({2}, std::vector<float>{2048.5f, 3.0f})}}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(doubles(r->outputs.at("b")), (std::vector<double>{0.0, -2044.0}));
}

// 300 * 300 = 90000 overflows fp16 (max 65504) to inf at flat index 1 of the mul output.
std::shared_ptr<Shard> overflow_program() {
  return ProgramBuilder()
      .input("x", tensor_type(DType::kF16, {3}))
      .constant("scale", f16s({3}, {1.0f, 300.0f, 2.0f}))
      .op("mul", {{"x", "x"}, {"y", "scale"}}, {}, {out("prod", DType::kF16, {3})})
      .op("relu", {{"x", "prod"}}, {}, {out("act", DType::kF16, {3})})
      .output("act")
      .shard();
}

TEST(Executor, FirstNonFiniteNamesOpOutputAndIndex) {
  Executor ex(overflow_program());
  const std::map<std::string, Tensor> in = {{"x", f16s({3}, {1.0f, 300.0f, -4.0f})}};
  auto r = ex.run("main", in, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->first_nonfinite.has_value());
  const NonFinite& nf = *r->first_nonfinite;
  EXPECT_EQ(nf.function, "main");
  EXPECT_EQ(nf.op_index, 1);  // statement 0 is the const
  EXPECT_EQ(nf.op_type, "mul");
  EXPECT_EQ(nf.output, "prod");
  EXPECT_EQ(nf.flat_index, 1);
  EXPECT_TRUE(std::isinf(nf.value) && nf.value > 0);
  EXPECT_EQ(r->stats.ops_run, 2);

  RunOptions fp32;
  fp32.precision = Precision::kFp32;
  auto r32 = ex.run("main", in, fp32);
  ASSERT_TRUE(r32.is_ok()) << r32.status().to_string();
  EXPECT_FALSE(r32->first_nonfinite.has_value());
  EXPECT_EQ(doubles(r32->outputs.at("act")), (std::vector<double>{1.0, 90000.0, 0.0}));
}

// The non-finite scan goes 256 elements at a time: the first inf past several blocks (and a
// second one after it) is still found at its exact index, as is one at a block's last element.
TEST(Executor, FirstNonFiniteIndexInALongOutput) {
  const int64_t n = 1000;
  auto shard = ProgramBuilder()
                   .input("x", tensor_type(DType::kF16, {n}))
                   .op("mul", {{"x", "x"}, {"y", "x"}}, {}, {out("sq", DType::kF16, {n})})
                   .output("sq")
                   .shard();
  Executor ex(shard);
  std::vector<float> x(static_cast<size_t>(n), 1.0f);
  x[700] = 300.0f;  // 90000: inf in fp16
  x[900] = 400.0f;
  auto r = ex.run("main", {{"x", f16s({n}, x)}}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->first_nonfinite.has_value());
  EXPECT_EQ(r->first_nonfinite->flat_index, 700);
  x[700] = 1.0f;
  x[900] = 1.0f;
  x[255] = 1e4f;  // the last element of the first block
  auto r2 = ex.run("main", {{"x", f16s({n}, x)}}, {});
  ASSERT_TRUE(r2.is_ok()) << r2.status().to_string();
  ASSERT_TRUE(r2->first_nonfinite.has_value());
  EXPECT_EQ(r2->first_nonfinite->flat_index, 255);
}

TEST(Executor, StopOnNonFiniteEndsTheRunAtThatOp) {
  Executor ex(overflow_program());
  RunOptions opt;
  opt.stop_on_nonfinite = true;
  auto r = ex.run("main", {{"x", f16s({3}, {1.0f, 300.0f, -4.0f})}}, opt);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->first_nonfinite.has_value());
  EXPECT_EQ(r->stats.ops_run, 1);
  EXPECT_TRUE(r->outputs.empty());
}

// Three 4096-float weights used one after the other. Decoded lazily and released after use,
// at most one weight, the running activation and the new output are alive at once.
constexpr int64_t kN = 4096;
constexpr uint64_t kBytes = kN * sizeof(float);

std::shared_ptr<Shard> weights_program(bool share_first) {
  auto w = [](float v) { return Tensor::from_f32({kN}, std::vector<float>(kN, v)); };
  ProgramBuilder b;
  b.input("x", tensor_type(DType::kF32, {kN}))
      .constant("w1", w(1.0f))
      .constant("w2", w(2.0f))
      .constant("w3", w(3.0f))
      .op("add", {{"x", "x"}, {"y", "w1"}}, {}, {out("y1", DType::kF32, {kN})})
      .op("add", {{"x", "y1"}, {"y", "w2"}}, {}, {out("y2", DType::kF32, {kN})})
      .op("add", {{"x", "y2"}, {"y", share_first ? "w1" : "w3"}}, {}, {out("y3", DType::kF32, {kN})})
      .output("y3");
  return b.shard();
}

TEST(Executor, WeightsAreDecodedLazilyAndReleasedAfterLastUse) {
  Executor ex(weights_program(false));
  const std::map<std::string, Tensor> in = {
      {"x", Tensor::from_f32({kN}, std::vector<float>(kN, 0.5f))}};
  auto r = ex.run("main", in, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->stats.weights_decoded, 3);
  EXPECT_EQ(r->stats.ops_run, 3);
  EXPECT_EQ(doubles(r->outputs.at("y3"))[kN - 1], 6.5);
  // Peak: previous activation + one weight + new output. Decoding all three weights up front
  // (or keeping them) would need at least 4 buffers.
  EXPECT_GE(r->stats.peak_value_bytes, 2 * kBytes);
  EXPECT_LE(r->stats.peak_value_bytes, 3 * kBytes);
}

TEST(Executor, WeightWithTwoUsesIsDecodedOnceAndKeptUntilItsLastUse) {
  Executor ex(weights_program(true));
  const std::map<std::string, Tensor> in = {
      {"x", Tensor::from_f32({kN}, std::vector<float>(kN, 0.5f))}};
  auto r = ex.run("main", in, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->stats.weights_decoded, 2);  // w1 once, w2; w3 is never read
  EXPECT_EQ(doubles(r->outputs.at("y3"))[0], 4.5);
  // w1 lives from op 1 to op 3: activation + w1 + w2 + output at op 2.
  EXPECT_LE(r->stats.peak_value_bytes, 4 * kBytes);
  EXPECT_GE(r->stats.peak_value_bytes, 3 * kBytes);
}

// ---------------------------------------------------------------- how each weight is read
// One decision per weight per run (runtime/exec/weight_plan.h), visible in
// RunStats::weight_reads, and no weight decoded twice: decoded_elements counts every element a
// decoder wrote, whole or block by block, so a weight decoded per call or per tile shows more
// than its size.

Tensor int8_codes(const Shape& shape) {
  Tensor t = Tensor::zeros(DType::kI8, shape).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<int8_t>()[i] = static_cast<int8_t>((i * 37) % 255 - 127);
  return t;
}

// x [rows..] through `readers` ops reading one int8 per-tensor weight (scale 0.5: exact in fp32).
std::shared_ptr<Shard> int8_weight_program(const std::string& kind, const Shape& x_shape,
                                           const Shape& w_shape, const Shape& y_shape) {
  ProgramBuilder b;
  b.input("x", tensor_type(DType::kF32, x_shape))
      .op("constexpr_blockwise_shift_scale", {},
          {{"data", int8_codes(w_shape)},
           {"scale", Tensor::from_f32(Shape(w_shape.size(), 1), std::vector<float>{0.5f})}},
          {out("w", DType::kF32, w_shape)});
  if (kind == "conv") {
    b.op("conv", {{"x", "x"}, {"weight", "w"}}, {}, {out("y", DType::kF32, y_shape)}).output("y");
  } else if (kind == "two_linears") {
    b.op("linear", {{"x", "x"}, {"weight", "w"}}, {}, {out("a", DType::kF32, y_shape)})
        .op("linear", {{"x", "x"}, {"weight", "w"}}, {}, {out("c", DType::kF32, y_shape)})
        .op("add", {{"x", "a"}, {"y", "c"}}, {}, {out("y", DType::kF32, y_shape)})
        .output("y");
  } else {
    b.op("linear", {{"x", "x"}, {"weight", "w"}}, {}, {out("y", DType::kF32, y_shape)}).output("y");
  }
  return b.shard();
}

const WeightReadStat* read_of(const RunResult& r, const std::string& value) {
  for (const WeightReadStat& w : r.stats.weight_reads) {
    if (w.value == value) return &w;
  }
  return nullptr;
}

Tensor ramp(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
  return Tensor::from_f32(shape, v);
}

TEST(Executor, CompressedConvWeightIsDecodedOncePerRunNotPerTile) {
  // 3 batch items x 2 threads: the conv multiplies the weight once per batch item (and per
  // output chunk); a stream would be decoded each time.
  auto shard = int8_weight_program("conv", {3, 4, 64}, {8, 4, 3}, {3, 8, 62});
  for (int threads : {1, 2}) {
    RunOptions o;
    o.threads = threads;
    auto r = Executor(shard).run("main", {{"x", ramp({3, 4, 64})}}, o);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const WeightReadStat* w = read_of(*r, "w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->format, "int8_per_tensor");
    EXPECT_EQ(w->read, WeightRead::kDecodeOnce);
    EXPECT_EQ(w->reason, "read by conv");
    EXPECT_EQ(w->elements, 96);
    EXPECT_EQ(w->decodes, 1);
    EXPECT_EQ(w->streams, 0);
    EXPECT_EQ(w->decoded_elements, 96) << "the conv weight was decoded more than once";
    // The same result as with streaming off.
    o.stream_weights = false;
    auto dense = Executor(shard).run("main", {{"x", ramp({3, 4, 64})}}, o);
    ASSERT_TRUE(dense.is_ok());
    EXPECT_EQ(doubles(r->outputs.at("y")), doubles(dense->outputs.at("y")));
  }
}

// A sequence of calls on one Executor (exec --calls, a probe's seeds): a weight decoded whole is
// decoded by the first call only; later calls take the same bits. Not across Executors, not
// with reuse off, and never with weight overrides (they may replace what it was decoded from).
TEST(Executor, AWeightDecodedWholeIsDecodedOncePerSequenceNotPerCall) {
  auto shard = int8_weight_program("conv", {3, 4, 64}, {8, 4, 3}, {3, 8, 62});
  const std::map<std::string, Tensor> in = {{"x", ramp({3, 4, 64})}};
  Executor exec(shard);
  auto first = exec.run("main", in, {});
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(read_of(*first, "w")->decodes, 1);
  EXPECT_EQ(read_of(*first, "w")->reused, 0);
  for (int call = 1; call < 4; ++call) {
    auto r = exec.run("main", in, {});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const WeightReadStat* w = read_of(*r, "w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->decodes, 0) << "call " << call << " decoded the weight again";
    EXPECT_EQ(w->decoded_elements, 0);
    EXPECT_EQ(w->reused, 1);
    EXPECT_EQ(r->stats.weights_reused, 1);
    EXPECT_EQ(r->stats.reused_weight_bytes, 96u * 4u);  // the fp32 weight
    EXPECT_EQ(doubles(r->outputs.at("y")), doubles(first->outputs.at("y")));
  }
  // Another precision is another key: decoded once more, then reused.
  RunOptions fp32;
  fp32.precision = Precision::kFp32;
  EXPECT_EQ(read_of(*exec.run("main", in, fp32), "w")->decodes, 1);
  EXPECT_EQ(read_of(*exec.run("main", in, fp32), "w")->reused, 1);
  // Off: every call decodes.
  RunOptions off;
  off.reuse_decoded_weights = false;
  EXPECT_EQ(read_of(*exec.run("main", in, off), "w")->decodes, 1);
  // With overrides nothing is reused, even for a weight the overrides do not name.
  const std::map<std::string, Tensor> none_named;
  RunOptions overridden;
  overridden.weight_overrides = &none_named;
  EXPECT_EQ(read_of(*exec.run("main", in, overridden), "w")->decodes, 1);
  // A fresh Executor starts empty.
  EXPECT_EQ(read_of(*Executor(shard).run("main", in, {}), "w")->decodes, 1);
}

TEST(Executor, CompressedWeightWithTwoReadersIsDecodedOnce) {
  auto shard = int8_weight_program("two_linears", {2, 8}, {4, 8}, {2, 4});
  auto r = Executor(shard).run("main", {{"x", ramp({2, 8})}}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const WeightReadStat* w = read_of(*r, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->read, WeightRead::kDecodeOnce);
  EXPECT_EQ(w->reason, "2 reads");
  EXPECT_EQ(w->decodes, 1);
  EXPECT_EQ(w->streams, 0);
  EXPECT_EQ(w->decoded_elements, 32) << "the shared weight was decoded once per reader";
}

TEST(Executor, CompressedWeightReadOnceByLinearIsStreamed) {
  auto shard = int8_weight_program("linear", {2, 8}, {4, 8}, {2, 4});
  auto r = Executor(shard).run("main", {{"x", ramp({2, 8})}}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const WeightReadStat* w = read_of(*r, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->read, WeightRead::kStream);
  EXPECT_EQ(w->reason, "read once by linear");
  EXPECT_EQ(w->decodes, 0);
  EXPECT_EQ(w->streams, 1);
  EXPECT_EQ(w->decoded_elements, 32);
  EXPECT_EQ(r->stats.weights_streamed, 1);
}

TEST(Executor, StreamedEmbeddingDecodesARepeatedRowOnce) {
  // gather streams its table and decodes only the rows it looks up; a repeated index (a
  // repeated token) is copied from its first decode, not decoded again.
  ProgramBuilder b;
  auto shard = b.input("x", tensor_type(DType::kF32, {1}))
                   .op("constexpr_blockwise_shift_scale", {},
                       {{"data", int8_codes({6, 8})},
                        {"scale", Tensor::from_f32({1, 1}, std::vector<float>{0.5f})}},
                       {out("w", DType::kF32, {6, 8})})
                   .op("gather", {{"x", "w"}},
                       {{"indices", Tensor::from_i32({4}, std::vector<int32_t>{1, 1, 4, 1})}},
                       {out("y", DType::kF32, {4, 8})})
                   .output("y")
                   .shard();
  auto r = Executor(shard).run("main", {{"x", Tensor::from_f32({1}, std::vector<float>{0})}}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const WeightReadStat* w = read_of(*r, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->read, WeightRead::kStream);
  EXPECT_EQ(w->decoded_elements, 16) << "rows 1 and 4, each decoded once";
  const std::vector<double> y = doubles(r->outputs.at("y"));
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(y[static_cast<size_t>(8 + c)], y[static_cast<size_t>(c)]);
    EXPECT_EQ(y[static_cast<size_t>(24 + c)], y[static_cast<size_t>(c)]);
    EXPECT_EQ(y[static_cast<size_t>(c)], 0.5 * (((8 + c) * 37) % 255 - 127));
    EXPECT_EQ(y[static_cast<size_t>(16 + c)], 0.5 * (((32 + c) * 37) % 255 - 127));
  }
}

TEST(Executor, ConstexprChainIsFollowed) {
  // iOS18: constexpr_cast reads the output of a const op.
  auto shard = ProgramBuilder()
                   .input("x", tensor_type(DType::kF32, {2}))
                   .constant("w16", f16s({2}, {0.5f, -1.5f}))
                   .op("constexpr_cast", {{"source_val", "w16"}},
                       {{"output_dtype", Tensor::from_strings({}, {"fp32"})}},
                       {out("w32", DType::kF32, {2})})
                   .op("add", {{"x", "x"}, {"y", "w32"}}, {}, {out("y", DType::kF32, {2})})
                   .output("y")
                   .shard();
  Executor ex(shard);
  auto r = ex.run("main", {{"x", Tensor::from_f32({2}, std::vector<float>{1.0f, 1.0f})}}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->stats.weights_decoded, 2);
  EXPECT_EQ(r->stats.ops_run, 1);
  EXPECT_EQ(doubles(r->outputs.at("y")), (std::vector<double>{1.5, -0.5}));
}

TEST(Executor, CaptureKeepsNamedValues) {
  Executor ex(weights_program(false));
  RunOptions opt;
  opt.capture = {"y1", "w2", "x"};
  auto r = ex.run("main", {{"x", Tensor::from_f32({kN}, std::vector<float>(kN, 0.5f))}}, opt);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->captured.size(), 3u);
  EXPECT_EQ(doubles(r->captured.at("y1"))[7], 1.5);
  EXPECT_EQ(doubles(r->captured.at("w2"))[7], 2.0);
  EXPECT_EQ(doubles(r->captured.at("x"))[7], 0.5);
  EXPECT_FALSE(r->captured.count("y2"));

  RunOptions all;
  all.capture_all = true;
  auto ra = ex.run("main", {{"x", Tensor::from_f32({kN}, std::vector<float>(kN, 0.5f))}}, all);
  ASSERT_TRUE(ra.is_ok()) << ra.status().to_string();
  EXPECT_EQ(ra->captured.size(), 3u);  // y1, y2, y3: every compute op output
  EXPECT_TRUE(ra->captured.count("y2"));
}

TEST(Executor, UnknownCaptureNameIsAUsageErrorWithNearMatches) {
  Executor ex(weights_program(false));
  RunOptions opt;
  opt.capture = {"y_2"};
  auto r = ex.run("main", {{"x", Tensor::from_f32({kN}, std::vector<float>(kN, 0.5f))}}, opt);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUsage);
  EXPECT_NE(r.status().message().find("'y_2'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("did you mean 'y2'"), std::string::npos)
      << r.status().message();
}

// cache += x each call: read_state -> add -> write_state -> read_state.
std::shared_ptr<Shard> state_program() {
  return ProgramBuilder()
      .input("cache", state_type(DType::kF16, {4}))
      .input("x", tensor_type(DType::kF16, {4}))
      .op("read_state", {{"input", "cache"}}, {}, {out("old", DType::kF16, {4})})
      .op("add", {{"x", "old"}, {"y", "x"}}, {}, {out("sum", DType::kF16, {4})})
      .op("write_state", {{"input", "cache"}, {"data", "sum"}}, {}, {})
      .op("read_state", {{"input", "cache"}}, {}, {out("now", DType::kF16, {4})})
      .output("now")
      .shard();
}

TEST(Executor, StateIsZeroAtFirstAndCarriedAcrossCalls) {
  Executor ex(state_program());
  StateStore states;
  const std::map<std::string, Tensor> in = {{"x", f16s({4}, {1.0f, 2.0f, 3.0f, 4.0f})}};
  auto r1 = ex.run("main", in, {}, &states);
  ASSERT_TRUE(r1.is_ok()) << r1.status().to_string();
  EXPECT_EQ(doubles(r1->outputs.at("now")), (std::vector<double>{1, 2, 3, 4}));
  auto r2 = ex.run("main", in, {}, &states);
  ASSERT_TRUE(r2.is_ok()) << r2.status().to_string();
  EXPECT_EQ(doubles(r2->outputs.at("now")), (std::vector<double>{2, 4, 6, 8}));
  ASSERT_TRUE(states.values.count("cache"));
  EXPECT_EQ(doubles(states.values.at("cache")), (std::vector<double>{2, 4, 6, 8}));

  // Without a store each run starts from zeros.
  auto r3 = ex.run("main", in, {});
  ASSERT_TRUE(r3.is_ok()) << r3.status().to_string();
  EXPECT_EQ(doubles(r3->outputs.at("now")), (std::vector<double>{1, 2, 3, 4}));
}

TEST(Executor, UnknownOpIsUnsupportedNamingOpFunctionAndStatement) {
  auto shard = ProgramBuilder()
                   .input("x", tensor_type(DType::kF16, {2}))
                   .op("relu", {{"x", "x"}}, {}, {out("a", DType::kF16, {2})})
                   .op("frobnicate", {{"x", "a"}}, {}, {out("b", DType::kF16, {2})})
                   .output("b")
                   .shard();
  Executor ex(shard);
  Status st = ex.validate("main");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  for (const char* part : {"'frobnicate'", "function 'main'", "statement #1", "model.mil:4"}) {
    EXPECT_NE(st.message().find(part), std::string::npos) << part << " in " << st.message();
  }
  auto r = ex.run("main", {{"x", f16s({2}, {1, 2})}}, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);

  EXPECT_EQ(ex.validate("other").code(), ErrorCode::kUsage);
}

TEST(Executor, InputErrorsNameTheInput) {
  Executor ex(rounding_program());
  auto shape = ex.run("main", {{"x", f16s({3}, {1, 2, 3})}}, {});
  ASSERT_FALSE(shape.is_ok());
  EXPECT_EQ(shape.status().code(), ErrorCode::kShape);
  EXPECT_NE(shape.status().message().find("input 'x' has shape [3]"), std::string::npos)
      << shape.status().message();

  auto missing = ex.run("main", {}, {});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kUsage);
  EXPECT_NE(missing.status().message().find("missing input 'x'"), std::string::npos);

  auto extra = ex.run("main", {{"x", f16s({2}, {1, 2})}, {"xx", f16s({2}, {1, 2})}}, {});
  ASSERT_FALSE(extra.is_ok());
  EXPECT_EQ(extra.status().code(), ErrorCode::kUsage);
  EXPECT_NE(extra.status().message().find("no input 'xx'"), std::string::npos);

  auto dtype = ex.run("main", {{"x", Tensor::from_strings({2}, {"a", "b"})}}, {});
  ASSERT_FALSE(dtype.is_ok());
  EXPECT_EQ(dtype.status().code(), ErrorCode::kShape);
}

TEST(Executor, OutputShapeDisagreeingWithTheProgramIsAnOpLocatedError) {
  auto shard = ProgramBuilder()
                   .input("x", tensor_type(DType::kF16, {2}))
                   .op("relu", {{"x", "x"}}, {}, {out("a", DType::kF16, {3})})
                   .output("a")
                   .shard();
  auto r = Executor(shard).run("main", {{"x", f16s({2}, {1, 2})}}, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kShape);
  EXPECT_NE(r.status().message().find("op #0 'relu'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("output a has shape [2]"), std::string::npos)
      << r.status().message();
}

// Four ways a program can be wrong, four error categories: a caller (or a report) can tell a
// missing parameter from a dangling reference, an op we do not run and a shape disagreement.
TEST(Executor, ErrorCategoriesSeparateMissingParameterInvalidProgramUnsupportedAndShape) {
  const auto x = tensor_type(DType::kF16, {2});
  const std::map<std::string, Tensor> in = {{"x", f16s({2}, {1, 2})}};

  auto missing = ProgramBuilder().input("x", x)
                     .op("add", {{"x", "x"}}, {}, {out("a", DType::kF16, {2})})
                     .output("a").shard();
  auto r1 = Executor(missing).run("main", in, {});
  ASSERT_FALSE(r1.is_ok());
  EXPECT_EQ(r1.status().code(), ErrorCode::kMissingParameter) << r1.status().to_string();
  EXPECT_NE(r1.status().message().find("missing parameter 'y'"), std::string::npos);

  auto dangling = ProgramBuilder().input("x", x)
                      .op("relu", {{"x", "nowhere"}}, {}, {out("a", DType::kF16, {2})})
                      .output("a").shard();
  Status v = Executor(dangling).validate("main");
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.code(), ErrorCode::kInvalidProgram) << v.to_string();
  EXPECT_NE(v.message().find("'nowhere', which is not defined before it"), std::string::npos)
      << v.message();

  auto unknown = ProgramBuilder().input("x", x)
                     .op("frobnicate", {{"x", "x"}}, {}, {out("a", DType::kF16, {2})})
                     .output("a").shard();
  EXPECT_EQ(Executor(unknown).validate("main").code(), ErrorCode::kUnsupported);

  auto shape = ProgramBuilder().input("x", x)
                   .op("add", {{"x", "x"}}, {{"y", f16s({3}, {1, 2, 3})}}, {out("a", DType::kF16, {2})})
                   .output("a").shard();
  auto r4 = Executor(shape).run("main", in, {});
  ASSERT_FALSE(r4.is_ok());
  EXPECT_EQ(r4.status().code(), ErrorCode::kShape) << r4.status().to_string();

  // All four are the user's input: exit code 2.
  for (ErrorCode c : {ErrorCode::kMissingParameter, ErrorCode::kInvalidProgram,
                      ErrorCode::kUnsupported, ErrorCode::kShape}) {
    EXPECT_EQ(exit_code(c), kExitBadInput) << error_code_name(c);
  }
}

TEST(Executor, KernelErrorsCarryTheOpIdentity) {
  auto shard = ProgramBuilder()
                   .input("x", tensor_type(DType::kF16, {2, 3}))
                   .op("reshape", {{"x", "x"}}, {{"shape", Tensor::from_i32({1}, std::vector<int32_t>{5})}},
                       {out("a", DType::kF16, {5})})
                   .output("a")
                   .shard();
  auto r = Executor(shard).run("main", {{"x", f16s({2, 3}, {1, 2, 3, 4, 5, 6})}}, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kShape);
  EXPECT_NE(r.status().message().find("<in-memory program>:3: function 'main', op #0 'reshape' -> a:"),
            std::string::npos)
      << r.status().message();
}

TEST(Executor, ResultsDoNotDependOnThreads) {
  Executor ex(weights_program(false));
  const std::map<std::string, Tensor> in = {
      {"x", Tensor::from_f32({kN}, std::vector<float>(kN, 0.25f))}};
  RunOptions one, four;
  four.threads = 4;
  auto a = ex.run("main", in, one);
  auto b = ex.run("main", in, four);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const Tensor& ta = a->outputs.at("y3");
  const Tensor& tb = b->outputs.at("y3");
  ASSERT_EQ(ta.nbytes(), tb.nbytes());
  EXPECT_EQ(std::memcmp(ta.raw(), tb.raw(), ta.nbytes()), 0);
}

// The executor hands each kernel the run's thread count (RunOptions::threads): a softmax over 64
// rows of 1024 splits its rows with 2 threads and does not with 1.
TEST(Executor, KernelsGetTheRunsThreadCount) {
  auto shard = ProgramBuilder()
                   .input("x", tensor_type(DType::kF32, {64, 1024}))
                   .op("softmax", {{"x", "x"}}, {{"axis", Tensor::scalar_i32(-1)}},
                       {out("y", DType::kF32, {64, 1024})})
                   .output("y")
                   .shard();
  Executor ex(shard);
  const std::map<std::string, Tensor> in = {
      {"x", Tensor::from_f32({64, 1024}, std::vector<float>(64 * 1024, 0.5f))}};
  RunOptions one, two;
  two.threads = 2;
  const int64_t before = parallel_split_calls();
  ASSERT_TRUE(ex.run("main", in, one).is_ok());
  EXPECT_EQ(parallel_split_calls(), before);
  ASSERT_TRUE(ex.run("main", in, two).is_ok());
  EXPECT_GT(parallel_split_calls(), before) << "softmax ran single-threaded with 2 threads";
}

}  // namespace
}  // namespace sg
