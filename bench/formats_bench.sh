#!/usr/bin/env bash
# 8-token forward of the full-size MoE shard in every weight format, in one run beside the
# machine's floors (issue 11, "Done means" bullet 1): 1 thread, fp16 storage, steady state,
# process CPU time, medians. Prints each format's time over the compute floor (weight FLOP /
# 1-thread AVX-512 FMA peak) and over the memory floor (weight file bytes / 1-thread read
# bandwidth).
#
#   bench/formats_bench.sh [FULL_DIR] [BUILD_DIR] [RUNS]
# RUNS: repetitions of each benchmark, at least 2 (default 5); the medians are reported.
# FULL_DIR (default /tmp/fullsize) needs moe_{fp16,lut4,int8,int8pc,int4blk}.mlpackage:
#   /opt/ctvenv/bin/python tests/generators/generate_fixtures.py --full DIR --full-variants fp16,lut4,int8,int8pc,int4blk
set -euo pipefail
full=${1:-/tmp/fullsize}
build=${2:-build}
runs=${3:-5}
. "$(dirname "$0")/bench_common.sh"
require_repetitions "$runs"
out=$(mktemp -d /tmp/formats.XXXXXX)
formats=(fp16 lut4 int8 int8pc int4blk)
cmake --build "$build" -j2 --target floors_bench exec_bench > "$out/build.log"
args=()
for f in "${formats[@]}"; do
  args+=(--shard "$full/moe_$f.mlpackage")
  cat "$full/moe_$f.mlpackage/Data/com.apple.CoreML/weights/weight.bin" > /dev/null
done
run_header
gb=(--benchmark_repetitions="$runs" --benchmark_report_aggregates_only=true)
"$build/bench/floors_bench" --benchmark_filter='fma_peak_avx512/1|read_bw/1' "${gb[@]}" \
  --benchmark_out="$out/floors.json" --benchmark_out_format=json > /dev/null
"$build/bench/exec_bench" "${args[@]}" --threads 1 --precision fp16 --mode steady "${gb[@]}" \
  --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out/exec.json" --benchmark_out_format=json > /dev/null
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$(dirname "$0")" <<'PY'
import json, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from summarize_exec_bench import load_gbench  # the one reader of Google Benchmark medians
def medians(name):
    return load_gbench(f"{out}/{name}.json")[1]
fl = medians("floors")
peak = next(r["flop_per_s_cpu"] for n, r in fl.items() if "fma_peak" in n)
bw = next(r["read_bytes_per_s_cpu"] for n, r in fl.items() if "read_bw" in n)
print(f"floors (1 thread, CPU time): FMA {peak / 1e9:.1f} GFLOP/s, read {bw / 1e9:.1f} GB/s")
print(f"{'shard':<14} {'CPU ms':>8} {'compute floor':>14} {'x compute':>10} {'memory floor':>13} {'x memory':>9} {'/ fp16':>7}")
runs = {name.split("/")[1]: r for name, r in medians("exec").items()}
order = [f"moe_{f}" for f in ("fp16", "lut4", "int8", "int8pc", "int4blk")]
fp16 = runs.get("moe_fp16", {}).get("cpu_s")
x_compute, over_fp16 = {}, {}
for shard in sorted(runs, key=lambda s: order.index(s) if s in order else len(order)):
    r = runs[shard]
    cpu = r["cpu_s"]
    cf = r["weight_flop"] / peak
    mf = r["weight_file_bytes"] / bw
    x_compute[shard] = cpu / cf
    over_fp16[shard] = cpu / fp16 if fp16 else float("nan")
    print(f"{shard:<14} {cpu * 1e3:8.2f} {cf * 1e3:11.2f} ms {cpu / cf:10.2f} {mf * 1e3:10.2f} ms {cpu / mf:9.2f} {over_fp16[shard]:7.2f}")
# Issue 11, "Done means" bullet 1, on this machine and this run.
def verdict(ok):
    return "met" if ok else "NOT met"
print("issue 11, 8 tokens, this run:")
for shard, x in x_compute.items():
    print(f"  {shard:<14} within 1.6x the compute floor: {verdict(x <= 1.6)} ({x:.2f}x)")
for shard in ("moe_int8", "moe_int8pc", "moe_int4blk"):
    if shard in over_fp16 and fp16:
        print(f"  {shard:<14} no slower than fp16: {verdict(over_fp16[shard] <= 1.0)} ({over_fp16[shard]:.2f}x fp16)")
PY
echo "raw results: $out"
