// The helper that opens the next shard of a chain and disposes of the last one
// (golden/shard_prefetch.h): a chain's fingerprints are the same bytes with and without it,
// errors it meets early are reported by their own step with today's message and never for a
// step the chain does not reach, the shard it hands over has its weight pages faulted in, a
// FIFO in a shard never blocks it, and what it is given to dispose of is released on the helper
// thread (or by its destructor).
#include "chain/prefetch_failures.h"
#include "golden/shard_prefetch.h"
#include "shardgate/chain.h"
#include "shardgate/golden.h"
#include "shardgate/io.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;

using sg::testing::kSampleDir;
const std::string kManifest = kSampleDir + "chains/chain_lut4.json";

// Copies a sample shard to `copy` (its parent made afresh) and returns the copy's weights
// folder, where a test plants a file the helper must survive; empty if there is none.
fs::path copy_shard(const std::string& shard, const fs::path& copy) {
  fs::remove_all(copy.parent_path());
  fs::create_directories(copy.parent_path());
  fs::copy(shard, copy, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(copy)) {
    if (e.is_directory() && e.path().filename() == "weights") return e.path();
  }
  return {};
}

// The sample chain's manifest with `from` replaced by `to` (once).
ChainManifest edited(const std::string& from, const std::string& to) {
  auto text = read_file(kManifest);
  EXPECT_TRUE(text.is_ok());
  if (!text.is_ok()) return {};
  const size_t at = text->find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text->replace(at, from.size(), to);
  auto chain = parse_chain_manifest(*text, kManifest, false);
  EXPECT_TRUE(chain.is_ok()) << chain.status().to_string();
  return chain.is_ok() ? *chain : ChainManifest{};
}

struct Fingerprinted {
  Status status = Status::ok();
  std::vector<std::string> per_step;  // ChainStepRecord::shard_fingerprint, shard steps
  std::map<std::string, std::string> by_path;
};

Fingerprinted run_with_fingerprints(const ChainManifest& chain, const GoldenSource& goldens,
                                    bool prefetch) {
  Fingerprinted out;
  ChainRunOptions o;
  o.goldens = &goldens;
  o.prefetch = prefetch;
  o.fingerprints = &out.by_path;
  auto r = run_chain(chain, o);
  if (!r) {
    out.status = r.status();
    return out;
  }
  for (const ChainStepRecord& s : r->steps) {
    if (!s.is_combine) out.per_step.push_back(s.shard_fingerprint);
  }
  return out;
}

TEST(ShardPrefetch, FingerprintsAreTheSameBytesWithAndWithoutIt) {
  auto chain = load_chain_manifest(kManifest);
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  auto g = open_golden_source(kSampleDir + "goldens");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Fingerprinted on = run_with_fingerprints(*chain, **g, true);
  const Fingerprinted off = run_with_fingerprints(*chain, **g, false);
  ASSERT_TRUE(on.status.is_ok()) << on.status.to_string();
  ASSERT_TRUE(off.status.is_ok()) << off.status.to_string();
  EXPECT_EQ(on.per_step, off.per_step);
  EXPECT_EQ(on.by_path, off.by_path);
  // And each is the fingerprint of its own step's shard, opened here on its own.
  std::vector<std::string> expected;
  for (const ChainStep& s : chain->steps) {
    if (s.is_combine) continue;
    auto shard = Shard::open(s.shard);
    ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
    auto fp = (*shard)->fingerprint();
    ASSERT_TRUE(fp.is_ok()) << fp.status().to_string();
    expected.push_back(*fp);
  }
  ASSERT_GE(expected.size(), 3u);
  EXPECT_EQ(on.per_step, expected);
}

TEST(ShardPrefetch, AFingerprintErrorIsReportedByItsOwnStepWithTodaysMessage) {
  // The third step's shard, copied with a symbolic link out of the shard among its weight
  // files: Shard::open succeeds, its fingerprint fails. The helper meets the failure first (it
  // fingerprints the shard while step 2 computes); the step must report it as without prefetch.
  auto chain = load_chain_manifest(kManifest);
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  const fs::path dir = fs::temp_directory_path() / ("sg_fp_error_" + std::to_string(::getpid()));
  const fs::path copy = dir / "L0_moe_p0_lut4.mlpackage";
  const fs::path weights = copy_shard(chain->steps[2].shard, copy);
  ASSERT_FALSE(weights.empty());
  fs::create_symlink("/etc/hostname", weights / "outside.bin");
  const ChainManifest broken =
      edited("\"" + chain->steps[2].shard_written + "\"", "\"" + copy.string() + "\"");
  auto g = open_golden_source(kSampleDir + "goldens");
  ASSERT_TRUE(g.is_ok());
  std::string messages[2];
  for (int prefetch = 0; prefetch < 2; ++prefetch) {
    const Fingerprinted r = run_with_fingerprints(broken, **g, prefetch == 1);
    ASSERT_FALSE(r.status.is_ok());
    EXPECT_EQ(r.status.code(), ErrorCode::kFormat) << r.status.to_string();
    messages[prefetch] = r.status.to_string();
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[1].find("steps[2]"), std::string::npos) << messages[1];
  EXPECT_NE(messages[1].find("outside.bin"), std::string::npos) << messages[1];
  fs::remove_all(dir);
}

TEST(ShardPrefetch, AnErrorOfAStepTheChainNeverReachesIsNeverReported) {
  // Step 2 fails after it ran (its output port does not exist) while the helper opens step 3's
  // shard, which is missing: the chain's error is step 2's, with and without prefetch.
  auto chain = load_chain_manifest(kManifest);
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  auto text = read_file(kManifest);
  ASSERT_TRUE(text.is_ok());
  std::string t = *text;
  const std::string port = "\"moe_out\": \"L0.moe_p0\"";
  const std::string third = "\"" + chain->steps[3].shard_written + "\"";
  ASSERT_NE(t.find(port), std::string::npos);
  t.replace(t.find(port), port.size(), "\"no_such_port\": \"L0.moe_p0\"");
  ASSERT_NE(t.find(third), std::string::npos) << third;
  t.replace(t.find(third), third.size(), "\"" + chain->steps[3].shard_written + ".missing\"");
  auto broken = parse_chain_manifest(t, kManifest, false);
  ASSERT_TRUE(broken.is_ok()) << broken.status().to_string();
  const auto messages = testing::failures_without_and_with_prefetch(*broken, ErrorCode::kShape);
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[1].find("steps[2]"), std::string::npos) << messages[1];
  EXPECT_EQ(messages[1].find(".missing"), std::string::npos) << messages[1];
}

TEST(ShardPrefetch, HandsOverTheShardItOpenedWithItsWeightPagesFaultedIn) {
  auto chain = load_chain_manifest(kManifest);
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  const ChainStep& step = chain->steps[1];
  ShardPrefetcher p;
  p.open_ahead(step.shard, step.function, true);
  auto shard = p.take(step.shard);
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  EXPECT_GT(p.bytes_populated(), 0u) << "the weight file was not faulted in";
  auto alone = Shard::open(step.shard);
  ASSERT_TRUE(alone.is_ok());
  EXPECT_EQ((*shard)->fingerprint().value(), (*alone)->fingerprint().value());
  // A path nobody asked for is opened on the caller.
  auto other = p.take(chain->steps[2].shard);
  ASSERT_TRUE(other.is_ok()) << other.status().to_string();
  EXPECT_EQ((*other)->path(), chain->steps[2].shard);
}

TEST(ShardPrefetch, AFifoInTheShardNeverBlocksTheHelper) {
  // A FIFO with no writer among the weight files: opening it to read ahead without O_NONBLOCK
  // would wait forever, and take() with it.
  auto chain = load_chain_manifest(kManifest);
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  const fs::path dir = fs::temp_directory_path() / ("sg_fifo_" + std::to_string(::getpid()));
  const fs::path copy = dir / "shard.mlpackage";
  const fs::path weights = copy_shard(chain->steps[1].shard, copy);
  ASSERT_FALSE(weights.empty());
  ASSERT_EQ(::mkfifo((weights / "fifo").c_str(), 0600), 0) << std::strerror(errno);
  {
    ShardPrefetcher p;
    p.open_ahead(copy.string(), chain->steps[1].function, true);
    auto shard = p.take(copy.string());
    ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
    EXPECT_GT(p.bytes_populated(), 0u);
  }
  fs::remove_all(dir);
}

// Records the thread that releases it.
struct Tracked {
  Tracked(std::atomic<bool>* r, std::thread::id* b) : released(r), by(b) {}
  Tracked(const Tracked&) = delete;
  std::atomic<bool>* released;
  std::thread::id* by;
  ~Tracked() {
    *by = std::this_thread::get_id();
    released->store(true);
  }
};

TEST(ShardPrefetch, DisposesOnTheHelperThreadAndItsDestructorReleasesTheRest) {
  std::atomic<bool> released{false};
  std::thread::id by;
  {
    ShardPrefetcher p;
    p.dispose(std::make_shared<Tracked>(&released, &by));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!released.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(released.load());
    EXPECT_NE(by, std::this_thread::get_id()) << "released on the calling thread";
  }
  // A disposal still queued when the prefetcher goes is released, not leaked; an open asked
  // for and never taken is dropped silently.
  std::atomic<bool> second{false};
  std::thread::id by2;
  {
    ShardPrefetcher p;
    p.open_ahead(kSampleDir + "shards/no_such_shard.mlpackage", "main", true);
    p.dispose(std::make_shared<Tracked>(&second, &by2));
  }
  EXPECT_TRUE(second.load());
}

}  // namespace
}  // namespace sg
