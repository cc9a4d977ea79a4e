// Bringing the next shard's files into the page cache on a helper thread.
//
// A chain runs its shards one after another, and on a cold cache each shard's weights are read
// from disk when its first op touches them: the computation waits for the disk. While step i
// computes, the prefetcher asks the kernel to read step i+1's files (readahead(2) on each), so
// that step starts on cached pages. It only ever touches the page cache: nothing is mapped or
// kept, results cannot change, and every error is ignored (the real open reports it).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace sg {

class ShardPrefetcher {
 public:
  ShardPrefetcher() = default;
  // Stops the current request between two chunks and joins the helper thread.
  ~ShardPrefetcher();
  ShardPrefetcher(const ShardPrefetcher&) = delete;
  ShardPrefetcher& operator=(const ShardPrefetcher&) = delete;

  // Reads ahead every regular file under `path` (a shard directory, walked recursively without
  // following symbolic links to directories; a regular file is read ahead itself). Replaces a
  // request still in progress: the chain has moved on, so the old one is dropped. The helper
  // thread is started on the first request.
  void request(const std::string& path);

  // Bytes for which readahead was requested so far (tests and the bench).
  uint64_t bytes_requested() const;

 private:
  void loop();
  void read_ahead(const std::string& path);
  bool superseded() const;  // a newer request or stop is pending (called with mu_ unlocked)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  std::string pending_;
  bool has_pending_ = false;
  bool stop_ = false;
  uint64_t bytes_ = 0;
};

}  // namespace sg
