// Report outputs in hostile places, through the built executables: a character device (a
// mknod copy of /dev/null, as root: never the real one) and a FIFO are written directly and
// never renamed over; "-" is standard output; every report of a run carries the run id of the
// JSON report; and SIGKILL at random moments leaves each report old or new and complete, a
// new JSON report vouches for the others, and no temporary outlives the next run.
#include "shardgate/io.h"
#include "support/cli_run.h"

#include "support/temp_dir_test.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

using sg::testing::kAneValidator;
using sg::testing::kGoldenValidator;
const fs::path kSileroPath = fs::path(SG_TEST_DATA_DIR) / "corpus/silero-vad";
const fs::path kGoldenData = fs::path(SG_TEST_DATA_DIR) / "golden";

std::string read_or_empty(const fs::path& p) {
  auto r = sg::read_file(p.string());
  return r.is_ok() ? *r : std::string();
}

// The run id a report carries ("" when none).
std::string run_id_of(const std::string& text, bool json) {
  if (json) {
    const auto j = nlohmann::json::parse(text, nullptr, false);
    return j.is_object() && j.contains("run_id") ? j["run_id"].get<std::string>() : "";
  }
  const std::string tag = "<!-- shardgate run_id: ";
  const size_t at = text.find(tag);
  return at == std::string::npos ? "" : text.substr(at + tag.size(), 16);
}

class ReportOutput : public sg::testing::TempDirTest {
 protected:
  ReportOutput() : TempDirTest("sg_report_output_") {}
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kAneValidator) && fs::exists(kGoldenValidator))
        << "build the validators first";
    TempDirTest::SetUp();
  }
};

TEST_F(ReportOutput, CharacterDeviceTargetIsWrittenNotReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  const fs::path dev = dir_ / "null";
  ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  const auto r = sg::run_killed_after(
      30, kAneValidator + " " + (kSileroPath / "unified_palette_4bit.mlmodelc").string() +
              " --json " + dev.string() + " --markdown " + dev.string());
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.output;
  struct stat st {};
  ASSERT_EQ(::stat(dev.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced by a regular file";
  const auto g = sg::run_killed_after(
      30, kGoldenValidator + " compare --candidate " + (kGoldenData / "cand_pass").string() +
              " --reference " + (kGoldenData / "ref").string() + " --json " + dev.string() +
              " --html " + dev.string());
  EXPECT_EQ(g.code, 0) << g.output;
  ASSERT_EQ(::stat(dev.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced by a regular file";
}

TEST_F(ReportOutput, FifoTargetWithoutAReaderIsAnErrorNotAHang) {
  const fs::path fifo = dir_ / "report.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto r = sg::run_killed_after(
      30, kAneValidator + " " + (kSileroPath / "unified_palette_4bit.mlmodelc").string() +
              " --json " + fifo.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(fifo.string() + ": a FIFO with no reader"), std::string::npos) << r.output;
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(ReportOutput, DashIsStandardOutputAndTheSummaryGoesToStandardError) {
  const auto r = sg::run_killed_after(
      30, "sh -c '" + kAneValidator + " " +
              (kSileroPath / "unified_palette_4bit.mlmodelc").string() + " --json - 2>/dev/null'");
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.output;
  const auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << "standard output is not exactly the JSON report:\n" << r.output;
  EXPECT_EQ(j["schema_version"], "shardgate/ane-report@3");  // the shared envelope
  const auto g =
      sg::run_killed_after(30, "sh -c '" + kGoldenValidator + " compare --candidate " +
                                   (kGoldenData / "cand_pass").string() + " --reference " +
                                   (kGoldenData / "ref").string() + " --junit - 2>/dev/null'");
  EXPECT_EQ(g.code, 0) << g.output;
  EXPECT_EQ(g.output.rfind("<?xml", 0), 0u) << g.output;
  EXPECT_NE(g.output.find("</testsuites>"), std::string::npos) << g.output;
}

TEST_F(ReportOutput, EveryReportOfARunCarriesTheJsonReportsRunId) {
  const std::string cmd = kGoldenValidator + " compare --candidate " +
                          (kGoldenData / "cand_pass").string() + " --reference " +
                          (kGoldenData / "ref").string() + " --json " + (dir_ / "r.json").string() +
                          " --junit " + (dir_ / "r.xml").string() + " --markdown " +
                          (dir_ / "r.md").string() + " --html " + (dir_ / "r.html").string();
  const auto r = sg::run_killed_after(30, cmd);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string id = run_id_of(read_or_empty(dir_ / "r.json"), true);
  EXPECT_EQ(id.size(), 16u);
  for (const char* f : {"r.xml", "r.md", "r.html"})
    EXPECT_EQ(run_id_of(read_or_empty(dir_ / f), false), id) << f;
  // The same command again gives the same reports (the id is a digest, not a clock).
  const std::string first = read_or_empty(dir_ / "r.json");
  ASSERT_EQ(sg::run_killed_after(30, cmd).code, 0);
  EXPECT_EQ(read_or_empty(dir_ / "r.json"), first);
}

// Starts ane-validator on `shard` writing three reports into dir, kills it after `delay`.
void run_and_kill(const fs::path& shard, const fs::path& dir, const std::string& min_residency,
                  std::chrono::microseconds delay) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    const std::string json = (dir / "r.json").string(), junit = (dir / "r.xml").string(),
                      md = (dir / "r.md").string();
    ::execl(kAneValidator.c_str(), kAneValidator.c_str(), shard.c_str(), "--min-residency",
            min_residency.c_str(), "--json", json.c_str(), "--junit", junit.c_str(), "--markdown",
            md.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

TEST_F(ReportOutput, SigkillAtRandomMomentsNeverLeavesAMixedSetBehindANewJson) {
  const fs::path shards[] = {kSileroPath / "unified_palette_4bit.mlmodelc",
                             kSileroPath / "unified_int8.mlmodelc"};
  std::mt19937 rng(20261123);
  std::uniform_int_distribution<int> delay_us(0, 60000);
  std::string prev_json_id;
  // A bounded loop: 40 kills at moments spread over a run (about 30-60 ms here). Each run has
  // its own --min-residency, so its reports (and run id) differ from every other run's.
  for (int i = 0; i < 40; ++i) {
    run_and_kill(shards[i % 2], dir_, std::to_string(50 + i), std::chrono::microseconds(delay_us(rng)));
    const bool has_json = fs::exists(dir_ / "r.json");
    const std::string json_id = has_json ? run_id_of(read_or_empty(dir_ / "r.json"), true) : "";
    if (has_json) {
      ASSERT_EQ(json_id.size(), 16u) << "incomplete r.json after kill " << i;
    }
    for (const char* f : {"r.xml", "r.md"}) {
      if (!fs::exists(dir_ / f)) continue;
      const std::string text = read_or_empty(dir_ / f);
      const std::string id = run_id_of(text, false);
      // Each file is complete, from some run...
      ASSERT_EQ(id.size(), 16u) << f << " without a run id after kill " << i;
      if (std::string(f) == "r.xml") {
        ASSERT_NE(text.find("</testsuites>"), std::string::npos) << "truncated " << f;
      }
      // ...and the JSON is written last: a JSON rewritten by this run means every report is
      // this run's.
      if (has_json && json_id != prev_json_id) {
        ASSERT_EQ(id, json_id) << f << " is older than r.json (kill " << i << ")";
      }
    }
    prev_json_id = json_id;
  }
  // A run to completion sweeps what a kill left between link and rename.
  const auto r = sg::run_killed_after(
      30, kAneValidator + " " + shards[0].string() + " --json " + (dir_ / "r.json").string() +
              " --junit " + (dir_ / "r.xml").string() + " --markdown " + (dir_ / "r.md").string());
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.output;
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos)
        << "temporary left behind: " << e.path();
  }
}

}  // namespace
