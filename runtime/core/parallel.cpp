#include "core/parallel.h"

#include "core/worker_pool.h"

#include <algorithm>

namespace sg {
namespace {

thread_local int t_threads = 1;
// Set inside worker threads so that a kernel calling parallel_for from a worker stays serial.
thread_local bool t_in_worker = false;
thread_local int64_t t_split_calls = 0;

// More threads than this is never useful on the machines this tool targets and bounds the
// cost of a bad setting.
constexpr int kMaxThreads = 64;

}  // namespace

int parallel_threads() { return t_threads; }

int64_t parallel_split_calls() { return t_split_calls; }

int64_t parallel_pool_threads_created() { return detail::pool_threads_created(); }

ParallelScope::ParallelScope(int threads) : previous_(t_threads) {
  t_threads = std::clamp(threads, 1, kMaxThreads);
}

ParallelScope::~ParallelScope() { t_threads = previous_; }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int64_t workers =
      t_in_worker ? 1 : std::min<int64_t>(static_cast<int64_t>(t_threads), max_chunks);
  if (workers <= 1) {
    fn(0, n);
    return;
  }
  // Contiguous, nearly equal ranges: worker w takes [w*n/workers, (w+1)*n/workers). The split
  // depends on n, grain and the thread count only, never on which thread runs a range.
  auto range_of = [n, workers](int64_t w) { return n / workers * w + std::min(w, n % workers); };
  ++t_split_calls;
  detail::pool_run(workers, [&fn, &range_of](int64_t w) {
    // Whoever runs a range (a pool thread or this caller) must not fan out again from it.
    struct WorkerFlag {
      bool previous = t_in_worker;
      WorkerFlag() { t_in_worker = true; }
      ~WorkerFlag() { t_in_worker = previous; }
    } flag;
    fn(range_of(w), range_of(w + 1));
  });
}

}  // namespace sg
