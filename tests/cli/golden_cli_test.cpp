// golden-validator end to end: compare and regate through the built binary, asserting exit
// codes (0 pass, 1 gate failed, 2 bad input or usage), the first failure it names, and the
// report files it writes.
#include "shardgate/golden.h"
#include "shardgate/io.h"
#include "support/json_schema_lite.h"

#include "support/cli_run.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;

const std::string kData = SG_TEST_DATA_DIR "/golden/";

std::string dump(const std::string& name) { return kData + name; }

class GoldenCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sg_golden_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(GoldenCli, ComparePassesOnACloseCandidate) {
  const CliRun r = run_golden_validator("compare --no-color --candidate " + dump("cand_pass") +
                                        " --reference " + dump("ref") + " --json " + out("r.json"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("PASS"), std::string::npos);
  auto text = read_file(out("r.json"));
  ASSERT_TRUE(text.is_ok());
  auto schema = read_file(SG_SOURCE_DIR "/reports/schema/golden-report.schema.json");
  ASSERT_TRUE(schema.is_ok());
  EXPECT_EQ(testing::json_schema_violations(*schema, *text), std::vector<std::string>{});
}

// A dump compared with itself passes every check trivially: the report says so (terminal and
// JSON notes), by any spelling of the directory, and says nothing of the kind for two dumps.
TEST_F(GoldenCli, CompareOfADumpWithItselfSaysSo) {
  const std::string kSelf = "the candidate and the reference are the same files";
  const CliRun self =
      run_golden_validator("compare --no-color --candidate " + dump("ref") + " --reference " +
                           kData + "../golden/ref --json " + out("r.json"));
  EXPECT_EQ(self.code, 0) << self.output;
  EXPECT_NE(self.output.find("note: " + kSelf), std::string::npos) << self.output;
  auto text = read_file(out("r.json"));
  ASSERT_TRUE(text.is_ok());
  EXPECT_NE(text->find(kSelf), std::string::npos);
  const CliRun two = run_golden_validator("compare --no-color --candidate " + dump("cand_pass") +
                                          " --reference " + dump("ref"));
  EXPECT_EQ(two.code, 0) << two.output;
  EXPECT_EQ(two.output.find(kSelf), std::string::npos) << two.output;
  const std::string shard = SG_SOURCE_DIR "/goldens/sample/shards/L0_attn_lut4.mlpackage";
  const CliRun probe =
      run_golden_validator("probe " + shard + " --baseline " + shard + " --seeds 1 --no-color");
  EXPECT_EQ(probe.code, 0) << probe.output;
  EXPECT_NE(probe.output.find("is its own baseline (the same files)"), std::string::npos) << probe.output;
}

// One value per row (a score per seed or position): a candidate of the wrong sign has norm ratio
// 1, and gates/fidelity.json gates nothing else on it, so `compare` passed a negated output.
// Its cosine, -1, now fails it; the same magnitudes with the right signs still pass.
TEST_F(GoldenCli, CompareFailsAOneElementRowOfTheWrongSign) {
  auto write = [this](const std::string& name, std::vector<float> v) {
    auto w = GoldenDumpWriter::create(out(name), "m", "fp32", {});
    ASSERT_TRUE(w.is_ok()) << w.status().to_string();
    GoldenEntry e;
    e.name = "score";
    e.kind = "output";
    e.position_axis = 0;
    ASSERT_TRUE(w->add(e, Tensor::from_f32({3, 1}, v)).is_ok());
    ASSERT_TRUE(w->finish().is_ok());
  };
  write("ref", {0.5f, -0.2f, 0.9f});
  write("flipped", {0.5f, 0.2f, 0.9f});
  write("same", {0.5f, -0.2f, 0.9f});
  const std::string gate = " --gate " SG_SOURCE_DIR "/gates/fidelity.json";
  const CliRun bad =
      run_golden_validator("compare --no-color --candidate " + out("flipped") + " --reference " +
                           out("ref") + gate + " --json " + out("r.json"));
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("first failure: score: cosine min -1 at position 1"), std::string::npos)
      << bad.output;
  auto text = read_file(out("r.json"));
  ASSERT_TRUE(text.is_ok());
  EXPECT_NE(text->find("it is measured only where the signs differ"), std::string::npos);
  const CliRun good = run_golden_validator("compare --no-color --candidate " + out("same") +
                                           " --reference " + out("ref") + gate);
  EXPECT_EQ(good.code, 0) << good.output;
}

// Token ids that are 0 at every position on both sides match exactly; compare failed them as
// "all 1 rows are degenerate ...: no evidence".
TEST_F(GoldenCli, CompareOfIdsThatAreAllZeroOnBothSidesPasses) {
  for (const char* name : {"ref", "cand"}) {
    auto w = GoldenDumpWriter::create(out(name), "m", "fp32", {});
    ASSERT_TRUE(w.is_ok()) << w.status().to_string();
    GoldenEntry e;
    e.name = "ids";
    e.kind = "output";
    const std::vector<int32_t> zeros(4, 0);
    ASSERT_TRUE(w->add(e, Tensor::from_i32({1, 4}, zeros)).is_ok());
    ASSERT_TRUE(w->finish().is_ok());
  }
  const CliRun r =
      run_golden_validator("compare --no-color --candidate " + out("cand") + " --reference " +
                           out("ref") + " --gate " SG_SOURCE_DIR "/gates/fidelity.json");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("PASS: all 1 checks passed (1 rows, 0 degenerate)"), std::string::npos) << r.output;
}

TEST_F(GoldenCli, CompareFailsAndNamesTheFirstFailingLayerAndPosition) {
  const CliRun r =
      run_golden_validator("compare --no-color --candidate " + dump("cand_fail") + " --reference " +
                           dump("ref") + " --json " + out("r.json") + " --junit " + out("r.xml") +
                           " --markdown " + out("r.md") + " --html " + out("r.html"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("first failure: hidden.2 (layer 2): cosine min 0.646174 at position 5"),
            std::string::npos)
      << r.output;
  for (const char* f : {"r.json", "r.xml", "r.md", "r.html"}) {
    EXPECT_TRUE(fs::exists(out(f))) << f;
  }
  auto html = read_file(out("r.html"));
  ASSERT_TRUE(html.is_ok());
  EXPECT_NE(html->find("data-check=\"hidden.2\" data-position=\"5\""), std::string::npos);
  // The summary links to that cell.
  const size_t link = html->find("first failure: <a href=\"#cell-");
  ASSERT_NE(link, std::string::npos) << *html;
  const size_t from = html->find('#', link) + 1;
  const std::string id = html->substr(from, html->find('"', from) - from);
  EXPECT_NE(html->find("<rect class=\"cell\" id=\"" + id + "\" data-check=\"hidden.2\" data-position=\"5\""),
            std::string::npos)
      << id;
  const auto j = nlohmann::json::parse(*read_file(out("r.json")));
  EXPECT_EQ(j["summary"]["first_failure"]["checkpoint"], "hidden.2");
  EXPECT_EQ(j["summary"]["first_failure"]["position"], 5);
}

TEST_F(GoldenCli, QuietPrintsOnlyTheVerdictLine) {
  const CliRun r = run_golden_validator("compare -q --candidate " + dump("cand_fail") +
                                        " --reference " + dump("ref"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output.rfind("FAIL: ", 0), 0u) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1);
}

TEST_F(GoldenCli, NanFailsTheGate) {
  const CliRun r = run_golden_validator("compare --no-color --candidate " + dump("cand_nan") +
                                        " --reference " + dump("ref"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("flat index 55 (position 3)"), std::string::npos) << r.output;
}

TEST_F(GoldenCli, InputErrorsExitTwo) {
  for (const char* c : {"cand_shape", "cand_dtype", "cand_prompt", "does_not_exist"}) {
    const CliRun r =
        run_golden_validator("compare --candidate " + dump(c) + " --reference " + dump("ref"));
    EXPECT_EQ(r.code, 2) << c << ": " << r.output;
  }
  const CliRun shape = run_golden_validator("compare --candidate " + dump("cand_shape") +
                                            " --reference " + dump("ref"));
  EXPECT_NE(shape.output.find("hidden.0"), std::string::npos);
  EXPECT_NE(shape.output.find("[1, 8, 8]"), std::string::npos);
}

TEST_F(GoldenCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_golden_validator("").code, 2);
  EXPECT_EQ(run_golden_validator("compare --reference " + dump("ref")).code,
            2);  // --candidate missing
  EXPECT_EQ(run_golden_validator("frobnicate").code, 2);
  EXPECT_EQ(run_golden_validator("compare --candidate " + dump("cand_pass") + " --reference " +
                                 dump("ref") + " --percentile 60")
                .code,
            2);
  EXPECT_EQ(run_golden_validator("compare --candidate " + dump("cand_pass") + " --reference " +
                                 dump("ref") + " --min-cosine abc")
                .code,
            2);
  EXPECT_EQ(run_golden_validator("compare --candidate " + dump("cand_pass") + " --reference " +
                                 dump("ref") + " --gate " + dump("expected.json"))
                .code,
            2);  // not a policy
  EXPECT_EQ(run_golden_validator("--help").code, 0);
  EXPECT_EQ(run_golden_validator("compare --help").code, 0);
}

TEST_F(GoldenCli, NothingComparedIsNotAPass) {
  auto w = GoldenDumpWriter::create(out("other"), "m", "fp32", {});
  ASSERT_TRUE(w.is_ok());
  GoldenEntry e;
  e.name = "unrelated";
  e.kind = "hidden";
  const std::vector<float> v = {1, 2};
  ASSERT_TRUE(w->add(e, Tensor::from_f32({2}, v)).is_ok());
  ASSERT_TRUE(w->finish().is_ok());
  const CliRun r =
      run_golden_validator("compare --candidate " + out("other") + " --reference " + dump("ref"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("nothing to compare"), std::string::npos) << r.output;
}

TEST_F(GoldenCli, ThresholdOptionsAndOverrides) {
  const std::string base = "compare -q --candidate " + dump("cand_fail") + " --reference " + dump("ref");
  // Loosened defaults let everything pass.
  EXPECT_EQ(run_golden_validator(base + " --min-cosine 0.6 --norm-ratio 0.5,2").code, 0);
  // Per-checkpoint overrides (NAME:VALUE) for just the two bad layers.
  EXPECT_EQ(run_golden_validator(
                base + " --min-cosine hidden.2:0.6 hidden.3:0.9 --norm-ratio hidden.2:0.5,2")
                .code,
            0);
  // Overriding only one of them is not enough.
  EXPECT_EQ(
      run_golden_validator(base + " --min-cosine hidden.2:0.6 --norm-ratio hidden.2:0.5,2").code,
      1);
  // A NAME that matches no checkpoint is a typo: refused (exit 2, naming it and the run's
  // checks), never a run gated as if the threshold had been applied.
  const CliRun typo =
      run_golden_validator(base + " --min-cosine 0.6 --norm-ratio 0.5,2 --min-cosine hiden.2:0.99");
  EXPECT_EQ(typo.code, 2) << typo.output;
  EXPECT_NE(typo.output.find("usage error: --min-cosine hiden.2:0.99: 'hiden.2' matches no checkpoint of this run"),
            std::string::npos) << typo.output;
  EXPECT_NE(typo.output.find("hidden.2"), std::string::npos) << typo.output;
  // A stricter policy file on a passing candidate still passes (top-1 agrees everywhere).
  EXPECT_EQ(run_golden_validator("compare -q --candidate " + dump("cand_pass") + " --reference " +
                                 dump("ref") + " --gate " SG_SOURCE_DIR "/gates/fidelity.json")
                .code,
            0);
}

TEST_F(GoldenCli, StrictFailsWhenTheCandidateLacksReferenceTensors) {
  // A candidate holding only hidden.0 (e.g. a device capture of one layer).
  auto src = open_golden_source(dump("cand_pass"));
  ASSERT_TRUE(src.is_ok());
  auto t = (*src)->load("hidden.0");
  ASSERT_TRUE(t.is_ok());
  auto w = GoldenDumpWriter::create(out("partial"), "m", "fp16", {});
  ASSERT_TRUE(w.is_ok());
  ASSERT_TRUE(w->add(*(*src)->find("hidden.0"), *t).is_ok());
  ASSERT_TRUE(w->finish().is_ok());
  const std::string base = "compare --no-color --candidate " + out("partial") + " --reference " + dump("ref");
  const CliRun lax = run_golden_validator(base);
  EXPECT_EQ(lax.code, 0) << lax.output;
  EXPECT_NE(lax.output.find("not in candidate: input_ids, embed, hidden.1"), std::string::npos) << lax.output;
  // The PASS line itself says what went unchecked.
  EXPECT_NE(lax.output.find("PASS: all 1 checks passed (8 rows, 0 degenerate); 6 reference tensors "
                            "without a candidate, not checked (--strict fails them): input_ids, "
                            "embed, hidden.1, hidden.2, hidden.3, logits"),
            std::string::npos)
      << lax.output;
  const CliRun strict = run_golden_validator(base + " --strict");
  EXPECT_EQ(strict.code, 1) << strict.output;
  EXPECT_NE(strict.output.find("--strict"), std::string::npos) << strict.output;
}

TEST_F(GoldenCli, TopkOnTheCommandLineWinsAndIsRecorded) {
  const CliRun r = run_golden_validator(
      "compare -q --candidate " + dump("cand_pass") + " --reference " + dump("ref") +
      " --gate " SG_SOURCE_DIR "/gates/fidelity.json --topk 3 --json " + out("r.json"));
  EXPECT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(*read_file(out("r.json")));
  EXPECT_EQ(j["options"]["topk"], 3);
  EXPECT_EQ(j["policy"]["definition"]["topk"], 3);
}

TEST_F(GoldenCli, SafetensorsCandidate) {
  const CliRun r = run_golden_validator("compare -q --candidate " + dump("cand_pass.safetensors") +
                                        " --reference " + dump("ref"));
  EXPECT_EQ(r.code, 0) << r.output;
}

// A .safetensors golden without position metadata: a pooled [1, 6] output is refused as a
// reference (before: it became 6 one-element "positions" with cosine -1, 0 or 1) unless
// --position-axis is given; 'none' makes it one row, N splits along axis N.
TEST_F(GoldenCli, SafetensorsReferenceWithoutPositionMetadataNeedsThePositionAxis) {
  // A minimal safetensors file: u64 header length, JSON header, little-endian F32 data.
  const std::string header = R"({"pooled":{"dtype":"F32","shape":[1,6],"data_offsets":[0,24]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  const float values[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
  bytes.append(reinterpret_cast<const char*>(values), sizeof(values));
  ASSERT_TRUE(write_file_atomic(out("pooled.safetensors"), bytes).is_ok());
  const std::string args = "compare --no-color --candidate " + out("pooled.safetensors") +
                           " --reference " + out("pooled.safetensors");

  const CliRun refused = run_golden_validator(args + " --json " + out("r.json"));
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("tensor 'pooled' (shape [1, 6]) has no position metadata"),
            std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("give --position-axis N (or none"), std::string::npos);

  const CliRun whole = run_golden_validator(args + " --position-axis none --json " + out("w.json"));
  EXPECT_EQ(whole.code, 0) << whole.output;
  auto w = nlohmann::json::parse(*read_file(out("w.json")));
  EXPECT_EQ(w["checks"][0]["rows"].size(), 1u);
  EXPECT_TRUE(w["checks"][0]["position_axis"].is_null());

  const CliRun split = run_golden_validator(args + " --position-axis 1 --json " + out("s.json"));
  EXPECT_EQ(split.code, 0) << split.output;
  EXPECT_EQ(nlohmann::json::parse(*read_file(out("s.json")))["checks"][0]["rows"].size(), 6u);

  EXPECT_EQ(run_golden_validator(args + " --position-axis 2").code, 2);  // outside the rank
  EXPECT_EQ(run_golden_validator(args + " --position-axis -1").code, 2);
  EXPECT_EQ(run_golden_validator(args + " --position-axis x").code, 2);
}

TEST_F(GoldenCli, RegateRecomputesVerdictsFromTheSavedReport) {
  ASSERT_EQ(run_golden_validator("compare -q --candidate " + dump("cand_fail") + " --reference " +
                                 dump("ref") + " --json " + out("r.json"))
                .code,
            1);
  // Same thresholds: same verdict.
  EXPECT_EQ(run_golden_validator("regate -q " + out("r.json")).code, 1);
  // New thresholds, applied to the stored per-row values.
  const CliRun loose =
      run_golden_validator("regate --no-color " + out("r.json") +
                           " --min-cosine 0.6 --norm-ratio 0.5,2 --json " + out("r2.json"));
  EXPECT_EQ(loose.code, 0) << loose.output;
  auto text = read_file(out("r2.json"));
  ASSERT_TRUE(text.is_ok());
  const auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["verdict"], "pass");
  bool has_report_input = false;
  for (const auto& in : j["provenance"]["inputs"]) has_report_input = has_report_input || in["role"] == "report";
  EXPECT_TRUE(has_report_input);
  // The header says what made the report and that the thresholds are not the file's alone.
  EXPECT_NE(loose.output.find("golden-validator regate of a saved compare report: PASS"), std::string::npos)
      << loose.output;
  EXPECT_NE(loose.output.find("(adjusted on the command line)"), std::string::npos) << loose.output;
  EXPECT_EQ(loose.output.find("golden-validator compare:"), std::string::npos) << loose.output;
  // The adjustment is a flag of the saved policy, not text written into the gate file's
  // description, and a regate of that saved report (no options now) still says so.
  EXPECT_EQ(j["policy"]["adjusted_on_command_line"], true);
  EXPECT_EQ(j["policy"]["definition"]["description"].get<std::string>().find("adjusted"), std::string::npos);
  const CliRun again = run_golden_validator("regate --no-color " + out("r2.json"));
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("(adjusted on the command line)"), std::string::npos) << again.output;
  // And back to the policy file: fails again.
  EXPECT_EQ(run_golden_validator("regate -q " + out("r2.json") +
                                 " --gate " SG_SOURCE_DIR "/gates/fidelity.json")
                .code,
            1);
  // A policy asking for another top-k than the report measured cannot be applied.
  {
    std::ofstream(out("k3.json")) << R"({"schema": "shardgate/fidelity-gate@1", "topk": 3,
        "defaults": {"min_cosine": {"value": 0.5, "reason": "test"}}})";
  }
  const CliRun k3 = run_golden_validator("regate " + out("r.json") + " --gate " + out("k3.json"));
  EXPECT_EQ(k3.code, 2) << k3.output;
  EXPECT_NE(k3.output.find("k = 3"), std::string::npos) << k3.output;
  // Not a report / no file: input errors.
  EXPECT_EQ(run_golden_validator("regate " + dump("expected.json")).code, 2);
  EXPECT_EQ(run_golden_validator("regate " + out("missing.json")).code, 2);
}

}  // namespace
}  // namespace sg
