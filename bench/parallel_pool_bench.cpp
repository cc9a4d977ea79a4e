// Cost of one parallel_for call on 2 threads with trivial work per range, against creating and
// joining one std::thread per call (what parallel_for did before the worker pool). Kernels make
// hundreds of such calls per shard step.
//
//   BUILD/bench/parallel_pool_bench --benchmark_repetitions=3
#include "../runtime/core/parallel.h"

#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>

namespace {

void BM_parallel_for_pool(benchmark::State& state) {
  sg::ParallelScope scope(2);
  std::atomic<long> sink{0};
  for (auto _ : state) {
    sg::parallel_for(2, 1, [&sink](int64_t b, int64_t e) { sink += e - b; });
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_parallel_for_pool)->MeasureProcessCPUTime()->UseRealTime();

void BM_thread_per_call(benchmark::State& state) {
  std::atomic<long> sink{0};
  for (auto _ : state) {
    std::thread t([&sink] { sink += 1; });
    sink += 1;
    t.join();
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_thread_per_call)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
