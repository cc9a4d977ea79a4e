// floors_bench: this machine's compute and memory limits, measured in the same run as the
// interpreter benchmarks, so that every report divides by floors taken on the machine (and
// under the load) it ran on, not by numbers copied from a document. Method:
//
//  - fma_peak: 10 independent chains of 8-lane fp32 FMAs held in named variables (an array
//    of accumulators made gcc spill them to the stack and read 40% of the peak), no memory
//    traffic. 10 chains cover the 4-cycle latency of 2 FMA pipes. FLOP = iterations · 10 · 16.
//  - read_bw: sum of a 1 GiB buffer (far larger than any cache) with 4 vector accumulators;
//    the buffer asks for transparent huge pages (fewer TLB misses in a streaming read).
//
// Each benchmark takes a thread count (1 or 2). Threads are started inside the timed region
// and each runs the same work on its own data; the time is wall time (manual timing), so the
// rate is what the machine delivered to all threads together. Threads are not pinned: the
// interpreter does not pin either, and on a shared machine pinning only adds queueing.
//
// On a machine shared with other work the wall rate measures our share of the cores, not the
// cores. Each benchmark therefore also reports a CPU-time rate: work / (process CPU seconds /
// threads), i.e. what the threads achieved while they were actually running. On an idle
// machine the two agree; under load the CPU-time rate is the estimate of the machine's limit
// (it still includes cache and memory contention from the other work).
//
// Counters (JSON): flop_per_s, flop_per_s_cpu, read_bytes_per_s, read_bytes_per_s_cpu. The
// run script takes the median of the repetitions and converts to GFLOP/s and GB/s (10^9).
#include <benchmark/benchmark.h>

#include <sys/mman.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SG_FLOORS_X86 1
#endif

namespace {

constexpr int64_t kFmaChains = 10;
// 2^22 iterations · 160 FLOP ≈ 0.67 GFLOP per thread: ~7 ms at the expected per-core peak,
// long enough that thread start-up is noise, short enough for many repetitions.
constexpr int64_t kFmaIterations = int64_t{1} << 22;
constexpr size_t kReadBytes = size_t{1} << 30;

#if SG_FLOORS_X86
// The target attribute keeps the probe an AVX2+FMA probe even in builds without
// -march=native; the benchmark checks the CPU before calling it.
__attribute__((target("avx2,fma"))) float fma_chains(int64_t iterations, float seed) {
  // Multiplier just below 1 plus a small addend: values converge to a fixed point and never
  // overflow or become subnormal, so every FMA runs at full speed.
  const __m256 m = _mm256_set1_ps(0.9999999f);
  const __m256 c = _mm256_set1_ps(1e-7f);
  __m256 a0 = _mm256_set1_ps(seed + 0.0f), a1 = _mm256_set1_ps(seed + 0.1f);
  __m256 a2 = _mm256_set1_ps(seed + 0.2f), a3 = _mm256_set1_ps(seed + 0.3f);
  __m256 a4 = _mm256_set1_ps(seed + 0.4f), a5 = _mm256_set1_ps(seed + 0.5f);
  __m256 a6 = _mm256_set1_ps(seed + 0.6f), a7 = _mm256_set1_ps(seed + 0.7f);
  __m256 a8 = _mm256_set1_ps(seed + 0.8f), a9 = _mm256_set1_ps(seed + 0.9f);
  for (int64_t i = 0; i < iterations; ++i) {
    a0 = _mm256_fmadd_ps(a0, m, c);
    a1 = _mm256_fmadd_ps(a1, m, c);
    a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c);
    a4 = _mm256_fmadd_ps(a4, m, c);
    a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c);
    a7 = _mm256_fmadd_ps(a7, m, c);
    a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(a8, a9));
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

// The same probe with 16-lane vectors. On Zen 4 AVX-512 runs on the same two 256-bit FMA pipes
// (so it matches the AVX2 figure); on CPUs with 512-bit FMA units it doubles it. The floor
// is the larger of the two, whichever ISA the interpreter is built for.
__attribute__((target("avx512f"))) float fma_chains_512(int64_t iterations, float seed) {
  const __m512 m = _mm512_set1_ps(0.9999999f);
  const __m512 c = _mm512_set1_ps(1e-7f);
  __m512 a0 = _mm512_set1_ps(seed + 0.0f), a1 = _mm512_set1_ps(seed + 0.1f);
  __m512 a2 = _mm512_set1_ps(seed + 0.2f), a3 = _mm512_set1_ps(seed + 0.3f);
  __m512 a4 = _mm512_set1_ps(seed + 0.4f), a5 = _mm512_set1_ps(seed + 0.5f);
  __m512 a6 = _mm512_set1_ps(seed + 0.6f), a7 = _mm512_set1_ps(seed + 0.7f);
  __m512 a8 = _mm512_set1_ps(seed + 0.8f), a9 = _mm512_set1_ps(seed + 0.9f);
  for (int64_t i = 0; i < iterations; ++i) {
    a0 = _mm512_fmadd_ps(a0, m, c);
    a1 = _mm512_fmadd_ps(a1, m, c);
    a2 = _mm512_fmadd_ps(a2, m, c);
    a3 = _mm512_fmadd_ps(a3, m, c);
    a4 = _mm512_fmadd_ps(a4, m, c);
    a5 = _mm512_fmadd_ps(a5, m, c);
    a6 = _mm512_fmadd_ps(a6, m, c);
    a7 = _mm512_fmadd_ps(a7, m, c);
    a8 = _mm512_fmadd_ps(a8, m, c);
    a9 = _mm512_fmadd_ps(a9, m, c);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(a8, a9));
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  float r = 0;
  for (float v : out) r += v;
  return r;
}

bool have_avx512() { return __builtin_cpu_supports("avx512f"); }

__attribute__((target("avx2"))) float read_sum(const float* p, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(p + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(p + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(p + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(p + i + 24));
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  float r = out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
  for (; i < n; ++i) r += p[i];
  return r;
}

bool have_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#else
bool have_avx2_fma() { return false; }
bool have_avx512() { return false; }
float fma_chains(int64_t, float) { return 0; }
float fma_chains_512(int64_t, float) { return 0; }
float read_sum(const float*, size_t) { return 0; }
#endif

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timing {
  double wall = 0;
  double cpu = 0;  // CPU seconds of all threads of the process
};

// Runs fn(thread_index) on `threads` threads (the caller is thread 0).
template <typename Fn>
Timing timed_on_threads(int threads, Fn fn) {
  const double c0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(fn, t);
  fn(0);
  for (auto& th : pool) th.join();
  Timing r;
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu = process_cpu_seconds() - c0;
  return r;
}

// Work per second of running time: `work` per iteration over the CPU seconds per thread.
double cpu_rate(double work_per_iteration, int64_t iterations, double cpu_total, int threads) {
  if (cpu_total <= 0) return 0;
  return work_per_iteration * static_cast<double>(iterations) / (cpu_total / threads);
}

// Argument: threads. fma_peak uses 8-lane (AVX2) vectors, fma_peak_avx512 16-lane ones.
void fma_peak(benchmark::State& state, int lanes) {
  if (lanes == 16 ? !have_avx512() : !have_avx2_fma()) {
    state.SkipWithError(lanes == 16 ? "the CPU lacks AVX-512F" : "the CPU lacks AVX2/FMA");
    return;
  }
  const int threads = static_cast<int>(state.range(0));
  // Half the iterations for 16 lanes: the same FLOP count per call.
  const int64_t iterations = lanes == 16 ? kFmaIterations / 2 : kFmaIterations;
  std::vector<float> sink(static_cast<size_t>(threads));
  double cpu = 0;
  for (auto _ : state) {
    const Timing t = timed_on_threads(threads, [&](int i) {
      const float seed = static_cast<float>(i);
      sink[static_cast<size_t>(i)] = lanes == 16 ? fma_chains_512(iterations, seed)
                                                 : fma_chains(iterations, seed);
    });
    state.SetIterationTime(t.wall);
    cpu += t.cpu;
    benchmark::DoNotOptimize(sink.data());
  }
  const double flop = static_cast<double>(iterations * kFmaChains * lanes * 2) * threads;
  state.counters["flop_per_s"] =
      benchmark::Counter(flop, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flop_per_s_cpu"] = cpu_rate(flop, state.iterations(), cpu, threads);
  state.counters["threads"] = threads;
}

void BM_fma_peak(benchmark::State& state) { fma_peak(state, 8); }
void BM_fma_peak_avx512(benchmark::State& state) { fma_peak(state, 16); }

// The 1 GiB buffer, allocated and written once per process (all pages faulted in before any
// timing), shared by every read_bw run.
const float* read_buffer() {
  static float* buffer = [] {
    void* p = nullptr;
    if (posix_memalign(&p, size_t{2} << 20, kReadBytes) != 0) return static_cast<float*>(nullptr);
    madvise(p, kReadBytes, MADV_HUGEPAGE);
    float* f = static_cast<float*>(p);
    const size_t n = kReadBytes / sizeof(float);
    for (size_t i = 0; i < n; ++i) f[i] = static_cast<float>(i & 1023) * 1e-3f;
    return f;
  }();
  return buffer;
}

void BM_read_bw(benchmark::State& state) {
  if (!have_avx2_fma()) {
    state.SkipWithError("the CPU lacks AVX2: no read bandwidth probe");
    return;
  }
  const float* buf = read_buffer();
  if (buf == nullptr) {
    state.SkipWithError("cannot allocate the 1 GiB read buffer");
    return;
  }
  const int threads = static_cast<int>(state.range(0));
  const size_t n = kReadBytes / sizeof(float);
  std::vector<float> sink(static_cast<size_t>(threads));
  double cpu = 0;
  for (auto _ : state) {
    const Timing timing = timed_on_threads(threads, [&](int t) {
      // Contiguous halves (or thirds...), each a multiple of 32 floats.
      const size_t per = n / static_cast<size_t>(threads) / 32 * 32;
      const size_t begin = per * static_cast<size_t>(t);
      const size_t len = t == threads - 1 ? n - begin : per;
      sink[static_cast<size_t>(t)] = read_sum(buf + begin, len);
    });
    state.SetIterationTime(timing.wall);
    cpu += timing.cpu;
    benchmark::DoNotOptimize(sink.data());
  }
  state.counters["read_bytes_per_s"] = benchmark::Counter(
      static_cast<double>(kReadBytes), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["read_bytes_per_s_cpu"] =
      cpu_rate(static_cast<double>(kReadBytes), state.iterations(), cpu, threads);
  state.counters["threads"] = threads;
}

BENCHMARK(BM_fma_peak)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fma_peak_avx512)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_bw)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
