// The hand-written seeds of fuzz_exec (tests/fuzz/seeds/exec) must parse and run: a seed that
// only reaches a parse error would leave the fuzzer exploring error paths instead of kernels.
#include "shardgate/executor.h"
#include "shardgate/io.h"
#include "shardgate/probe.h"
#include "shardgate/readers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace sg {
namespace {

TEST(FuzzSeeds, EveryExecSeedParsesAndRunsWithSeededInputs) {
  int seeds = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(SG_SOURCE_DIR) + "/tests/fuzz/seeds/exec")) {
    SCOPED_TRACE(entry.path().string());
    ++seeds;
    auto text = read_file(entry.path().string());
    ASSERT_TRUE(text.is_ok()) << text.status().to_string();
    auto program = parse_mil_text(*text, entry.path().filename().string());
    ASSERT_TRUE(program.is_ok()) << program.status().to_string();
    auto shard = Shard::from_program(std::move(*program), ModelInfo{}, "");
    const Executor executor(shard);
    ASSERT_TRUE(executor.validate("main").is_ok()) << executor.validate("main").to_string();
    auto inputs = make_seeded_inputs(*shard, "main", 1);
    ASSERT_TRUE(inputs.is_ok()) << inputs.status().to_string();
    auto run = executor.run("main", inputs->inputs, {});
    EXPECT_TRUE(run.is_ok()) << run.status().to_string();
  }
  EXPECT_GE(seeds, 5);
}

}  // namespace
}  // namespace sg
