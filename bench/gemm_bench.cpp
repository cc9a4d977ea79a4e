// gemm_bench: gemm_x_wt on the matmul shapes of the full-size benchmark shards, at 8 and 512
// tokens, 1 thread, fp16 weights (as the shards store them) and fp32 activations, with Eigen's
// fp32 GEMM on the same shapes as a peer (weights widened to fp32 once, outside the timing)
// when the build found Eigen (bench/CMakeLists.txt).
//
// BM_gemm_x_wt_stream/<format> (in builds with the tests, whose op harness makes the stream):
// the 8-token product of each compressed weight format of the benchmark shards, decoded in
// registers on an AVX-512 CPU: int8 (one scale per tensor), int8pc (per row), lut4 (a 16-entry
// fp16 palette per 32 rows) and int4blk (an fp16 scale per row and 32 columns). Each runs on
// the shard's two large shapes and on a 192-row weight, like BM_gemm_x_wt_f16/8/192/2048:
// every format of that one stays in L2 (fp16 768 KiB), so the kernels' instructions alone set
// its rate: its ratio to fp16 is what a format's decode costs where memory plays no part.
//
//   gemm_bench [--benchmark_* flags]
//   bench/kernel_formats_bench.sh [BUILD_DIR] [RUNS]   # the 8-token formats beside the FMA peak
//
// Arguments of each benchmark: M (tokens), N (weight rows), K. Time is process CPU time (the
// machine is shared; 1 thread). Counters: flop_per_s (2·M·N·K per CPU second). Divide by the
// fma peak of floors_bench (BM_fma_peak_avx512/1) measured in the same run for the fraction
// of peak: bench/many_tokens_bench.sh and bench/kernel_formats_bench.sh do both.
#include "ops/linear_kernel.h"
#include "shardgate/half.h"
#include "shardgate/op_context.h"
#include "shardgate/tensor.h"
#if SG_BENCH_INT4
#include "ops/constexpr_stream.h"
#include "support/op_harness.h"
#endif

#include <benchmark/benchmark.h>
#if SG_BENCH_EIGEN
#include <Eigen/Core>
#endif
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Operands {
  std::vector<float> x;
  std::vector<uint16_t> w16;
  std::vector<float> w32;
  std::vector<float> y;
};

Operands make(int64_t M, int64_t N, int64_t K) {
  Operands o;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  o.x.resize(static_cast<size_t>(M * K));
  for (float& v : o.x) v = d(rng);
  o.w16.resize(static_cast<size_t>(N * K));
  o.w32.resize(o.w16.size());
  for (size_t i = 0; i < o.w16.size(); ++i) {
    o.w16[i] = sg::f32_to_f16(d(rng) * 0.05f);
    o.w32[i] = sg::f16_to_f32(o.w16[i]);
  }
  o.y.resize(static_cast<size_t>(M * N));
  return o;
}

void report(benchmark::State& state, double cpu, int64_t M, int64_t N, int64_t K) {
  const double flop = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  state.counters["flop_per_s"] = flop * static_cast<double>(state.iterations()) / cpu;
  state.counters["cpu_ms"] = cpu / static_cast<double>(state.iterations()) * 1e3;
}

// gemm_x_wt of o.x by w into o.y, timed in process CPU time.
void time_gemm(benchmark::State& state, Operands& o, const sg::WeightRows& w, int64_t M, int64_t N, int64_t K) {
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = cpu_seconds();
    sg::gemm_x_wt(o.x.data(), M, K, w, nullptr, o.y.data(), N);
    cpu += cpu_seconds() - c0;
    benchmark::DoNotOptimize(o.y.data());
  }
  report(state, cpu, M, N, K);
}

void BM_gemm_x_wt_f16(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  Operands o = make(M, N, K);
  sg::WeightRows w;
  w.dtype = sg::DType::kF16;
  w.data = o.w16.data();
  w.n = N;
  w.k = K;
  w.ld = K;
  time_gemm(state, o, w, M, N, K);
}

#if SG_BENCH_INT4
// The benchmark shards' compressed weight formats (tests/generators/sgfix/compress.py).
enum class Format { kInt8, kInt8pc, kLut4, kInt4blk };

sg::Tensor random_codes(sg::DType dt, const sg::Shape& shape, std::mt19937& rng) {
  sg::Tensor codes = sg::Tensor::zeros(dt, shape).value();
  auto* bytes = reinterpret_cast<uint8_t*>(codes.mutable_raw());
  for (size_t i = 0; i < codes.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(rng());
  return codes;
}

sg::Tensor random_f16(const sg::Shape& shape, float lo, float hi, std::mt19937& rng) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<uint16_t> v(static_cast<size_t>(n));
  std::uniform_real_distribution<float> d(lo, hi);
  for (uint16_t& h : v) h = sg::f32_to_f16(d(rng));
  return sg::Tensor::from_f16_bits(shape, v);
}

// An [N, K] weight in format f, made into a stream by the executor's own range decoder
// (stream_constexpr, through the tests' op harness), so the product decodes it exactly as it
// decodes the shard of that format: in registers at 8 tokens on an AVX-512 CPU. Scales
// 1e-3-3e-2 (every 8-bit product a normal fp16 number, as in the shards).
sg::StreamedWeight make_stream(Format f, int64_t N, int64_t K) {
  std::mt19937 rng(7);
  using In = sg::testing::HarnessInput;
  std::string op = "constexpr_blockwise_shift_scale";
  std::vector<In> in;
  switch (f) {
    case Format::kInt8:
      in = {In::tensor("data", random_codes(sg::DType::kI8, {N, K}, rng)),
            In::tensor("scale", random_f16({1, 1}, 1e-3f, 3e-2f, rng))};
      break;
    case Format::kInt8pc:
      in = {In::tensor("data", random_codes(sg::DType::kI8, {N, K}, rng)),
            In::tensor("scale", random_f16({N, 1}, 1e-3f, 3e-2f, rng))};
      break;
    case Format::kLut4:
      op = "constexpr_lut_to_dense";
      in = {In::tensor("indices", random_codes(sg::DType::kU4, {N, K}, rng)),
            In::tensor("lut", random_f16({N / 32, 1, 16, 1}, -0.1f, 0.1f, rng))};
      break;
    case Format::kInt4blk:
      in = {In::tensor("data", random_codes(sg::DType::kI4, {N, K}, rng)),
            In::tensor("scale", random_f16({N, K / 32}, 1e-3f, 3e-2f, rng))};
      break;
  }
  std::optional<sg::StreamedWeight> made;
  const sg::Status st = sg::testing::with_op_context(op, in, [&made](sg::OpContext& ctx) {
    SG_ASSIGN_OR_RETURN(made, sg::stream_constexpr(ctx));
    return sg::Status::ok();
  });
  if (!st.is_ok() || !made || !made->registers) {
    std::fprintf(stderr, "gemm_bench: no register stream: %s\n", st.to_string().c_str());
    std::abort();
  }
  return std::move(*made);
}

void BM_gemm_x_wt_stream(benchmark::State& state, Format f) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  Operands o = make(M, 0, K);
  o.y.resize(static_cast<size_t>(M * N));
  const sg::StreamedWeight wt = make_stream(f, N, K);
  sg::WeightRows w;
  w.dtype = sg::DType::kF16;
  w.n = N;
  w.k = K;
  w.ld = K;
  w.stream = &wt;
  time_gemm(state, o, w, M, N, K);
}
#endif

#if SG_BENCH_EIGEN
// Eigen's own blocked GEMM, fp32 weights resident (what a library user would hold): Y = X · Wᵀ.
void BM_eigen_f32(benchmark::State& state) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  Operands o = make(M, N, K);
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> X(o.x.data(), M, K);
  const Eigen::Map<const RowMajor> W(o.w32.data(), N, K);
  Eigen::Map<RowMajor> Y(o.y.data(), M, N);
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = cpu_seconds();
    Y.noalias() = X * W.transpose();
    cpu += cpu_seconds() - c0;
    benchmark::DoNotOptimize(o.y.data());
  }
  report(state, cpu, M, N, K);
}
#endif

// The matmuls of the full-size shards (tests/generators/sgfix/shards.py, config FULL):
// MoE router 16×2048, experts_gate / experts_up 12288×2048, experts_down 2048×12288;
// attention q/o 2048×2048, k/v 256×2048.
void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t M : {8, 512}) {
    for (auto [N, K] : {std::pair<int64_t, int64_t>{16, 2048}, {12288, 2048}, {2048, 12288}, {2048, 2048},
                        {256, 2048}}) {
      b->Args({M, N, K});
    }
  }
}

// The 8-token shapes of every weight format: the 192-row weight that stays in L2, then the
// shard's expert shapes from memory.
void shapes8(benchmark::internal::Benchmark* b) {
  for (auto [N, K] : {std::pair<int64_t, int64_t>{192, 2048}, {12288, 2048}, {2048, 12288}}) b->Args({8, N, K});
}

BENCHMARK(BM_gemm_x_wt_f16)->Apply(shapes)->Args({8, 192, 2048})->Unit(benchmark::kMillisecond);
// The 8-token fp16 kernel's fixed costs per call and per row group: 96 rows in L2, 256-4096
// columns (the rate grows with K as they spread over more steps).
BENCHMARK(BM_gemm_x_wt_f16)->ArgsProduct({{8}, {96}, {256, 512, 1024, 2048, 4096}})->Unit(benchmark::kMillisecond);
#if SG_BENCH_INT4
BENCHMARK_CAPTURE(BM_gemm_x_wt_stream, int8, Format::kInt8)->Apply(shapes8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_gemm_x_wt_stream, int8pc, Format::kInt8pc)->Apply(shapes8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_gemm_x_wt_stream, lut4, Format::kLut4)->Apply(shapes8)->Unit(benchmark::kMillisecond);
// int4blk also on the 768-row weight of the Xeon measurements (bench/README.md).
BENCHMARK_CAPTURE(BM_gemm_x_wt_stream, int4blk, Format::kInt4blk)
    ->Apply(shapes8)
    ->Args({8, 768, 2048})
    ->Unit(benchmark::kMillisecond);
#endif
#if SG_BENCH_EIGEN
BENCHMARK(BM_eigen_f32)->Apply(shapes)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
