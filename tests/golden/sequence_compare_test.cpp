// Golden dumps covering several calls (call_NNN/ subdirectories, one dump each): compare works
// call by call, labels every check with its call so the summary names the failing call, and
// refuses sequences whose calls differ. Built from the numpy-made dumps of tests/data/golden.
#include "shardgate/fidelity.h"
#include "shardgate/gate_policy.h"
#include "shardgate/golden.h"
#include "shardgate/golden_report.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace sg {
namespace {

namespace fs = std::filesystem;

class SequenceCompare : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sg_seq_cmp_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `root`/call_NNN is a copy of tests/data/golden/`dump`, one per entry of `dumps`.
  std::string sequence(const std::string& root, const std::vector<std::string>& dumps) {
    for (size_t k = 0; k < dumps.size(); ++k) {
      const fs::path call = dir_ / root / fmt::format("call_{:03}", k);
      fs::create_directories(call);
      fs::copy(fs::path(SG_TEST_DATA_DIR) / "golden" / dumps[k], call, fs::copy_options::recursive);
    }
    return (dir_ / root).string();
  }

  fs::path dir_;
};

TEST_F(SequenceCompare, EveryCallIsComparedAndTheFailingCallIsNamed) {
  const std::string ref = sequence("ref", {"ref", "ref", "ref"});
  const std::string cand = sequence("cand", {"cand_pass", "cand_pass", "cand_fail"});
  auto calls = sequence_dump_calls(cand);
  ASSERT_TRUE(calls.is_ok()) << calls.status().to_string();
  EXPECT_EQ(*calls, (std::vector<std::string>{"call_000", "call_001", "call_002"}));

  auto run = compare_sequences(cand, ref, {}, {});
  ASSERT_TRUE(run.is_ok()) << run.status().to_string();
  // One dump's checks per call, each labelled with its call.
  auto single = compare_sources(**open_golden_source(SG_TEST_DATA_DIR "/golden/cand_fail"),
                                **open_golden_source(SG_TEST_DATA_DIR "/golden/ref"), {});
  ASSERT_TRUE(single.is_ok());
  ASSERT_EQ(run->checks.size(), 3 * single->checks.size());
  for (size_t i = 0; i < run->checks.size(); ++i) {
    const auto& labels = run->checks[i].identity.labels;
    ASSERT_EQ(labels.size(), 1u);
    EXPECT_EQ(labels[0].first, "call");
    EXPECT_EQ(labels[0].second, fmt::format("call_{:03}", i / single->checks.size()));
  }
  auto report = make_golden_report(std::move(*run), builtin_gate_policy(), false, "test");
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->evaluation.summary.verdict, Verdict::kFail);
  // Only call_002 fails; the summary names it.
  const std::string& m = report->evaluation.summary.message;
  EXPECT_NE(m.find("[call=call_002]"), std::string::npos) << m;
  EXPECT_EQ(m.find("call_000"), std::string::npos) << m;
  for (size_t i = 0; i < report->run.checks.size(); ++i) {
    if (report->run.checks[i].identity.labels[0].second != "call_002") {
      EXPECT_EQ(report->evaluation.checks[i].verdict, Verdict::kPass) << report->run.checks[i].identity.id();
    }
  }
}

TEST_F(SequenceCompare, SequencesMustHoldTheSameCalls) {
  const std::string ref = sequence("ref", {"ref", "ref", "ref"});
  const std::string cand = sequence("cand", {"cand_pass", "cand_pass"});
  auto run = compare_sequences(cand, ref, {}, {});
  ASSERT_FALSE(run.is_ok());
  EXPECT_EQ(run.status().code(), ErrorCode::kUsage);
  EXPECT_NE(run.status().message().find("the reference has call_002 but the candidate"), std::string::npos)
      << run.status().message();
  // A single dump against a sequence.
  auto mixed = compare_sequences(SG_TEST_DATA_DIR "/golden/cand_pass", ref, {}, {});
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_NE(mixed.status().message().find("is one dump but"), std::string::npos) << mixed.status().message();
  // A single dump is not a sequence; an empty directory is neither.
  EXPECT_TRUE(sequence_dump_calls(SG_TEST_DATA_DIR "/golden/ref")->empty());
  fs::create_directories(dir_ / "empty");
  auto empty = sequence_dump_calls((dir_ / "empty").string());
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("neither a golden dump"), std::string::npos);
}

}  // namespace
}  // namespace sg
