#!/usr/bin/env bash
# The conv-heavy fixture of issue 11 (tests/data/fixtures/conv_encoder/: a 1-D conv encoder over
# 1024 frames in fp16, int8 per tensor and int8 per channel): the steady-state pass of each
# variant through exec_bench, 1 thread, fp16 storage, medians of RUNS repetitions, and the
# int8 / fp16 ratios of the medians (wall and process CPU time; on the shared machine CPU time is
# the figure that load from other work does not inflate). Target (issue 11): <= 1.5.
#
# Usage: bench/conv_encoder_bench.sh [BUILD_DIR=build] [RUNS=9]
# BUILD_DIR is a Release build with -DSG_BUILD_BENCH=ON (bench/exec_bench).
set -euo pipefail
build=${1:-build}
runs=${2:-9}
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$here/tests/data/fixtures/conv_encoder
echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$("$build/bench/exec_bench" --shard "$dir/fp16.mlpackage" --shard "$dir/int8.mlpackage" \
  --shard "$dir/int8pc.mlpackage" --threads 1 --precision fp16 --mode steady \
  --benchmark_repetitions="$runs" --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.2 2>/dev/null | grep -E "_median")
echo "$out"
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
# exec/<variant>/fp16/steady/threads:1/manual_time_median  <wall> ms  <cpu> ms ... cpu_s=<s>
echo "$out" | awk '
  { split($1, p, "/"); v = p[2]; wall[v] = $2;
    for (i = 1; i <= NF; ++i) if ($i ~ /^cpu_s=/) { sub("cpu_s=", "", $i); cpu[v] = $i * 1000 } }
  END {
    printf "%-8s %10s %10s %12s %12s\n", "variant", "wall ms", "cpu ms", "wall/fp16", "cpu/fp16"
    n = split("fp16 int8 int8pc", vs, " ")
    for (k = 1; k <= n; ++k) { v = vs[k]
      printf "%-8s %10.2f %10.2f %12.2f %12.2f\n", v, wall[v], cpu[v], wall[v] / wall["fp16"], cpu[v] / cpu["fp16"] }
  }'
