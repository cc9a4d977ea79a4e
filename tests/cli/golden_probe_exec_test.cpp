// golden-validator probe on realistic inputs and exec's checked inputs and sequence mode, end
// to end through the built binary (issue 9, items 2, 5 and 7):
//  - probe of every LUT4 sample shard with --inputs-from the sample's goldens agrees with the
//    chain's verdict (pass), where random unit-norm inputs fail most MoE packs;
//  - rows are seeds, and every report says so;
//  - exec refuses an .npy of another dtype than the input's (exit 2 naming input, file,
//    expected and found) unless --cast;
//  - exec runs the stateful KV-cache fixture as a sequence of calls (a chunked input, or a
//    directory of calls) with the cache carried, against the numpy oracle of each call.
#include "shardgate/io.h"
#include "shardgate/metrics.h"
#include "shardgate/npy.h"
#include "support/cli_run.h"
#include "support/golden_cli_fixture.h"
#include "support/json_schema_lite.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>
#include <set>
#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;

using sg::testing::kSampleDir;
const std::string kProbeGate = " --no-color --gate " SG_SOURCE_DIR "/gates/fidelity.json";
const std::string kKvCase = SG_TEST_DATA_DIR "/fixtures/llm/cases/attention_kv_fp16/";
const std::string kKvShard = SG_TEST_DATA_DIR "/fixtures/llm/attention_kv_fp16.mlpackage";

class ProbeExecCli : public testing::GoldenCliFixture {
 protected:
  ProbeExecCli() : GoldenCliFixture("sg_probe_exec_") {}
};

std::vector<double> doubles(const Tensor& t) { return *to_double_vector(t); }

TEST_F(ProbeExecCli, ProbeOnGoldenInputsAgreesWithTheChainVerdict) {
  // The chain's verdict on the LUT4 sample: pass.
  const CliRun chain =
      run_golden_validator("run " + kSampleDir + "chains/chain_lut4.json" + kProbeGate);
  ASSERT_EQ(chain.code, 0) << chain.output;

  // Every LUT4 shard on what its step receives from the goldens (plus perturbed seeds): pass,
  // like the chain. 16 shards: embed, 4 attention layers, 8 MoE packs, 3 head parts.
  const std::string shards = "'" + kSampleDir + "shards/*_lut4.mlpackage'";
  const CliRun golden_inputs = run_golden_validator(
      "probe " + shards + " --baseline-replace _lut4=_fp16 --inputs-from " + kSampleDir +
      "chains/chain_lut4.json" + kProbeGate + " --json " + out("g.json"));
  EXPECT_EQ(golden_inputs.code, 0) << golden_inputs.output;
  const nlohmann::json g = report("g.json");
  std::set<std::string> shard_labels;
  bool saw_partial_sum = false, saw_hidden = false, saw_logits = false;
  for (const auto& c : g["checks"]) {
    EXPECT_EQ(c["row_axis"], "seed") << c["id"];
    EXPECT_EQ(c["rows"].size(), 5u * 8u) << c["id"];  // 5 seeds x 8 positions
    EXPECT_TRUE(c["rows"][0].contains("seed")) << c["id"];
    shard_labels.insert(c["labels"][0]["value"].get<std::string>());
    saw_partial_sum = saw_partial_sum || c["kind"] == "partial_sum";
    saw_hidden = saw_hidden || c["kind"] == "hidden";
    saw_logits = saw_logits || c["kind"] == "logits";
  }
  EXPECT_EQ(shard_labels.size(), 16u);
  EXPECT_EQ(g["checks"].size(), 16u + 8u);  // + the residual frame of each MoE pack
  // Provenance: every shard executed once with its fingerprint: 16 candidates, 16 baselines
  // (the FP16 attention shards also made the packs' inputs: listed once).
  std::set<std::string> paths;
  for (const auto& sh : g["provenance"]["shards"]) {
    EXPECT_EQ(sh["fingerprint"].get<std::string>().size(), 64u) << sh;
    EXPECT_TRUE(paths.insert(sh["path"].get<std::string>()).second) << "listed twice: " << sh;
  }
  EXPECT_EQ(paths.size(), 32u);
  EXPECT_TRUE(saw_partial_sum && saw_hidden && saw_logits) << golden_inputs.output;
  // Where each input came from is in the notes: a pack gets its layer's FP16 attention output
  // on the golden of the layer before.
  EXPECT_NE(golden_inputs.output.find("chain tensor 'L1.attn_out' computed by the FP16 baseline "
                                      "of step 'L1.attn' from the goldens"),
            std::string::npos)
      << golden_inputs.output;
  EXPECT_NE(golden_inputs.output.find("input 'hidden': golden 'hidden.0' (teacher-forced)"),
            std::string::npos)
      << golden_inputs.output;

  // The FP16 chain locates the shards by their baselines just as well.
  const CliRun via_fp16 = run_golden_validator("probe " + kSampleDir +
                                               "shards/L2_moe_p1_lut4.mlpackage --baseline-replace "
                                               "_lut4=_fp16 --inputs-from " +
                                               kSampleDir + "chains/chain_fp16.json" + kProbeGate);
  EXPECT_EQ(via_fp16.code, 0) << via_fp16.output;

  // Random unit-norm inputs (the old default) fail packs that the chain passes: the false fail
  // this mode exists to avoid. Rows are called seeds there too.
  const CliRun random =
      run_golden_validator("probe " + shards + " --baseline-replace _lut4=_fp16" + kProbeGate);
  EXPECT_EQ(random.code, 1) << random.output;
  EXPECT_NE(random.output.find("@seed"), std::string::npos) << random.output;
  EXPECT_NE(random.output.find("gated on the minimum over seeds"), std::string::npos) << random.output;
  EXPECT_NE(random.output.find("cosine min "), std::string::npos) << random.output;
  EXPECT_NE(random.output.find("failing rows: seed "), std::string::npos) << random.output;
  // Every place names its seed: "seed 3 position 5", never a bare "position 5".
  const std::regex place(R"(([a-z]+ [0-9]+ )?position [0-9]+)");
  int places = 0;
  for (auto it = std::sregex_iterator(random.output.begin(), random.output.end(), place);
       it != std::sregex_iterator(); ++it) {
    ++places;
    EXPECT_EQ((*it)[1].str().rfind("seed ", 0), 0u) << it->str();
  }
  EXPECT_GT(places, 0);
}

TEST_F(ProbeExecCli, ProbeInputsFromUsageErrors) {
  const std::string lut = kSampleDir + "shards/L0_moe_p0_lut4.mlpackage";
  // A shard the chain does not run.
  EXPECT_EQ(
      run_golden_validator(std::string("probe ") +
                           SG_TEST_DATA_DIR "/fixtures/llm/moe_lut4.mlpackage --baseline " +
                           SG_TEST_DATA_DIR "/fixtures/llm/moe_fp16.mlpackage --inputs-from " +
                           kSampleDir + "chains/chain_lut4.json")
          .code,
      2);
  // A pack whose input must be computed by an earlier step, with only --baseline: which FP16
  // shard runs that step is unknown.
  const CliRun no_map = run_golden_validator("probe " + lut + " --baseline " + kSampleDir +
                                             "shards/L0_moe_p0_fp16.mlpackage --inputs-from " +
                                             kSampleDir + "chains/chain_lut4.json");
  EXPECT_EQ(no_map.code, 2) << no_map.output;
  EXPECT_NE(no_map.output.find("step 'L0.attn' must run"), std::string::npos) << no_map.output;
  // A golden dump needs --golden-input; with it, the named golden is the input.
  EXPECT_EQ(run_golden_validator("probe " + lut + " --baseline-replace _lut4=_fp16 --inputs-from " +
                                 kSampleDir + "goldens")
                .code,
            2);
  const CliRun dump =
      run_golden_validator("probe " + kSampleDir +
                           "shards/L1_attn_lut4.mlpackage --baseline-replace "
                           "_lut4=_fp16 --inputs-from " +
                           kSampleDir + "goldens --golden-input hidden=hidden.0" + kProbeGate);
  EXPECT_EQ(dump.code, 0) << dump.output;
  EXPECT_EQ(
      run_golden_validator("probe " + lut + " --baseline-replace _lut4=_fp16 --perturbation -1")
          .code,
      2);
  EXPECT_EQ(
      run_golden_validator("probe " + lut + " --baseline-replace _lut4=_fp16 --input-rms 0").code,
      2);
}

// The conv encoder's output y is channels-first, [1, 64 channels, 1024 time steps]. probe
// guessed axis 1 as the position, so its 64 "positions" were channels, each spanning every time
// step (seed 0: min 0.996512 at channel 48), where one broken time step would hide; the guess
// is now named in a note, and --output-position-axis y=2 gives one row per time step. numpy on
// `exec --seed 0` of both shards: per-time-step cosine min 0.9999125472826571 at step 172.
TEST_F(ProbeExecCli, ProbeRowsFollowTheGivenPositionAxis) {
  const std::string fx = SG_TEST_DATA_DIR "/fixtures/conv_encoder/";
  const std::string cmd = "probe " + fx + "int8.mlpackage --baseline " + fx +
                          "fp16.mlpackage --seeds 1 --stability-rms 0 -q" + kProbeGate;
  const CliRun guessed = run_golden_validator(cmd + " --json " + out("guessed.json"));
  ASSERT_EQ(guessed.code, 0) << guessed.output;
  const nlohmann::json g = report("guessed.json");
  ASSERT_EQ(g["checks"].size(), 1u);
  EXPECT_EQ(g["checks"][0]["rows"].size(), 64u);
  EXPECT_NE(g["notes"].dump().find("output 'y' [1, 64, 1024]: rows along axis 1, guessed as "
                                   "[batch, position, ...]"),
            std::string::npos) << g["notes"].dump();

  const CliRun given =
      run_golden_validator(cmd + " --output-position-axis y=2 --json " + out("given.json"));
  ASSERT_EQ(given.code, 0) << given.output;
  const nlohmann::json t = report("given.json");
  const nlohmann::json& check = t["checks"][0];
  EXPECT_EQ(check["position_axis"], 2);
  ASSERT_EQ(check["rows"].size(), 1024u);
  const nlohmann::json& cos = check["metrics"][0];
  ASSERT_EQ(cos["metric"], "cosine");
  EXPECT_NEAR(cos["value"].get<double>(), 0.9999125472826571, 1e-12);
  EXPECT_EQ(cos["worst_position"], 172);
  EXPECT_EQ(t["notes"].dump().find("guessed"), std::string::npos) << t["notes"].dump();

  const CliRun typo = run_golden_validator(cmd + " --output-position-axis yy=2");
  EXPECT_EQ(typo.code, 2) << typo.output;
  EXPECT_NE(typo.output.find("has no output 'yy' (its outputs: y)"), std::string::npos) << typo.output;
  EXPECT_EQ(run_golden_validator(cmd + " --output-position-axis y=two").code, 2);
  EXPECT_EQ(run_golden_validator(cmd + " --output-position-axis y=3").code, 2);  // outside rank 3
}

// With every input given (--input), the notes said "random inputs: float N(0,1) ..." for them;
// now they name the given inputs and that every seed reads the same.
TEST_F(ProbeExecCli, ProbeNotesNameGivenInputsNotRandomOnes) {
  const std::string num = SG_TEST_DATA_DIR "/exec/numerics/";
  const CliRun r = run_golden_validator("probe " + num + "overflow_recovers.mlpackage --baseline " +
                                        num + "overflow_recovers.mlpackage --input x=" + num +
                                        "x.npy --seeds 2 --stability-rms 0 -q" + kProbeGate +
                                        " --json " + out("g.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string notes = report("g.json")["notes"].dump();
  EXPECT_NE(notes.find("rows are seeds 0..1, per position for [batch, position, ...] outputs "
                       "(input 'x' given with --input, the same for every seed)"),
            std::string::npos) << notes;
  EXPECT_EQ(notes.find("random inputs"), std::string::npos) << notes;
}

// A tensor of `dtype` with the sample attention input's shape, written as .npy.
std::string write_input(const std::string& path, DType dtype) {
  auto x = read_npy(kSampleDir + "goldens/embed.npy");  // fp16 [1, 8, 64]
  EXPECT_TRUE(x.is_ok()) << x.status().to_string();
  auto cast = cast_tensor(*x, dtype);
  EXPECT_TRUE(cast.is_ok()) << cast.status().to_string();
  EXPECT_TRUE(write_npy(path, *cast).is_ok());
  return path;
}

TEST_F(ProbeExecCli, ExecRefusesAnInputOfAnotherDtypeUnlessCast) {
  const std::string shard =
      kSampleDir + "shards/L0_attn_fp16.mlpackage";  // hidden: fp16 [1, 8, 64]
  const std::string f16 = write_input(out("h16.npy"), DType::kF16);
  const std::string f32 = write_input(out("h32.npy"), DType::kF32);
  const std::string f64 = write_input(out("h64.npy"), DType::kF64);
  const std::string i32 = write_input(out("i32.npy"), DType::kI32);

  EXPECT_EQ(run_golden_validator("exec " + shard + " --input hidden=" + f16).code, 0);
  for (const auto& [file, found] : {std::pair{f32, "fp32"}, std::pair{f64, "fp64"}}) {
    const CliRun r = run_golden_validator("exec " + shard + " --input hidden=" + file);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("--input hidden=" + file), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(std::string("input 'hidden' is fp16, the file holds ") + found),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("--cast"), std::string::npos) << r.output;
    // --cast converts and says so; the result equals feeding the fp16 file.
    const CliRun cast = run_golden_validator("exec " + shard + " --cast --input hidden=" + file +
                                             " --out " + out("c"));
    EXPECT_EQ(cast.code, 0) << cast.output;
    EXPECT_NE(cast.output.find(std::string("input 'hidden': ") + found + " from " + file +
                               " converted to fp16 (--cast)"),
              std::string::npos)
        << cast.output;
  }
  // An integer file for a float input is refused even with --cast.
  const CliRun ints = run_golden_validator("exec " + shard + " --cast --input hidden=" + i32);
  EXPECT_EQ(ints.code, 2) << ints.output;
  EXPECT_NE(ints.output.find("the file holds int32"), std::string::npos) << ints.output;
  // probe checks given inputs the same way.
  EXPECT_EQ(
      run_golden_validator("probe " + kSampleDir + "shards/L0_attn_lut4.mlpackage --baseline " +
                           shard + " --input hidden=" + f32)
          .code,
      2);
}

// An --input whose shape the function's type accepts ([?, ?, 8]) but whose size lies outside
// the RangeDims the compiled program declares is refused naming the file and the range.
TEST_F(ProbeExecCli, ExecRefusesAnInputOutsideTheDeclaredRangeDims) {
  const std::string shard = SG_TEST_DATA_DIR "/exec/compiled_style/compiled_style.mlmodelc";
  auto x = Tensor::zeros(DType::kF16, {5, 4, 8});
  ASSERT_TRUE(x.is_ok());
  ASSERT_TRUE(write_npy(out("x5.npy"), *x).is_ok());
  const CliRun r = run_golden_validator("exec " + shard + " --input x=" + out("x5.npy"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("shape error: --input x=" + out("x5.npy")), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dimension 0 is 5, outside the range [1, 4]"), std::string::npos) << r.output;
  EXPECT_EQ(run_golden_validator("exec " + shard +
                                 " --input x=" SG_TEST_DATA_DIR "/exec/compiled_style/long_x.npy")
                .code,
            0);
}

// A seeded input the memory budget refuses is named in the message (it said only "memory
// budget: tensor [1, 8, 64] ..."), whether the draw itself or its cast to fp16 is refused.
TEST_F(ProbeExecCli, ASeededInputOverTheBudgetIsNamed) {
  const std::string shard = kSampleDir + "shards/L0_attn_fp16.mlpackage";
  const CliRun r = run_golden_validator("exec " + shard + " --seed 1 --max-memory 8K");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("function 'main' input 'hidden' (seeded): memory budget"), std::string::npos)
      << r.output;
}

// The KV-cache fixture (two calls of 4 tokens carry k_cache/v_cache) against the numpy oracle
// of each call (cases.json: expected_hidden_out_call{0,1}, fp32 math on the same weights).
void expect_kv_calls(const std::string& out_dir) {
  for (int call = 0; call < 2; ++call) {
    auto got = read_npy(out_dir + "/call_00" + std::to_string(call) + "/hidden_out.npy");
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    auto want = read_npy(kKvCase + "expected_hidden_out_call" + std::to_string(call) + ".npy");
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    ASSERT_EQ(got->shape(), want->shape());
    const std::vector<double> g = doubles(*got), w = doubles(*want);
    // fp16 storage after every op against fp32 math: the fixture's own bound (cases.json
    // max_abs_fp32_vs_fp16ops is ~4e-3 for these layers).
    EXPECT_GE(cosine_similarity(g, w), 0.9999) << "call " << call;
    EXPECT_LE(max_abs_error(g, w), 2e-2) << "call " << call;
  }
  // The caches after each call are written too.
  EXPECT_TRUE(fs::exists(out_dir + "/call_001/states/k_cache.npy"));
}

TEST_F(ProbeExecCli, ExecSequenceCarriesTheKvCacheAcrossCalls) {
  // A chunked 8-token input: two calls of 4, `start` set to each chunk's first position.
  const std::string whole = SG_TEST_DATA_DIR "/fixtures/llm/cases/attention_fp16/input_hidden.npy";
  const CliRun chunked =
      run_golden_validator("exec " + kKvShard + " --input hidden=" + whole +
                           " --chunk hidden:1:4 --offset-input start --out " + out("chunked"));
  ASSERT_EQ(chunked.code, 0) << chunked.output;
  EXPECT_NE(chunked.output.find("call 1 (hidden[4:8] along axis 1) of 2"), std::string::npos)
      << chunked.output;
  expect_kv_calls(out("chunked"));

  // A directory of calls, each with its own inputs.
  for (int call = 0; call < 2; ++call) {
    const std::string d = out("calls/00" + std::to_string(call));
    fs::create_directories(d);
    fs::copy_file(kKvCase + "input_hidden_call" + std::to_string(call) + ".npy", d + "/hidden.npy");
    fs::copy_file(kKvCase + "input_start_call" + std::to_string(call) + ".npy", d + "/start.npy");
  }
  const CliRun dir = run_golden_validator("exec " + kKvShard + " --calls " + out("calls") +
                                          " --out " + out("dir"));
  ASSERT_EQ(dir.code, 0) << dir.output;
  expect_kv_calls(out("dir"));

  // Call 1 on its own starts from an empty cache and misses the first 4 tokens: the oracle
  // needs the carried state.
  const CliRun alone = run_golden_validator("exec " + kKvShard + " --input hidden=" + kKvCase +
                                            "input_hidden_call1.npy --input start=" + kKvCase +
                                            "input_start_call1.npy --out " + out("alone"));
  ASSERT_EQ(alone.code, 0) << alone.output;
  auto got = read_npy(out("alone/hidden_out.npy"));
  auto want = read_npy(kKvCase + "expected_hidden_out_call1.npy");
  ASSERT_TRUE(got.is_ok() && want.is_ok());
  EXPECT_GT(max_abs_error(doubles(*got), doubles(*want)), 0.05);

  // Usage errors: a ragged chunk, an unknown offset input, both modes at once, --offset-input
  // without --chunk.
  EXPECT_EQ(
      run_golden_validator("exec " + kKvShard + " --input hidden=" + whole + " --chunk hidden:1:3")
          .code,
      2);
  EXPECT_EQ(run_golden_validator("exec " + kKvShard + " --input hidden=" + whole +
                                 " --chunk hidden:1:4 --offset-input nope")
                .code,
            2);
  EXPECT_EQ(run_golden_validator("exec " + kKvShard + " --input hidden=" + whole +
                                 " --chunk hidden:1:4 --calls " + out("calls"))
                .code,
            2);
  EXPECT_EQ(run_golden_validator("exec " + kKvShard + " --offset-input start").code, 2);
}

}  // namespace
}  // namespace sg
