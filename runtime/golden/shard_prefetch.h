// Opening the next shards of a chain, and closing the last one, on helper threads.
//
// A chain runs its shards one after another. Besides its computation every step opens its shard
// (parse the program), maps its weight files and takes a page fault on every weight page it
// touches first, fingerprints the shard when a report is written (sha256 of every weight byte),
// and unmaps it all afterwards. None of that depends on the step before, so while step i
// computes, the helper queues the reads of step i+1's files (readahead(2) by 8 MiB), opens its
// shard, fingerprints it if asked, maps its weight files and faults their pages in
// (MADV_POPULATE_READ), and unmaps and destroys step i-1's shard.
//
// Results cannot change: the compute thread gets the same Shard object it would have opened
// itself, whose weight views point into the same mappings. Errors cannot move: the result of
// the early open (a Shard, or the error Shard::open returned) is handed over only when the chain
// reaches that step, and the fingerprint and mapping errors are not reported by the helper at
// all. Shard caches neither a failed fingerprint nor a failed blob file, so the step's own
// fingerprint() and its executor meet the same error with the same message as without the
// helper. A request for a step the chain never reaches is dropped with the prefetcher.
#pragma once

#include "shardgate/shard.h"
#include "shardgate/status.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sg {

class ShardPrefetcher {
 public:
  ShardPrefetcher() = default;
  // Stops the helpers between two jobs (a populate stops between two chunks), joins them, then
  // drops what is still queued: unopened requests are never reported, and objects waiting to be
  // disposed of are released on the calling thread.
  ~ShardPrefetcher();
  ShardPrefetcher(const ShardPrefetcher&) = delete;
  ShardPrefetcher& operator=(const ShardPrefetcher&) = delete;

  // Queues the open of the shard at `path` for a later take(): read ahead, parse, fingerprint when
  // `fingerprint` (cached in the Shard), map every weight file that function `function` reads
  // and fault its pages in. The helper threads start on the first job; jobs run in the order
  // asked, two at a time.
  void open_ahead(const std::string& path, const std::string& function, bool fingerprint);

  // The shard at `path`: the result of the oldest open_ahead() when it was for `path` (waiting
  // for it if the helper is still at it), else Shard::open(path) on the calling thread.
  Result<std::shared_ptr<Shard>> take(const std::string& path);

  // Releases `object` on a helper thread once a helper is free (a finished step's shard:
  // unmapping its weight files costs the compute thread nothing). Not for owned tensors the
  // memory budget counts: the next step must see those gone. Held until then; released by
  // the destructor if no helper got to it.
  void dispose(std::shared_ptr<const void> object);

  // Bytes of weight mappings faulted in so far (tests and the bench).
  uint64_t bytes_populated() const;

 private:
  struct Pending {
    std::string path;
    std::future<Result<std::shared_ptr<Shard>>> result;
  };

  void push(std::function<void()> job);
  void loop();
  // Maps the weight files `function` of `shard` reads and faults their pages in; every failure
  // is left to the executor, which opens the same files and reports it.
  void populate(const Shard& shard, const std::string& function);
  bool stopping() const;  // the destructor has asked the helper to stop (mu_ unlocked)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Two helpers: with two shards asked for ahead (chain_runner.cpp), the fingerprints of both
  // are hashed at once; sha256 of one file is one sequential stream at ~1 GB/s, and it is
  // what a fingerprinted chain waits for.
  static constexpr int kHelperThreads = 2;
  std::vector<std::thread> threads_;
  bool no_threads_ = false;  // starting them failed
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  uint64_t populated_ = 0;
  std::deque<Pending> pending_;  // opens asked for, oldest first (used by the caller only)
};

}  // namespace sg
