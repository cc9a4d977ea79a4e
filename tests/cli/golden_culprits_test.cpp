// golden-validator culprits: the sample chain's sources on the command line, exit codes, usage.
#include "support/cli_run.h"

#include <gtest/gtest.h>

namespace sg {
namespace {

CliRun culprits(const std::string& args) {
  return run_command(std::string(SG_BINARY_DIR "/validators/golden-validator culprits ") + args);
}

TEST(GoldenCulpritsCli, NamesWhereTheInt8ErrorEntersAndExitsZero) {
  CliRun r = culprits("goldens/sample/shards/L0_moe_p0_int8.mlpackage --baseline-replace _int8=_fp16 "
                      "--inputs-from goldens/sample/chains/chain_int8.json --top 2");
  EXPECT_EQ(r.code, 0) << r.output;  // a diagnosis, not a gate
  EXPECT_NE(r.output.find("source op: #38 linear 'experts_gate'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("source op: #40 linear 'experts_up'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("weights: experts_gate_weight_0_quantized"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 source op(s)"), std::string::npos) << r.output;
  // Its weights are compressions of the baseline's, however coarse: no note asks about them.
  EXPECT_EQ(r.output.find("no closer to the baseline's"), std::string::npos) << r.output;
}

// Another layer's FP16 build as the baseline: the names and shapes agree, so everything aligns,
// and the linears reading the compressed weights come out as sources with cosines near 0. Their
// weights are no closer to the baseline's than zeros (relative error ~1.41), and a note says so
// for each source op, where it used to read as the quantization's error.
TEST(GoldenCulpritsCli, ASourceWhoseWeightIsUnrelatedToTheBaselinesIsNamed) {
  CliRun r = culprits("goldens/sample/shards/L0_attn_lut4.mlpackage --baseline "
                      "goldens/sample/shards/L1_attn_fp16.mlpackage");
  EXPECT_EQ(r.code, 0) << r.output;
  for (const char* proj : {"#13 linear 'q_proj': its weight q_proj_weight_0_palettized",
                           "#19 linear 'k_proj': its weight k_proj_weight_0_palettized",
                           "#25 linear 'v_proj': its weight v_proj_weight_0_palettized"}) {
    EXPECT_NE(r.output.find(std::string(proj) + " is no closer to the baseline's"), std::string::npos)
        << proj << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("(relative error 1.413): is the baseline this shard's FP16 build? (another "
                          "layer or model given as the baseline)"),
            std::string::npos)
      << r.output;
}

// The inputs line says what the run was fed: all random without --input, and by name which
// inputs came from files with it (it used to claim "given .npy inputs" either way).
TEST(GoldenCulpritsCli, SaysWhichInputsWereRandom) {
  const std::string shard = "goldens/sample/shards/L0_moe_p0_int8.mlpackage --baseline-replace _int8=_fp16";
  const CliRun none = culprits(shard);
  EXPECT_EQ(none.code, 0) << none.output;
  EXPECT_NE(none.output.find("inputs: seed 0: every input random"), std::string::npos) << none.output;
  const CliRun given = culprits(shard + " --input hidden=goldens/sample/goldens/embed.npy");
  EXPECT_EQ(given.code, 0) << given.output;
  EXPECT_NE(given.output.find("inputs: seed 0: hidden from --input, the others random"), std::string::npos)
      << given.output;
}

TEST(GoldenCulpritsCli, UsageErrorsAreExitTwo) {
  CliRun none = culprits("goldens/sample/shards/L0_moe_p0_int8.mlpackage");
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("give one of --baseline SHARD and --baseline-replace"), std::string::npos)
      << none.output;
  // A chain's earlier steps need their own baselines: --baseline names one shard only.
  CliRun one = culprits("goldens/sample/shards/L0_moe_p0_int8.mlpackage --baseline "
                        "goldens/sample/shards/L0_moe_p0_fp16.mlpackage --inputs-from "
                        "goldens/sample/chains/chain_int8.json");
  EXPECT_EQ(one.code, 2) << one.output;
  EXPECT_NE(one.output.find("use --baseline-replace"), std::string::npos) << one.output;
  CliRun range = culprits("goldens/sample/shards/L0_moe_p0_int8.mlpackage --baseline-replace "
                          "_int8=_fp16 --min-cosine 2");
  EXPECT_EQ(range.code, 2) << range.output;
  EXPECT_NE(range.output.find("outside [-1, 1]"), std::string::npos) << range.output;
}

// Another model given as the baseline (an attention shard for an MoE pack) is bad input, as in
// `weights`: it aligned 18 ops by type and named three source ops "cosine -", exit 0.
TEST(GoldenCulpritsCli, ABaselineWithOtherOutputsIsExitTwo) {
  CliRun r = culprits("goldens/sample/shards/L0_moe_p0_int8.mlpackage --baseline "
                      "goldens/sample/shards/L0_attn_fp16.mlpackage");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("the baseline goldens/sample/shards/L0_attn_fp16.mlpackage function 'main' "
                          "has the outputs hidden_out, the shard moe_out: not the FP16 build"),
            std::string::npos)
      << r.output;
}

// Another model with the same input and output names (the attention and MoE fixtures both map
// `hidden` to `hidden_out`): none of the candidate's compressed-weight linears has a baseline op
// of its shapes. It used to pair them with the attention's linears by type and name three of
// them source ops, "cosine -", exit 0. The FP16 build of the same shard still pairs all 24.
TEST(GoldenCulpritsCli, ABaselineWithTheSameOutputsButOtherShapesIsExitTwo) {
  const std::string dir = "tests/data/fixtures/llm/";
  CliRun other = culprits(dir + "moe_lut4.mlpackage --baseline " + dir + "attention_fp16.mlpackage");
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("none of the 4 op(s) reading its compressed weights (#13 linear "
                              "'router', #35 linear 'experts_gate', #37 linear 'experts_up', #49 "
                              "linear 'experts_down') has an op of the same type and shapes in the "
                              "baseline " + dir + "attention_fp16.mlpackage: not the FP16 build"),
            std::string::npos)
      << other.output;
  CliRun own = culprits(dir + "moe_lut4.mlpackage --baseline " + dir + "moe_fp16.mlpackage");
  EXPECT_EQ(own.code, 0) << own.output;
  EXPECT_NE(own.output.find("(24 ops aligned, 0 unmatched)"), std::string::npos) << own.output;
}

// probe takes its baseline options from the same argument group (cli::BaselineArgs).
TEST(GoldenCulpritsCli, ProbeChecksItsBaselineOptionsTheSameWay) {
  const std::string probe = std::string(SG_BINARY_DIR "/validators/golden-validator probe ");
  CliRun both = run_command(probe + "goldens/sample/shards/L0_attn_int8.mlpackage --baseline a "
                                    "--baseline-replace _int8=_fp16");
  EXPECT_EQ(both.code, 2) << both.output;
  EXPECT_NE(both.output.find("not both"), std::string::npos) << both.output;
  CliRun absent = run_command(probe + "goldens/sample/shards/L0_attn_int8.mlpackage --baseline-replace _q8=_fp16");
  EXPECT_EQ(absent.code, 2) << absent.output;
  EXPECT_NE(absent.output.find("'_q8' does not occur"), std::string::npos) << absent.output;
}

}  // namespace
}  // namespace sg
