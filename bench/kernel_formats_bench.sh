#!/usr/bin/env bash
# The 8-token product's kernel in every weight format, in one run beside the machine's FMA
# peak (issue 11, "Done means" bullet 1, at the kernel): gemm_bench's BM_gemm_x_wt_f16 and
# BM_gemm_x_wt_stream/<format> at 8 tokens, on a 192-row weight that stays in L2 in every
# format (the kernels' instructions alone) and on the full-size shards' two expert shapes
# (from memory). Prints each rate as a fraction of the peak and each format's time over fp16's
# on the same shape. 1 thread, process CPU time, medians; repetitions interleaved in random
# order, so a ratio never compares two different minutes of a shared host.
#
#   bench/kernel_formats_bench.sh [BUILD_DIR] [RUNS]
# RUNS: repetitions of each benchmark, at least 2 (default 5); the medians are reported.
# BUILD_DIR: a build with the tests and the benchmarks (both on by default), Release.
set -euo pipefail
build=${1:-build}
runs=${2:-5}
. "$(dirname "$0")/bench_common.sh"
require_repetitions "$runs"
out=$(mktemp -d /tmp/kernel_formats.XXXXXX)
cmake --build "$build" -j2 --target floors_bench gemm_bench > "$out/build.log"
run_header
gb=(--benchmark_repetitions="$runs" --benchmark_report_aggregates_only=true)
"$build/bench/floors_bench" --benchmark_filter='fma_peak_avx512/1' "${gb[@]}" \
  --benchmark_out="$out/floors.json" --benchmark_out_format=json > /dev/null 2> "$out/floors.log"
"$build/bench/gemm_bench" --benchmark_filter='^BM_gemm_x_wt_(f16|stream/[a-z0-9]+)/8/(192/2048|12288/2048|2048/12288)$' \
  "${gb[@]}" --benchmark_min_time=0.2 --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out/gemm.json" --benchmark_out_format=json > /dev/null 2> "$out/gemm.log"
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$(dirname "$0")" <<'PY'
import sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from summarize_exec_bench import load_gbench  # the one reader of Google Benchmark medians
peak = next(iter(load_gbench(f"{out}/floors.json")[1].values()))["flop_per_s_cpu"]
rows = {}
for name, r in load_gbench(f"{out}/gemm.json")[1].items():
    parts = name.split("/")  # BM_gemm_x_wt_f16/8/N/K or BM_gemm_x_wt_stream/<format>/8/N/K
    fmt = "fp16" if parts[0].endswith("_f16") else parts[1]
    rows[(fmt, f"{parts[-2]}x{parts[-1]}")] = r
print(f"peak FMA, 1 thread (CPU time): {peak / 1e9:.1f} GFLOP/s")
print(f"{'format':<8} {'rows x K':<11} {'ms':>8} {'GFLOP/s':>8} {'of peak':>8} {'x floor':>8} {'/ fp16':>7}")
for shape in ("192x2048", "12288x2048", "2048x12288"):
    base = rows.get(("fp16", shape))
    for fmt in ("fp16", "lut4", "int8", "int8pc", "int4blk"):
        r = rows.get((fmt, shape))
        if r is None:
            continue
        frac = r["flop_per_s"] / peak
        rel = r["cpu_ms"] / base["cpu_ms"] if base else float("nan")
        print(f"{fmt:<8} {shape:<11} {r['cpu_ms']:8.3f} {r['flop_per_s'] / 1e9:8.1f} {frac:8.2f} {1 / frac:8.2f} {rel:7.2f}")
PY
echo "raw results: $out"
