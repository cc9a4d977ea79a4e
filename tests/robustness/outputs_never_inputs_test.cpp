// No output of a run is ever written over one of its inputs (README "Hostile input", Outputs;
// runtime/include/shardgate/run_inputs.h): for every command family, a report or --out file
// that is the same file as something the run read (by another spelling, a symbolic link, a
// hard link) or lies inside a shard it read is exit 2, "usage error: ... is an input of this
// run" naming both, and the input is left byte for byte as it was.
#include "shardgate/io.h"
#include "support/cli_run.h"
#include "support/temp_dir_test.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

using sg::testing::kAneValidator;
using sg::testing::kGoldenValidator;

std::string bytes_or_unreadable(const fs::path& p) {
  auto r = sg::read_file(p.string());
  return r.is_ok() ? *r : std::string("<unreadable>");
}

class OutputsNeverInputs : public sg::testing::TempDirTest {
 protected:
  OutputsNeverInputs() : TempDirTest("sg_outputs_inputs_") {}
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kAneValidator) && fs::exists(kGoldenValidator))
        << "build the validators first";
    TempDirTest::SetUp();
    fs::copy(fs::path(SG_SOURCE_DIR) / "goldens/sample", dir_ / "sample",
             fs::copy_options::recursive);
    fs::copy(fs::path(SG_TEST_DATA_DIR) / "exec/compiled_style", dir_ / "cs",
             fs::copy_options::recursive);
  }

  // Runs `args` (from the test directory) and expects the refusal: exit 2, the category, the
  // output named with "is an input of this run", and `input` unchanged.
  void expect_refused(const std::string& tool, const std::string& args, const fs::path& input,
                      const std::string& named_output) {
    const std::string before = bytes_or_unreadable(input);
    const sg::CliRun r =
        sg::run_command("cd " + dir_.string() + " && timeout -s KILL 60 " + tool + " " + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("usage error: "), std::string::npos) << r.output;
    const std::string refusal = named_output + ": is an input of this run";
    const size_t at = r.output.find(refusal);
    EXPECT_NE(at, std::string::npos) << r.output;
    // Said once: the error report's write used to refuse the same target a second time.
    EXPECT_EQ(r.output.find("is an input of this run", at + refusal.size()), std::string::npos)
        << r.output;
    EXPECT_EQ(bytes_or_unreadable(input), before) << input << " was changed by: " << args;
  }
  fs::path p(const std::string& rel) const { return dir_ / rel; }
};

const std::string kChain = "sample/chains/chain_lut4.json";
const std::string kRelShard = "sample/shards/L0_attn_lut4.mlpackage";

TEST_F(OutputsNeverInputs, RunReportOverTheChainManifestAnySpelling) {
  expect_refused(kGoldenValidator, "run " + kChain + " -q --json " + kChain, p(kChain),
                 "--json " + kChain);
  expect_refused(kGoldenValidator,
                 "run " + kChain + " -q --html sample/shards/../chains/chain_lut4.json", p(kChain),
                 "--html sample/shards/../chains/chain_lut4.json");
  fs::create_symlink(p(kChain), p("link.json"));
  expect_refused(kGoldenValidator, "run " + kChain + " -q --markdown link.json", p(kChain),
                 "--markdown link.json");
  fs::create_hard_link(p(kChain), p("hard.json"));
  expect_refused(kGoldenValidator, "run " + kChain + " -q --junit hard.json", p(kChain),
                 "--junit hard.json");
}

TEST_F(OutputsNeverInputs, RunReportOverGateGoldenOrShardFile) {
  fs::copy(fs::path(SG_SOURCE_DIR) / "gates/fidelity.json", p("fid.json"));
  expect_refused(kGoldenValidator, "run " + kChain + " -q --gate fid.json --json fid.json",
                 p("fid.json"), "--json fid.json");
  expect_refused(kGoldenValidator, "run " + kChain + " -q --json sample/goldens/manifest.json",
                 p("sample/goldens/manifest.json"), "--json sample/goldens/manifest.json");
  const std::string manifest = "sample/shards/L0_attn_lut4.mlpackage/Manifest.json";
  expect_refused(kGoldenValidator, "run " + kChain + " -q --json " + manifest, p(manifest),
                 "--json " + manifest);
}

TEST_F(OutputsNeverInputs, RegateDiffMergeReportOverTheReportTheyRead) {
  const sg::CliRun made = sg::run_command("cd " + dir_.string() + " && " + kGoldenValidator +
                                          " run " + kChain + " -q --json rep.json");
  ASSERT_TRUE(made.code == 0 || made.code == 1) << made.output;
  fs::copy(p("rep.json"), p("rep2.json"));
  expect_refused(kGoldenValidator, "regate rep.json --json rep.json", p("rep.json"),
                 "--json rep.json");
  fs::copy(fs::path(SG_SOURCE_DIR) / "gates/regression.json", p("reg.json"));
  expect_refused(kGoldenValidator, "diff rep.json rep2.json --gate reg.json --json rep2.json",
                 p("rep2.json"), "--json rep2.json");
  expect_refused(kGoldenValidator, "merge rep.json rep2.json --json ./rep.json", p("rep.json"),
                 "--json ./rep.json");
}

TEST_F(OutputsNeverInputs, AneValidatorReportIntoTheShard) {
  const std::string manifest = kRelShard + "/Manifest.json";
  expect_refused(kAneValidator, kRelShard + " -q --json " + manifest, p(manifest),
                 "--json " + manifest);
  // A new file inside the shard is refused too: the shard would no longer be what was judged.
  expect_refused(kAneValidator, kRelShard + " -q --junit " + kRelShard + "/r.xml", p(manifest),
                 "--junit " + kRelShard + "/r.xml");
  EXPECT_FALSE(fs::exists(p(kRelShard + "/r.xml")));
}

TEST_F(OutputsNeverInputs, WeightsReportOverTheShard) {
  const std::string manifest = kRelShard + "/Manifest.json";
  expect_refused(kGoldenValidator, "weights " + kRelShard + " -q --json " + manifest, p(manifest),
                 "--json " + manifest);
}

// The other report-writing commands: compare (a golden dump's manifest), culprits and probe
// (a baseline shard, the candidate's pair), advise (the chain manifest).
TEST_F(OutputsNeverInputs, CompareCulpritsProbeAdvise) {
  expect_refused(kGoldenValidator,
                 "compare --candidate sample/goldens --reference sample/goldens -q --json "
                 "sample/goldens/manifest.json",
                 p("sample/goldens/manifest.json"), "--json sample/goldens/manifest.json");
  const std::string base = "sample/shards/L0_moe_p0_fp16.mlpackage/Manifest.json";
  expect_refused(kGoldenValidator,
                 "culprits sample/shards/L0_moe_p0_int8.mlpackage --baseline-replace _int8=_fp16 "
                 "-q --json " +
                     base,
                 p(base), "--json " + base);
  expect_refused(kGoldenValidator,
                 "probe sample/shards/L0_moe_p0_int8.mlpackage --baseline-replace _int8=_fp16 -q "
                 "--markdown " +
                     base,
                 p(base), "--markdown " + base);
  expect_refused(kGoldenValidator,
                 "advise sample/chains/chain_int8.json --baseline-replace _int8=_fp16 -q --json "
                 "sample/chains/chain_int8.json",
                 p("sample/chains/chain_int8.json"), "--json sample/chains/chain_int8.json");
}

// exec --out DIR writes one .npy per output (and its inputs under DIR/inputs/); an --input
// tensor at one of those paths is refused before the shard runs.
TEST_F(OutputsNeverInputs, ExecOutputOverAnInputTensor) {
  fs::create_directories(p("ex"));
  fs::copy(p("cs/default_shape_x.npy"), p("ex/y.npy"));
  expect_refused(kGoldenValidator, "exec cs/compiled_style.mlmodelc --input x=ex/y.npy --out ex",
                 p("ex/y.npy"), "ex/y.npy");
  // exec also copies its inputs to DIR/inputs/: an input read from there is refused too.
  fs::create_directories(p("ex2/inputs"));
  fs::copy(p("cs/default_shape_x.npy"), p("ex2/inputs/x.npy"));
  expect_refused(kGoldenValidator,
                 "exec cs/compiled_style.mlmodelc --input x=ex2/inputs/x.npy --out ex2",
                 p("ex2/inputs/x.npy"), "ex2/inputs/x.npy");
  // The same command with another --out directory writes y.npy there.
  const sg::CliRun ok = sg::run_command("cd " + dir_.string() + " && " + kGoldenValidator +
                                        " exec cs/compiled_style.mlmodelc --input x=ex/y.npy "
                                        "--out out");
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_TRUE(fs::exists(p("out/y.npy")));
}

// The same before any call runs in the other layouts of --out: call_NNN/ per call of a
// sequence (--chunk, --calls) and subnormals_keep/ + subnormals_flush/ for --subnormals both.
TEST_F(OutputsNeverInputs, ExecOutputOverAnInputTensorInEveryLayoutBeforeAnyCallRuns) {
  const auto refused_before_running = [&](const std::string& args, const std::string& input) {
    expect_refused(kGoldenValidator, args, p(input), input);
    const sg::CliRun r =
        sg::run_command("cd " + dir_.string() + " && " + kGoldenValidator + " " + args);
    EXPECT_EQ(r.output.find("golden-validator exec:"), std::string::npos)
        << "a call ran before the refusal: " << args << "\n" << r.output;
  };
  // The 64-token input cut into 16 calls of 4 tokens: call 1 writes ch/call_001/y.npy.
  fs::create_directories(p("ch/call_001"));
  fs::copy(p("cs/long_x.npy"), p("ch/call_001/y.npy"));
  refused_before_running("exec cs/compiled_style.mlmodelc --input x=ch/call_001/y.npy --chunk x:1:4 --out ch",
                         "ch/call_001/y.npy");
  // Both subnormal views: the flushed view writes sb/subnormals_flush/inputs/x.npy.
  fs::create_directories(p("sb/subnormals_flush/inputs"));
  fs::copy(p("cs/default_shape_x.npy"), p("sb/subnormals_flush/inputs/x.npy"));
  refused_before_running("exec cs/compiled_style.mlmodelc --input x=sb/subnormals_flush/inputs/x.npy "
                         "--subnormals both --out sb",
                         "sb/subnormals_flush/inputs/x.npy");
}

// record's --out: the dump the chain reads (the check that was there first, now one case of
// the rule) and a directory inside one of the chain's shards.
TEST_F(OutputsNeverInputs, RecordIntoTheSourceDumpOrAShard) {
  const std::string chain = "sample/chains/chain_fp16.json";
  expect_refused(kGoldenValidator, "record " + chain + " -q --out sample/goldens",
                 p("sample/goldens/manifest.json"), "--out sample/goldens");
  const std::string shard = "sample/shards/embed_fp16.mlpackage";
  expect_refused(kGoldenValidator, "record " + chain + " -q --out " + shard + "/dump",
                 p(shard + "/Manifest.json"), "--out " + shard + "/dump");
  EXPECT_FALSE(fs::exists(p(shard + "/dump/manifest.json")));
}

// The exit-2 path writes an error report too: it is refused like any other report, and the
// other reports of the set are not written either (all or none).
TEST_F(OutputsNeverInputs, ErrorReportIsNotWrittenOverAnInput) {
  fs::copy(fs::path(SG_SOURCE_DIR) / "gates/fidelity.json", p("fid.json"));
  expect_refused(kGoldenValidator,
                 "run " + kChain + " -q --gate fid.json --markdown m.md --json fid.json",
                 p("fid.json"), "--json fid.json");
  EXPECT_FALSE(fs::exists(p("m.md")));
}

}  // namespace
