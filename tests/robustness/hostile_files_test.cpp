// Hostile files in place of inputs, through the built executables: a FIFO where a file is read
// (which used to block forever), a Git LFS pointer in place of weight.bin, a symbolic link out
// of the shard. Each is exit 2 naming the file. Every command runs under `timeout -s KILL`, so
// a regression that waits on a FIFO fails the test (exit -1/137) instead of hanging ctest.
#include "support/cli_run.h"
#include "support/file_bytes.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using sg::testing::kAneValidator;
using sg::testing::kGoldenValidator;
// 20 s is far above any of these runs; a blocked open is killed and fails the test.
constexpr int kLimit = 20;
const fs::path kPaletteShard =
    fs::path(SG_TEST_DATA_DIR) / "corpus/silero-vad/unified_palette_4bit.mlmodelc";

using sg::testing::spit;

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kAneValidator) && fs::exists(kGoldenValidator))
        << "build the validators first";
    dir_ = fs::temp_directory_path() /
           ("sg_hostile_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    shard_ = dir_ / "m.mlmodelc";
    fs::copy(kPaletteShard, shard_, fs::copy_options::recursive);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Replaces `file` by a FIFO nobody writes to.
  void make_fifo(const fs::path& file) {
    fs::remove(file);
    ASSERT_EQ(::mkfifo(file.c_str(), 0644), 0) << file;
  }
  void expect_refused(const sg::CliRun& r, const fs::path& file, const std::string& what) {
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(file.string() + ": " + what), std::string::npos)
        << "expected '" << file.string() << ": " << what << "' in:\n" << r.output;
  }
  fs::path dir_;
  fs::path shard_;
};

TEST_F(HostileFiles, FifoInPlaceOfModelMil) {
  make_fifo(shard_ / "model.mil");
  expect_refused(sg::run_killed_after(kLimit, kAneValidator + " " + shard_.string()),
                 shard_ / "model.mil", "not a regular file (a FIFO)");
}

TEST_F(HostileFiles, FifoInPlaceOfWeightBin) {
  make_fifo(shard_ / "weights/weight.bin");
  expect_refused(
      sg::run_killed_after(kLimit, kGoldenValidator + " exec " + shard_.string() + " --seed 1"),
      shard_ / "weights/weight.bin", "not a regular file (a FIFO)");
}

TEST_F(HostileFiles, FifoAsInputNpy) {
  make_fifo(dir_ / "x.npy");
  expect_refused(
      sg::run_killed_after(kLimit, kGoldenValidator + " exec " + shard_.string() +
                                       " --input audio_input=" + (dir_ / "x.npy").string()),
      dir_ / "x.npy", "not a regular file (a FIFO)");
}

TEST_F(HostileFiles, FifoAsChainManifest) {
  make_fifo(dir_ / "chain.json");
  expect_refused(
      sg::run_killed_after(kLimit, kGoldenValidator + " run " + (dir_ / "chain.json").string()),
      dir_ / "chain.json", "not a regular file (a FIFO)");
}

TEST_F(HostileFiles, FifoAsGateFile) {
  make_fifo(dir_ / "gate.json");
  expect_refused(sg::run_killed_after(kLimit, kAneValidator + " " + shard_.string() + " --gate " +
                                                  (dir_ / "gate.json").string()),
                 dir_ / "gate.json", "not a regular file (a FIFO)");
}

TEST_F(HostileFiles, FifoAsPlan) {
  make_fifo(dir_ / "plan.json");
  expect_refused(sg::run_killed_after(kLimit, kAneValidator + " " + shard_.string() + " --plan " +
                                                  (dir_ / "plan.json").string()),
                 dir_ / "plan.json", "not a regular file (a FIFO)");
}

TEST_F(HostileFiles, GitLfsPointerInPlaceOfWeightBin) {
  spit(shard_ / "weights/weight.bin",
       "version https://git-lfs.github.com/spec/v1\n"
       "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
       "size 12345\n");
  expect_refused(
      sg::run_killed_after(kLimit, kGoldenValidator + " exec " + shard_.string() + " --seed 1"),
      shard_ / "weights/weight.bin", "is a Git LFS pointer");
}

TEST_F(HostileFiles, SymlinkOutOfTheShardIsRefused) {
  fs::copy_file(shard_ / "model.mil", dir_ / "outside.mil");
  fs::remove(shard_ / "model.mil");
  fs::create_symlink(dir_ / "outside.mil", shard_ / "model.mil");
  expect_refused(sg::run_killed_after(kLimit, kAneValidator + " " + shard_.string()),
                 shard_ / "model.mil", "a symbolic link that leads out of the shard");
  // A link that stays inside the shard is fine.
  fs::remove(shard_ / "model.mil");
  fs::rename(dir_ / "outside.mil", shard_ / "program.mil");
  fs::create_symlink("program.mil", shard_ / "model.mil");
  const sg::CliRun ok = sg::run_killed_after(kLimit, kAneValidator + " " + shard_.string());
  EXPECT_TRUE(ok.code == 0 || ok.code == 1) << ok.output;
}

TEST_F(HostileFiles, WeightSymlinkOutOfTheShardIsRefused) {
  fs::rename(shard_ / "weights/weight.bin", dir_ / "weight.bin");
  fs::create_symlink(dir_ / "weight.bin", shard_ / "weights/weight.bin");
  expect_refused(
      sg::run_killed_after(kLimit, kGoldenValidator + " exec " + shard_.string() + " --seed 1"),
      shard_ / "weights/weight.bin", "a symbolic link that leads out of the shard");
}

}  // namespace

namespace {

// A shard declaring a [65536, 65536] fp32 input (16 GiB): exec's seeded input is refused by
// the memory budget (exit 2 naming the input, the shape and the bytes) instead of "internal
// error: out of memory" or the OOM killer.
TEST_F(HostileFiles, HugeDeclaredInputIsOverTheMemoryBudget) {
  const fs::path m = dir_ / "huge.mlmodelc";
  fs::create_directories(m);
  spit(m / "model.mil",
       "program(1.0)\n{\n    func main<ios16>(tensor<fp32, [65536, 65536]> x) {\n"
       "        tensor<fp32, [65536, 65536]> y = relu(x = x)[name = string(\"y\")];\n"
       "    } -> (y);\n}\n");
  const sg::CliRun r = sg::run_killed_after(
      kLimit, kGoldenValidator + " exec " + m.string() + " --seed 1 --max-memory 1G");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("memory budget: tensor [65536, 65536] of fp32 needs 17179869248 bytes"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("over the budget of 1073741824 bytes"), std::string::npos) << r.output;
  const sg::CliRun bad =
      sg::run_killed_after(kLimit, kGoldenValidator + " exec " + m.string() + " --max-memory 12X");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("12X"), std::string::npos) << bad.output;
}

// --max-memory holds in every executing mode, including the ones added after the budget: exec
// as a sequence of calls (--calls DIR, --chunk) and probe on golden inputs (--inputs-from).
// A budget of 4 KiB is far below what any of them needs, so each is exit 2 from the budget
// (never a pass, never exit 3). Fails if a mode builds its values around the budget or the
// option is missing from one of the subcommands (CLI11 then says "unknown option", exit 2 but
// without "memory budget").
TEST_F(HostileFiles, MaxMemoryHoldsInSequenceAndProbeModes) {
  const std::string kv_case = SG_TEST_DATA_DIR "/fixtures/llm/cases/attention_kv_fp16/";
  const std::string kv_shard = SG_TEST_DATA_DIR "/fixtures/llm/attention_kv_fp16.mlpackage";
  const std::string sample = SG_SOURCE_DIR "/goldens/sample/";
  for (int call = 0; call < 2; ++call) {
    const fs::path d = dir_ / "calls" / ("00" + std::to_string(call));
    fs::create_directories(d);
    fs::copy_file(kv_case + "input_hidden_call" + std::to_string(call) + ".npy", d / "hidden.npy");
    fs::copy_file(kv_case + "input_start_call" + std::to_string(call) + ".npy", d / "start.npy");
  }
  const std::string whole = SG_TEST_DATA_DIR "/fixtures/llm/cases/attention_fp16/input_hidden.npy";
  const std::vector<std::string> commands = {
      kGoldenValidator + " exec " + kv_shard + " --calls " + (dir_ / "calls").string(),
      kGoldenValidator + " exec " + kv_shard + " --input hidden=" + whole +
          " --chunk hidden:1:4 --offset-input start",
      kGoldenValidator + " probe " + sample + "shards/L0_attn_lut4.mlpackage --baseline-replace " +
          "_lut4=_fp16 --inputs-from " + sample + "chains/chain_lut4.json",
  };
  for (const std::string& c : commands) {
    const sg::CliRun unlimited = sg::run_killed_after(kLimit, c);
    EXPECT_NE(unlimited.code, 2) << c << "\n" << unlimited.output;  // the command itself is valid
    const sg::CliRun r = sg::run_killed_after(kLimit, c + " --max-memory 4K");
    EXPECT_EQ(r.code, 2) << c << "\n" << r.output;
    EXPECT_NE(r.output.find("memory budget: "), std::string::npos) << c << "\n" << r.output;
    EXPECT_NE(r.output.find("over the budget of 4096 bytes"), std::string::npos)
        << c << "\n" << r.output;
  }
}

// compare converts one row (at most 64Ki elements of it) of each tensor to double at a time,
// checked against --max-memory: the sample's goldens against themselves (rows of 64 and 192
// values, 3 KiB of doubles for a logits row; 12 KiB for the whole logits tensor) pass under a
// 4 KiB budget, and under 2 KiB the refusal names the checkpoint. Fails if compare converts
// whole tensors again, or loses the option.
TEST_F(HostileFiles, CompareHoldsRowsNotTensorsUnderMaxMemory) {
  const std::string goldens = SG_SOURCE_DIR "/goldens/sample/goldens";
  const std::string c =
      kGoldenValidator + " compare --candidate " + goldens + " --reference " + goldens;
  const sg::CliRun r = sg::run_killed_after(kLimit, c + " --max-memory 4K");
  EXPECT_EQ(r.code, 0) << r.output;
  const sg::CliRun tight = sg::run_killed_after(kLimit, c + " --max-memory 2K");
  EXPECT_EQ(tight.code, 2) << tight.output;
  EXPECT_NE(tight.output.find("checkpoint 'logits': comparing rows of 192 elements, 192 at a time"),
            std::string::npos) << tight.output;
  EXPECT_NE(tight.output.find("over the budget of 2048 bytes"), std::string::npos) << tight.output;
}

}  // namespace
