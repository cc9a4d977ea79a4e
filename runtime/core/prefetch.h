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
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace sg {

class ShardPrefetcher {
 public:
  ShardPrefetcher() = default;
  // Stops the helper between two chunks, drops what is still queued, and joins it.
  ~ShardPrefetcher();
  ShardPrefetcher(const ShardPrefetcher&) = delete;
  ShardPrefetcher& operator=(const ShardPrefetcher&) = delete;

  // Reads ahead every regular file under `path` (a shard directory, walked recursively without
  // following symbolic links to directories; a regular file is read ahead itself), after the
  // requests before it. Requests are never dropped half-way: readahead(2) only queues reads,
  // and a short step (an attention shard computes in 3 ms) often asks for the shard after next
  // while the helper is still queueing the next one's 151 MB; dropping that remainder left it
  // to page faults. The helper thread is started on the first request.
  void request(const std::string& path);

  // Bytes for which readahead was requested so far (tests and the bench).
  uint64_t bytes_requested() const;

 private:
  void loop();
  void read_ahead(const std::string& path);
  bool stopping() const;  // the destructor has asked the helper to stop (mu_ unlocked)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  std::deque<std::string> pending_;
  bool stop_ = false;
  uint64_t bytes_ = 0;
};

}  // namespace sg
