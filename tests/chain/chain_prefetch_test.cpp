// Prefetch of the next shard in a chain (ChainRunOptions::prefetch, golden/shard_prefetch.h):
// the results are the same bytes with and without it, it asks for exactly the next shard step
// that runs (never past the chain's last step, never a step a CI slice skips), SG_PREFETCH=0
// turns it off, and an unreadable next shard is left to that step's own open to report. The
// helper's own tests (fingerprints, errors it must not move, disposal) are in
// shard_prefetch_test.cpp.
#include "chain/prefetch_failures.h"
#include "shardgate/chain.h"
#include "shardgate/golden.h"
#include "shardgate/io.h"
#include "support/test_paths.h"
#include "support/value_or_fail.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <set>

#include <sys/stat.h>
#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;

using sg::testing::kSampleDir;
using sg::testing::value_or_fail;

// The shard paths of the chain's shard steps from the second on: what a free-running run must
// hand the prefetcher, in order.
std::vector<std::string> shard_steps_after_the_first(const ChainManifest& chain) {
  std::vector<std::string> out;
  for (const ChainStep& s : chain.steps) {
    if (!s.is_combine) out.push_back(s.shard);
  }
  if (!out.empty()) out.erase(out.begin());
  return out;
}

ChainRunResult run(const ChainManifest& chain, const GoldenSource& goldens, bool prefetch) {
  ChainRunOptions o;
  o.goldens = &goldens;
  o.prefetch = prefetch;
  for (const ChainStep& s : chain.steps) {
    if (s.is_combine) o.keep.push_back(s.output);
    for (const auto& [port, tensor] : s.outputs) o.keep.push_back(tensor);
  }
  auto r = run_chain(chain, o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(*r) : ChainRunResult{};
}

TEST(ChainPrefetch, SameBytesWithAndWithoutAndExactlyTheNextShardSteps) {
  const ChainManifest chain =
      value_or_fail(load_chain_manifest(kSampleDir + "chains/chain_lut4.json"));
  auto g = open_golden_source(kSampleDir + "goldens");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const ChainRunResult on = run(chain, **g, true);
  const ChainRunResult off = run(chain, **g, false);
  ASSERT_FALSE(on.tensors.empty());
  ASSERT_EQ(on.tensors.size(), off.tensors.size());
  for (const auto& [name, t] : on.tensors) {
    const Tensor& u = off.tensors.at(name);
    ASSERT_EQ(t.shape(), u.shape()) << name;
    ASSERT_EQ(t.dtype(), u.dtype()) << name;
    EXPECT_EQ(0, std::memcmp(t.raw(), u.raw(), t.nbytes())) << name << " differs with prefetch";
  }
  EXPECT_EQ(on.prefetched, shard_steps_after_the_first(chain));
  EXPECT_TRUE(off.prefetched.empty());
}

TEST(ChainPrefetch, ASliceAsksOnlyForItsOwnSteps) {
  const ChainManifest chain =
      value_or_fail(load_chain_manifest(kSampleDir + "chains/chain_lut4.json"));
  auto g = open_golden_source(kSampleDir + "goldens");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto groups = teacher_forced_groups(chain, **g);
  ASSERT_TRUE(groups.is_ok()) << groups.status().to_string();
  ASSERT_GE(groups->size(), 3u);
  // The second group only: its shard steps after its first one, nothing from the group after.
  const SliceGroup& group = (*groups)[1];
  ChainRunOptions o;
  o.mode = ChainMode::kTeacherForced;
  o.goldens = g->get();
  o.only_steps = std::set<std::string>(group.steps.begin(), group.steps.end());
  auto r = run_chain(chain, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<std::string> expected;
  for (const std::string& id : group.steps) {
    const ChainStep* s = chain.find_step(id);
    if (s && !s->is_combine) expected.push_back(s->shard);
  }
  ASSERT_FALSE(expected.empty());
  expected.erase(expected.begin());
  EXPECT_EQ(r->prefetched, expected);
}

TEST(ChainPrefetch, EnvironmentTurnsItOff) {
  const ChainManifest chain =
      value_or_fail(load_chain_manifest(kSampleDir + "chains/chain_lut4.json"));
  auto g = open_golden_source(kSampleDir + "goldens");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ::setenv("SG_PREFETCH", "0", 1);
  const ChainRunResult r = run(chain, **g, true);
  ::unsetenv("SG_PREFETCH");
  EXPECT_TRUE(r.prefetched.empty()) << "SG_PREFETCH=0 must turn prefetch off";
}

TEST(ChainPrefetch, AMissingNextShardIsReportedByItsOwnStepAlone) {
  // The sample chain with its third step's shard renamed to one that does not exist: the
  // prefetcher is asked for it while step 2 runs and must stay silent; the error is the step's
  // own, identical with and without prefetch.
  auto text = read_file(kSampleDir + "chains/chain_lut4.json");
  ASSERT_TRUE(text.is_ok());
  const ChainManifest good =
      value_or_fail(load_chain_manifest(kSampleDir + "chains/chain_lut4.json"));
  const std::string third = good.steps[2].shard_written;
  const size_t at = text->find("\"" + third + "\"");
  ASSERT_NE(at, std::string::npos) << third;
  text->replace(at + 1, third.size(), third + ".missing");
  auto chain = parse_chain_manifest(*text, kSampleDir + "chains/chain_lut4.json", false);
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  const auto messages = testing::failures_without_and_with_prefetch(*chain, ErrorCode::kIO);
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[1].find("steps[2]"), std::string::npos) << messages[1];
}

}  // namespace
}  // namespace sg
