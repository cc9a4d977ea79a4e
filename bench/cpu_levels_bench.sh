#!/usr/bin/env bash
# The same portable binary at each CPU level it can run (SG_CPU_LEVEL, shardgate/cpu.h): the
# 8-token steady-state pass of full-size shards, 1 thread, fp16 storage, medians of RUNS
# repetitions, with the FMA floor measured in the same run. Shows what run-time dispatch buys
# a portable build and that the scalar paths still work.
#
# Usage: bench/cpu_levels_bench.sh FULL_DIR [BUILD_DIR=build] [RUNS=5] [SHARDS="moe_fp16 moe_int8"]
# FULL_DIR holds full-size shards (tests/generators/generate_fixtures.py --full FULL_DIR).
set -euo pipefail
full=$1
build=${2:-build}
runs=${3:-5}
. "$(dirname "$0")/bench_common.sh"
require_repetitions "$runs"
shards=${4:-"moe_fp16 moe_int8"}
gb=(--benchmark_repetitions="$runs" --benchmark_report_aggregates_only=true --benchmark_min_time=0.05)
args=()
for s in $shards; do
  cat "$full/$s.mlpackage/Data/com.apple.CoreML/weights/weight.bin" > /dev/null  # warm page cache
  args+=(--shard "$full/$s.mlpackage")
done
run_header
"$build/bench/floors_bench" "${gb[@]}" --benchmark_filter='BM_fma_peak/1' 2>/dev/null | grep -E "median"
for level in scalar avx2 avx512 avx512fp16; do  # a level above the CPU's runs as the CPU's
  echo "== SG_CPU_LEVEL=$level"
  SG_CPU_LEVEL=$level "$build/bench/exec_bench" "${args[@]}" --threads 1 --precision fp16 --mode steady \
    "${gb[@]}" 2>/dev/null | grep -E "median"
done
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
