// parallel_for: splits independent output ranges across a few threads.
//
// Kernels call it only over ranges whose elements are computed independently (output rows,
// channels, batch items), never to split a reduction, so every output element is computed by
// the same instruction sequence whatever the thread count: results are bit-identical for 1 or
// N threads. The thread count is a per-thread setting that the executor (or a test) installs
// with ParallelScope for the duration of a run; the default is 1 (no other thread is used).
// The ranges run on one process-wide pool of threads (core/worker_pool.h), created on first use
// with as many threads as the largest call has asked for and reused by every call after it.
#pragma once

#include <cstdint>
#include <functional>

namespace sg {

// Threads the calling thread's kernels may use (>= 1).
int parallel_threads();

// Installs a thread count for the current thread until the scope ends (restores the previous).
class ParallelScope {
 public:
  explicit ParallelScope(int threads);
  ~ParallelScope();
  ParallelScope(const ParallelScope&) = delete;
  ParallelScope& operator=(const ParallelScope&) = delete;

 private:
  int previous_;
};

// How many parallel_for calls made on this thread so far ran on more than one thread. Tests
// read it before and after a kernel to see that the kernel really split its work.
int64_t parallel_split_calls();

// Calls fn(begin, end) over disjoint ranges that together cover [0, n). Ranges hold at least
// `grain` indices (except possibly the last), so small loops stay on the calling thread.
// Nested calls from inside a worker run serially. Kernels report errors through Status, not
// exceptions; should fn throw anyway, every range still runs to its end and the first exception
// is rethrown to the caller (no thread is left running, nothing hangs).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Threads the pool has created since the process started. It stays constant across calls once
// the largest thread count in use has been reached.
int64_t parallel_pool_threads_created();

}  // namespace sg
