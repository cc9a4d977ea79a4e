// ane-validator on bad input, through the built binary (build the ane-validator target first):
// every broken shard is exit 2 with a message naming the broken file, a good one is 0 or 1,
// and a run never leaves a partial report behind (--json names a complete report or nothing).
// A run given a .mlmodelc/.mlpackage path always reports it, broken or not: its error is in
// the report.
#include "shardgate/io.h"
#include "support/cli_run.h"
#include "support/file_bytes.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using sg::testing::kAneValidator;
using sg::testing::kSileroDir;

using CliResult = sg::CliRun;

using sg::testing::slurp;
using sg::testing::spit;

// Replaces the first `from` in a file; fails the test when it is not there.
void replace_in_file(const fs::path& path, const std::string& from, const std::string& to) {
  std::string text = slurp(path);
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from << " not in " << path;
  text.replace(at, from.size(), to);
  spit(path, text);
}

class AneValidatorBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kAneValidator))
        << kAneValidator << " is missing: build the ane-validator target";
    dir_ = fs::temp_directory_path() /
           ("sg_ane_bad_input_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "reports");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A private copy of a corpus model, free to break.
  fs::path copy_model(const std::string& name) {
    const fs::path to = dir_ / name;
    fs::copy(kSileroDir + name, to, fs::copy_options::recursive);
    return to;
  }

  // Runs the binary from the source directory (so gates/residency.json is the default
  // policy), stdout and stderr captured together.
  CliResult run(const std::string& args) {
    return sg::run_command("cd '" SG_SOURCE_DIR "' && '" + kAneValidator + "' " + args);
  }

  fs::path report_path() const { return dir_ / "reports" / "out.json"; }

  // The report directory holds exactly one complete, valid report whose exit code is the
  // process's: never a partial file or a left-over temporary.
  void expect_complete_report(const CliResult& r) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_ / "reports")) {
      names.push_back(e.path().filename().string());
    }
    ASSERT_EQ(names, std::vector<std::string>{"out.json"})
        << "expected the report and nothing else next to it:\n" << r.output;
    nlohmann::json j = nlohmann::json::parse(slurp(report_path()), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "report is not valid JSON:\n" << slurp(report_path());
    EXPECT_EQ(j.value("exit_code", -1), r.code);
    EXPECT_TRUE(j.contains("schema_version"));
    EXPECT_TRUE(j.contains("shards"));
  }

  // For runs that may stop before reporting (usage errors, a folder that is not a model): the
  // report directory holds either nothing or one complete report, never a partial file.
  void expect_no_partial_report(const CliResult& r) {
    if (fs::is_empty(dir_ / "reports")) return;
    expect_complete_report(r);
  }

  // Exit 2, the output names `file`, and the report records the error. Every caller passes a
  // .mlmodelc/.mlpackage path, which the tool always checks and reports, so the report must
  // be there.
  void expect_bad_input(const CliResult& r, const std::string& file) {
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(file), std::string::npos) << "message does not name " << file
                                                      << ":\n" << r.output;
    ASSERT_TRUE(fs::exists(report_path())) << "no report written:\n" << r.output;
    expect_complete_report(r);
    nlohmann::json j = nlohmann::json::parse(slurp(report_path()), nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    ASSERT_EQ(j["shards"].size(), 1u);
    EXPECT_EQ(j["shards"][0]["verdict"], "error");
    ASSERT_TRUE(j["shards"][0]["error"].is_object());
    EXPECT_NE(j["shards"][0]["error"]["message"].get<std::string>().find(file), std::string::npos);
    EXPECT_NE(j["shards"][0]["error"]["code"], "internal");
  }

  std::string json_arg() const { return " --json '" + report_path().string() + "'"; }

  fs::path dir_;
};

TEST_F(AneValidatorBadInput, MissingPathIsExitTwoNamingIt) {
  const std::string path = (dir_ / "ghost.mlmodelc").string();
  CliResult r = run("'" + path + "'" + json_arg());
  expect_bad_input(r, "ghost.mlmodelc");
}

TEST_F(AneValidatorBadInput, DirectoryThatIsNotAModelIsExitTwo) {
  // A plain folder holding no model.
  fs::create_directories(dir_ / "notes");
  spit(dir_ / "notes" / "README.txt", "not a model\n");
  CliResult r = run("'" + (dir_ / "notes").string() + "'" + json_arg());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("notes"), std::string::npos) << r.output;
  expect_no_partial_report(r);

  // A folder named like a model, holding nothing it needs.
  fs::remove_all(dir_ / "reports");
  fs::create_directories(dir_ / "reports");
  fs::create_directories(dir_ / "hollow.mlmodelc");
  r = run("'" + (dir_ / "hollow.mlmodelc").string() + "'" + json_arg());
  expect_bad_input(r, "model.mil");

  fs::remove_all(dir_ / "reports");
  fs::create_directories(dir_ / "reports");
  fs::create_directories(dir_ / "hollow.mlpackage");
  r = run("'" + (dir_ / "hollow.mlpackage").string() + "'" + json_arg());
  expect_bad_input(r, "Manifest.json");

  // A regular file where a model directory should be.
  fs::remove_all(dir_ / "reports");
  fs::create_directories(dir_ / "reports");
  spit(dir_ / "flat.mlmodelc", "program(1.0)\n");
  r = run("'" + (dir_ / "flat.mlmodelc").string() + "'" + json_arg());
  expect_bad_input(r, "flat.mlmodelc");
}

TEST_F(AneValidatorBadInput, TruncatedWeightBinIsExitTwo) {
  const fs::path model = copy_model("unified_palette_4bit.mlmodelc");
  const fs::path weights = model / "weights" / "weight.bin";
  // Inside the first blob's data: every blob from the first on is cut off.
  fs::resize_file(weights, 100);
  CliResult r = run("'" + model.string() + "' --min-residency 0" + json_arg());
  expect_bad_input(r, "weight.bin");
}

TEST_F(AneValidatorBadInput, WrongSentinelIsExitTwo) {
  const fs::path model = copy_model("unified_int8.mlmodelc");
  const fs::path weights = model / "weights" / "weight.bin";
  std::string bytes = slurp(weights);
  ASSERT_GE(bytes.size(), 128u);
  ASSERT_EQ(bytes.substr(64, 4), std::string("\xEF\xBE\xAD\xDE", 4));  // 0xDEADBEEF, LE
  bytes[64] = '\xEE';  // the first record, which model.mil references at offset 64
  spit(weights, bytes);
  CliResult r = run("'" + model.string() + "' --min-residency 0" + json_arg());
  expect_bad_input(r, "weight.bin");
}

TEST_F(AneValidatorBadInput, ModelMilSyntaxErrorIsExitTwoWithLine) {
  const fs::path model = copy_model("silero-vad-unified-v6.0.0.mlmodelc");
  // Line 4 is the function header: an extra '(' breaks its parameter list.
  replace_in_file(model / "model.mil", "func main<ios15>(", "func main<ios15>((");
  CliResult r = run("'" + model.string() + "'" + json_arg());
  expect_bad_input(r, "model.mil:4:");
}

TEST_F(AneValidatorBadInput, UnknownOpIsListedByTheDefaultRule) {
  const fs::path model = copy_model("silero-vad-unified-v6.0.0.mlmodelc");
  replace_in_file(model / "model.mil", "= sigmoid(x = input_cast_fp16)",
                  "= frobnicate(x = input_cast_fp16)");
  // Unknown placement is not on the ANE, but only --strict fails on it by itself.
  CliResult r = run("'" + model.string() + "' --ops --min-residency 0" + json_arg());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("frobnicate"), std::string::npos) << r.output;
  expect_complete_report(r);
  nlohmann::json j = nlohmann::json::parse(slurp(report_path()), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  const nlohmann::json& shard = j["shards"][0];
  EXPECT_TRUE(shard["error"].is_null());
  int found = 0;
  for (const auto& op : shard["ops"]) {
    if (op["type"] != "frobnicate") continue;
    ++found;
    EXPECT_EQ(op["placement"], "UNKNOWN");
    EXPECT_EQ(op["rule"], "DEFAULT");
    EXPECT_EQ(op["class"], "compute");
    EXPECT_EQ(op["line"], 131);
    EXPECT_EQ(op["outputs"][0], "var_124_cast_fp16");
  }
  EXPECT_EQ(found, 1);
  // Every op is still listed and the unknown one is counted apart, off the ANE.
  EXPECT_EQ(shard["summary"]["total_ops"], 137);
  EXPECT_EQ(shard["summary"]["compute_ops"], 48);
  EXPECT_EQ(shard["summary"]["unknown"], 1);

  fs::remove(report_path());
  r = run("'" + model.string() + "' --min-residency 0 --strict" + json_arg());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("unknown placement"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DEFAULT"), std::string::npos) << r.output;
  expect_complete_report(r);
}

TEST_F(AneValidatorBadInput, MalformedManifestIsExitTwo) {
  const fs::path model = copy_model("unified_int8.mlpackage");
  const std::string manifest = slurp(model / "Manifest.json");
  spit(model / "Manifest.json", manifest.substr(0, manifest.size() / 2));
  CliResult r = run("'" + model.string() + "'" + json_arg());
  expect_bad_input(r, "Manifest.json");

  // Valid JSON whose root model entry is missing.
  fs::remove(report_path());
  spit(model / "Manifest.json",
       "{\"fileFormatVersion\": \"1.0.0\", \"itemInfoEntries\": {}, \"rootModelIdentifier\": \"X\"}");
  r = run("'" + model.string() + "'" + json_arg());
  expect_bad_input(r, "Manifest.json");
}

TEST_F(AneValidatorBadInput, GoodShardIsZeroOrOneWithACompleteReport) {
  for (const char* name : {"unified_int8.mlmodelc", "unified_palette_4bit.mlpackage"}) {
    fs::remove_all(dir_ / "reports");
    fs::create_directories(dir_ / "reports");
    CliResult r = run("'" + kSileroDir + name + "'" + json_arg());
    EXPECT_TRUE(r.code == 0 || r.code == 1) << name << "\n" << r.output;
    ASSERT_TRUE(fs::exists(report_path())) << name;
    expect_complete_report(r);
    nlohmann::json j = nlohmann::json::parse(slurp(report_path()), nullptr, false);
    EXPECT_TRUE(j["shards"][0]["error"].is_null()) << name;
    EXPECT_EQ(j["shards"][0]["summary"]["total_ops"], 137) << name;
  }
}

// A residency threshold that is not a number in [0, 100] is a usage error: NaN compares false
// with both bounds, and a range check that let it through switched the gate off, so a shard
// that fails at the default passed.
TEST_F(AneValidatorBadInput, MinResidencyMustBeAPercentage) {
  const std::string shard = "'" SG_TEST_DATA_DIR "/exec/compiled_style/compiled_style.mlmodelc'";
  ASSERT_EQ(run(shard).code, 1);  // its RangeDims input puts the body off the ANE (G3): fails
  // "" used to leave the option unset (the default applied silently), "0x10" read as 16.
  for (const char* bad : {"nan", "-nan", "inf", "-1", "100.5", "", "0x10", "1e1", "50%"}) {
    CliResult r = run(shard + " --min-residency '" + bad + "'");
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find(std::string("usage error: --min-residency: must be a percentage in [0, 100], got '") + bad + "'"),
              std::string::npos) << r.output;
  }
  EXPECT_EQ(run(shard + " --min-residency 0").code, 0);
  EXPECT_EQ(run(shard + " --min-residency 0.0").code, 0);
}

TEST_F(AneValidatorBadInput, RunsThatFailBeforeReportingWriteNoReport) {
  const std::string good = "'" + kSileroDir + "unified_int8.mlmodelc'";
  // A gate file that does not exist: refused before any shard is checked.
  CliResult r = run(good + " --gate '" + (dir_ / "missing_gate.json").string() + "'" + json_arg());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("missing_gate.json"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(report_path())) << r.output;
  expect_no_partial_report(r);

  // A malformed gate file.
  spit(dir_ / "bad_gate.json", "{\"schema_version\": 1, \"default\": ");
  r = run(good + " --gate '" + (dir_ / "bad_gate.json").string() + "'" + json_arg());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bad_gate.json"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(report_path())) << r.output;

  // Usage errors.
  r = run(good + " --shard-count 0" + json_arg());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_FALSE(fs::exists(report_path())) << r.output;

  // A report that cannot be written: exit 2 naming it, and nothing half-written.
  const std::string unwritable = (dir_ / "no_such_dir" / "out.json").string();
  r = run(good + " --json '" + unwritable + "'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("out.json"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "no_such_dir"));
}

}  // namespace
