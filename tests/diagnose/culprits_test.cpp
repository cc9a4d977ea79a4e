// Culprit op search (runtime/diagnose/culprits.cpp) on the bundled sample: where the INT8
// chain's error enters, and what a correct search must never report.
#include "shardgate/chain.h"
#include "shardgate/culprit_report.h"
#include "shardgate/culprits.h"
#include "shardgate/golden.h"
#include "shardgate/io.h"
#include "shardgate/probe.h"

#include "support/json_schema_lite.h"
#include "support/op_harness.h"
#include "support/temp_dir_test.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>

namespace sg {
namespace {
using sg::testing::source_path;

std::shared_ptr<const Shard> open_shard(const std::string& rel) {
  auto s = Shard::open(source_path(rel));
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return *s;
}

// Shards of a hand-written MIL function `main(x: fp16 [1, 4])` returning `z`, each written as
// `NAME.mlmodelc/model.mil` in the test's directory: two builds that differ in one constant or
// one op stand for a candidate and its baseline.
class CulpritsOnMil : public testing::TempDirTest {
 protected:
  CulpritsOnMil() : TempDirTest("sg_culprits_") {}
  std::shared_ptr<const Shard> shard(const std::string& name, const std::string& body) {
    const std::string dir = out(name + ".mlmodelc");
    std::filesystem::create_directories(dir);
    const std::string text = "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 4]> x) {\n" + body +
                             "    } -> (z);\n}\n";
    EXPECT_TRUE(write_file_atomic(dir + "/model.mil", text).is_ok());
    auto s = Shard::open(dir);
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    return s.is_ok() ? *s : nullptr;
  }
  // The culprit search of the candidate body against the baseline body, x = `x`.
  Result<CulpritResult> search(const std::string& cand, const std::string& base, std::vector<float> x) {
    auto c = shard("cand", cand);
    auto b = shard("base", base);
    if (!c || !b) return make_error(ErrorCode::kInternal, "a test shard did not open");
    CulpritOptions o;
    o.inputs["x"] = testing::f16s({1, 4}, std::move(x));
    return find_culprits(c, b, o);
  }
};

// `tensor<fp16, [1, 4]> NAME = const(...)` with the four values given.
std::string const_row(const std::string& name, const std::string& values) {
  return "        tensor<fp16, [1, 4]> " + name + " = const()[name = string(\"" + name +
         "\"), val = tensor<fp16, [1, 4]>([[" + values + "]])];\n";
}

const OpComparison* op_named(const CulpritResult& r, const std::string& output) {
  for (const OpComparison& o : r.ops) {
    if (o.output == output) return &o;
  }
  return nullptr;
}

// The golden inputs of the MoE pack's step (what probe --inputs-from gives it).
std::map<std::string, Tensor> golden_inputs(const std::string& variant) {
  auto chain = load_chain_manifest(source_path("goldens/sample/chains/chain_" + variant + ".json"));
  EXPECT_TRUE(chain.is_ok()) << chain.status().message();
  auto goldens = open_golden_source(chain->goldens);
  EXPECT_TRUE(goldens.is_ok()) << goldens.status().message();
  auto baseline_of = [&](const std::string& p) -> Result<std::string> {
    std::string b = p;
    b.replace(b.rfind("_" + variant), variant.size() + 1, "_fp16");
    return b;
  };
  auto in = chain_probe_inputs(
      *chain, **goldens, source_path("goldens/sample/shards/L0_moe_p0_" + variant + ".mlpackage"),
      source_path("goldens/sample/shards/L0_moe_p0_fp16.mlpackage"), baseline_of, Precision::kFp16,
      1);
  EXPECT_TRUE(in.is_ok()) << in.status().message();
  return in->inputs;
}

// Inputs for several steps of one chain (probe or culprits over every pack of a layer, run
// --culprits over every step upstream of a failure) share a cache: the layer's FP16 attention
// runs once, not once per pack, the inputs are the same bits, and each pack's provenance still
// names the attention baseline its input came from.
TEST(ChainProbeInputs, TheStepsOfOneChainShareTheBaselinesRunForTheirInputs) {
  auto chain = load_chain_manifest(source_path("goldens/sample/chains/chain_int8.json"));
  ASSERT_TRUE(chain.is_ok()) << chain.status().message();
  auto goldens = open_golden_source(chain->goldens);
  ASSERT_TRUE(goldens.is_ok()) << goldens.status().message();
  const std::function<Result<std::string>(const std::string&)> baseline_of =
      [](const std::string& p) -> Result<std::string> {
    std::string b = p;
    b.replace(b.rfind("_int8"), 5, "_fp16");
    return b;
  };
  ChainProbeCache cache;
  std::vector<std::map<std::string, Tensor>> cached;
  for (const char* pack : {"p0", "p1"}) {
    const std::string cand =
        source_path(std::string("goldens/sample/shards/L0_moe_") + pack + "_int8.mlpackage");
    auto base = baseline_of(cand);
    ASSERT_TRUE(base.is_ok());
    auto in = chain_probe_inputs(*chain, **goldens, cand, *base, baseline_of, Precision::kFp16, 1, &cache);
    ASSERT_TRUE(in.is_ok()) << in.status().message();
    EXPECT_EQ(cache.baseline_runs, 1) << pack << ": the attention baseline ran again";
    ASSERT_EQ(in->executed.size(), 1u) << pack;
    EXPECT_EQ(in->executed[0].id, "L0.attn");
    auto fresh = chain_probe_inputs(*chain, **goldens, cand, *base, baseline_of, Precision::kFp16, 1);
    ASSERT_TRUE(fresh.is_ok());
    ASSERT_EQ(fresh->inputs.size(), in->inputs.size());
    for (const auto& [name, t] : fresh->inputs) {
      ASSERT_EQ(t.nbytes(), in->inputs.at(name).nbytes());
      EXPECT_EQ(std::memcmp(t.raw(), in->inputs.at(name).raw(), t.nbytes()), 0) << pack << " " << name;
    }
    EXPECT_EQ(fresh->notes, in->notes);
  }
}

// The case: on the INT8 chain the error enters at the two linears that read the
// per-tensor INT8 expert banks (whose scales weight_diagnostics flags), with clean inputs.
TEST(Culprits, Int8MoePackSourcesAreTheOutlierScaledExpertBanks) {
  CulpritOptions o;
  o.inputs = golden_inputs("int8");
  auto r = find_culprits(open_shard("goldens/sample/shards/L0_moe_p0_int8.mlpackage"),
                         open_shard("goldens/sample/shards/L0_moe_p0_fp16.mlpackage"), o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->unmatched.empty());
  EXPECT_EQ(r->ops.size(), 24u);
  std::vector<std::string> sources;
  for (const OpComparison* s : r->sources()) {
    sources.push_back(s->output);
    EXPECT_NEAR(s->input_cosine, 1.0, 1e-12) << s->output << ": a source op's inputs pass";
    EXPECT_EQ(s->compressed_weights.size(), 1u) << s->output;
  }
  EXPECT_EQ(sources, (std::vector<std::string>{"experts_gate", "experts_up"}));
  // Downstream ops fail too but are not sources: their inputs already fail.
  int downstream = 0;
  for (const OpComparison& op : r->ops) {
    if (op.fails && !op.source) {
      ++downstream;
      EXPECT_LT(op.input_cosine, o.min_cosine) << op.output;
    }
  }
  EXPECT_GE(downstream, 3);
  // The largest added error is where a source op is.
  ASSERT_FALSE(r->top_added(1).empty());
  EXPECT_EQ(r->top_added(1)[0]->output, "experts_gate");
}

// A shard against itself: every aligned op identical, nothing fails, nothing is a source.
TEST(Culprits, ABaselineAgainstItselfHasNoCulprit) {
  CulpritOptions o;
  o.inputs = golden_inputs("int8");
  auto base = open_shard("goldens/sample/shards/L0_moe_p0_fp16.mlpackage");
  auto r = find_culprits(base, base, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->ops.size(), 24u);
  for (const OpComparison& op : r->ops) {
    EXPECT_NEAR(op.cosine, 1.0, 1e-12) << op.output;
    if (op.dtype == "fp16" || op.dtype == "fp32") {
      EXPECT_EQ(op.rel_l2, 0.0) << op.output << ": identical outputs";
    }
    EXPECT_FALSE(op.fails) << op.output;
    EXPECT_EQ(op.matched_by, "name");
  }
  EXPECT_TRUE(r->sources().empty());
  EXPECT_TRUE(r->top_added(5).empty());
}

// An op whose fp16 output overflows to Inf in the candidate and not in the baseline is where the
// error enters. Its cosine over the Infs is NaN, which used to be read as "both outputs all zeros:
// identical" (cosine 1, passing): the overflowing op and everything after it passed, and the
// search reported no source at all.
TEST_F(CulpritsOnMil, AnOutputThatOverflowsOnlyInTheCandidateFailsAndIsTheSource) {
  const std::string rest =
      "        tensor<fp16, [1, 4]> y = mul(x = x, y = s)[name = string(\"y\")];\n"
      "        tensor<fp16, [1, 4]> z = add(x = y, y = x)[name = string(\"z\")];\n";
  auto cand = shard("cand", const_row("s", "1000.0, 1000.0, 1000.0, 1000.0") + rest);
  auto base = shard("base", const_row("s", "1.5, 1.5, 1.5, 1.5") + rest);
  ASSERT_NE(cand, nullptr);
  ASSERT_NE(base, nullptr);
  CulpritOptions o;
  o.inputs["x"] = testing::f16s({1, 4}, {100, 200, 300, 400});  // 100 * 1000 > 65504
  auto r = find_culprits(cand, base, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const OpComparison* y = op_named(*r, "y");
  const OpComparison* z = op_named(*r, "z");
  ASSERT_NE(y, nullptr);
  ASSERT_NE(z, nullptr);
  EXPECT_TRUE(std::isnan(y->cosine)) << y->cosine;
  EXPECT_TRUE(y->fails);
  EXPECT_TRUE(y->source) << "the overflowing op reads only the function input";
  EXPECT_TRUE(z->fails);
  EXPECT_FALSE(z->source) << "z reads the overflowed y";
  EXPECT_TRUE(std::isnan(z->input_cosine)) << "its input is non-finite, not at cosine " << z->input_cosine;
  ASSERT_EQ(r->sources().size(), 1u);
  EXPECT_EQ(r->sources()[0]->output, "y");

  // The same Inf at the same places in both builds agrees: nothing fails.
  auto same = find_culprits(cand, cand, o);
  ASSERT_TRUE(same.is_ok()) << same.status().message();
  for (const OpComparison& op : same->ops) {
    EXPECT_EQ(op.cosine, 1.0) << op.output;
    EXPECT_FALSE(op.fails) << op.output;
  }
}

// A router's topk whose indices flip while its values stay close: the topk is where the error
// enters. Only an op's first output (the values) used to be compared, so the indices passed as
// a function input and the gather reading them was named the source "with every input at 1".
TEST_F(CulpritsOnMil, EveryOutputOfAnOpIsComparedSoAFlippedTopkIndexIsTheSource) {
  const std::string rest =
      "        tensor<fp16, [1, 4]> y = add(x = x, y = s)[name = string(\"y\")];\n"
      "        tensor<fp16, [1, 1]> v, tensor<int32, [1, 1]> i = topk(x = y, k = int32(1), axis = "
      "int32(-1))[name = string(\"t\")];\n" +
      const_row("tb", "5.0, -5.0, 1.0, 1.0") +
      "        tensor<fp16, [1, 1]> z = gather_along_axis(x = tb, indices = i, axis = int32(-1))"
      "[name = string(\"z\")];\n";
  auto r = search(const_row("s", "0.0, 0.02, 0.0, 0.0") + rest, const_row("s", "0.0, 0.0, 0.0, 0.0") + rest,
                  {1.0f, 0.99f, 0.1f, -2.0f});  // argmax 0, candidate's 1
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->ops.size(), 3u);
  const OpComparison& topk = r->ops[1];
  EXPECT_EQ(topk.op_type, "topk");
  EXPECT_EQ(topk.output, "i") << "the row shows the output that differs";
  EXPECT_EQ(topk.dtype, "int32");
  EXPECT_TRUE(topk.fails);
  EXPECT_TRUE(topk.source) << "its input y is at cosine " << topk.input_cosine;
  const OpComparison* z = op_named(*r, "z");
  ASSERT_NE(z, nullptr);
  EXPECT_TRUE(z->fails);
  EXPECT_FALSE(z->source) << "z reads the flipped indices";
  EXPECT_EQ(z->input_cosine, 0.0);
  ASSERT_EQ(r->sources().size(), 1u);
  EXPECT_EQ(r->sources()[0]->op_type, "topk");
}

// An op the baseline has no counterpart of (an inserted clip) makes a value the next op reads.
// That value used to be taken for a function input, identical in both, so the mul reading it was
// named the source "with every input at 1" although it adds no error of its own: its input is
// compared with what the baseline's mul reads in its place.
TEST_F(CulpritsOnMil, AnInputMadeByAnUnmatchedOpIsComparedNotAssumedIdentical) {
  const std::string tail = "        tensor<fp16, [1, 4]> z = add(x = y, y = x)[name = string(\"z\")];\n";
  auto r = search(
      "        tensor<fp16, [1, 4]> c = clip(x = x, alpha = fp16(-1.0), beta = fp16(1.0))[name = "
      "string(\"c\")];\n"
      "        tensor<fp16, [1, 4]> y = mul(x = c, y = c)[name = string(\"y\")];\n" + tail,
      "        tensor<fp16, [1, 4]> y = mul(x = x, y = x)[name = string(\"y\")];\n" + tail,
      {0.5f, -3.0f, 4.0f, 0.2f});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->unmatched.size(), 1u);
  EXPECT_NE(r->unmatched[0].find("clip 'c'"), std::string::npos) << r->unmatched[0];
  const OpComparison* y = op_named(*r, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_TRUE(y->fails);
  // cos([0.5, -1, 1, 0.2], [0.5, -3, 4, 0.2]) = 7.29 / (1.5133 * 5.0289) = 0.958 < 0.97
  EXPECT_NEAR(y->input_cosine, 0.958, 0.001);
  EXPECT_FALSE(y->source);
  EXPECT_TRUE(r->sources().empty());
  // The table does not claim that nothing failed.
  CulpritReport report;
  report.shards.push_back(*r);
  const std::string table = culprit_report_table(report, 3, false);
  EXPECT_NE(table.find("source ops: none (2 op output(s) fail, each reading an input that fails or "
                       "has no baseline value"),
            std::string::npos)
      << table;
}

// The candidate inserts an op of a type the baseline has (an identity scale `mul` before `p`).
// Aligned as "the k-th mul" with the name-paired ops counted in, it took the baseline's `p`,
// already paired by name with the candidate's `p`: the identity e = x was compared with p = x*x
// and named the source of an error no output has. Now it is unmatched and nothing fails.
TEST_F(CulpritsOnMil, AnInsertedOpIsNotAlignedWithABaselineOpPairedByName) {
  const std::string tail = "        tensor<fp16, [1, 4]> z = add(x = p, y = x)[name = string(\"z\")];\n";
  auto r = search(const_row("one", "1.0, 1.0, 1.0, 1.0") +
                      "        tensor<fp16, [1, 4]> e = mul(x = x, y = one)[name = string(\"e\")];\n"
                      "        tensor<fp16, [1, 4]> p = mul(x = e, y = x)[name = string(\"p\")];\n" + tail,
                  "        tensor<fp16, [1, 4]> p = mul(x = x, y = x)[name = string(\"p\")];\n" + tail,
                  {0.5f, -3.0f, 4.0f, 0.2f});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->unmatched.size(), 1u);
  EXPECT_NE(r->unmatched[0].find("mul 'e'"), std::string::npos) << r->unmatched[0];
  ASSERT_EQ(r->ops.size(), 2u);
  for (const OpComparison& op : r->ops) {
    EXPECT_EQ(op.matched_by, "name") << op.output;
    EXPECT_FALSE(op.fails) << op.output << " cosine " << op.cosine;
  }
  EXPECT_TRUE(r->sources().empty());
}

// Two ops of one type with other shapes are not one op of two builds: the candidate scales by a
// row [1, 4], the baseline by a scalar [1, 1]. Aligned as "the first mul" they were compared as
// if the baseline's were the FP16 version of the candidate's; now the mul is unmatched (its
// reader's input is compared with what the baseline's add reads in its place).
TEST_F(CulpritsOnMil, AnOpOfOtherShapesIsNotAlignedByStructure) {
  const std::string tail = "        tensor<fp16, [1, 4]> z = add(x = y, y = x)[name = string(\"z\")];\n";
  auto r = search(const_row("s", "2.0, 2.0, 2.0, 2.0") +
                      "        tensor<fp16, [1, 4]> y = mul(x = x, y = s)[name = string(\"y\")];\n" + tail,
                  "        tensor<fp16, [1, 1]> s1 = const()[name = string(\"s1\"), val = "
                  "tensor<fp16, [1, 1]>([[2.0]])];\n"
                  "        tensor<fp16, [1, 4]> y1 = mul(x = x, y = s1)[name = string(\"y1\")];\n"
                  "        tensor<fp16, [1, 4]> z = add(x = y1, y = x)[name = string(\"z\")];\n",
                  {0.5f, -3.0f, 4.0f, 0.2f});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->unmatched.size(), 1u);
  EXPECT_NE(r->unmatched[0].find("mul 'y'"), std::string::npos) << r->unmatched[0];
  ASSERT_EQ(r->ops.size(), 1u);
  EXPECT_EQ(r->ops[0].output, "z");
  EXPECT_EQ(r->ops[0].matched_by, "name");
}

// A compressed weight's reader with no baseline op of its shapes is named in a note (its error
// is not judged); the search still runs while another reader is paired. The candidate's `v`
// adds an int8 weight row [1, 4], the baseline's adds a scalar [1, 1].
TEST_F(CulpritsOnMil, ACompressedWeightReaderWithoutCounterpartIsNamedInANote) {
  auto int8_row = [](const std::string& name) {
    return "        tensor<fp16, [1, 4]> " + name + " = constexpr_blockwise_shift_scale(data = "
           "tensor<int8, [1, 4]>([[2, 4, 6, 8]]), scale = tensor<fp16, [1, 1]>([[0x1p-1]]))"
           "[name = string(\"" + name + "\")];\n";
  };
  const std::string tail = "        tensor<fp16, [1, 4]> z = add(x = y, y = v)[name = string(\"z\")];\n";
  auto r = search(int8_row("w") + int8_row("u") +
                      "        tensor<fp16, [1, 4]> y = mul(x = x, y = w)[name = string(\"y\")];\n"
                      "        tensor<fp16, [1, 4]> v = add(x = x, y = u)[name = string(\"v\")];\n" + tail,
                  const_row("w", "1.0, 2.0, 3.0, 4.0") +
                      "        tensor<fp16, [1, 1]> u = const()[name = string(\"u\"), val = "
                      "tensor<fp16, [1, 1]>([[1.0]])];\n"
                      "        tensor<fp16, [1, 4]> y = mul(x = x, y = w)[name = string(\"y\")];\n"
                      "        tensor<fp16, [1, 4]> v = add(x = x, y = u)[name = string(\"v\")];\n" + tail,
                  {0.5f, -3.0f, 4.0f, 0.2f});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const OpComparison* y = op_named(*r, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->matched_by, "name");
  EXPECT_EQ(y->compressed_weights, std::vector<std::string>{"w"});
  EXPECT_EQ(op_named(*r, "v"), nullptr);
  ASSERT_EQ(r->notes.size(), 1u) << fmt::format("{}", fmt::join(r->notes, "\n"));
  EXPECT_NE(r->notes[0].find("#3 add 'v' reads the compressed weight(s) u and has no baseline op of "
                             "its type and shapes: its error is not judged"),
            std::string::npos)
      << r->notes[0];
}

TEST(Culprits, ReportFollowsItsSchemaAndNamesTheSources) {
  CulpritOptions o;
  o.inputs = golden_inputs("int8");
  auto r = find_culprits(open_shard("goldens/sample/shards/L0_moe_p0_int8.mlpackage"),
                         open_shard("goldens/sample/shards/L0_moe_p0_fp16.mlpackage"), o);
  ASSERT_TRUE(r.is_ok());
  CulpritReport report;
  report.tool_version = "test";
  report.inputs = "goldens";
  report.shards.push_back(*r);
  auto schema = read_file(source_path("reports/schema/culprits.schema.json"));
  ASSERT_TRUE(schema.is_ok());
  const std::string json = culprit_report_json(report);
  EXPECT_EQ(testing::json_schema_violations(*schema, json), std::vector<std::string>{});
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["summary"]["source_ops"], 2);
  EXPECT_EQ(j["shards"][0]["sources"], (nlohmann::json{"experts_gate", "experts_up"}));
  EXPECT_NE(culprit_report_table(report, 3, false).find("source op: #38 linear 'experts_gate'"),
            std::string::npos);
  EXPECT_NE(culprit_report_junit(report).find("(source op: every input passes)"), std::string::npos);
  EXPECT_NE(culprit_report_markdown(report, 3).find("experts\\_gate"), std::string::npos);
}

}  // namespace
}  // namespace sg
