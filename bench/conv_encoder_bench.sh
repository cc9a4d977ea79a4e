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
. "$(dirname "$0")/bench_common.sh"
require_repetitions "$runs"
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$here/tests/data/fixtures/conv_encoder
run_header
json=$(mktemp /tmp/conv_encoder.XXXXXX.json)
trap 'rm -f "$json"' EXIT
"$build/bench/exec_bench" --shard "$dir/fp16.mlpackage" --shard "$dir/int8.mlpackage" \
  --shard "$dir/int8pc.mlpackage" --threads 1 --precision fp16 --mode steady \
  --benchmark_repetitions="$runs" --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.2 --benchmark_out="$json" --benchmark_out_format=json 2>/dev/null | grep -E "_median"
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
# From the JSON, not the console: the console prints cpu_s with an SI suffix (8.4m = 8.4 ms),
# which the awk that read it before multiplied as if it were seconds, and times in whatever
# unit suits their size.
python3 - "$json" "$here/bench" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from summarize_exec_bench import load_gbench, ms  # the one reader of Google Benchmark medians
rows = {}
for name, b in load_gbench(sys.argv[1])[1].items():
    rows[name.split("/")[1]] = (ms(b), b["cpu_s"] * 1e3)  # exec/<variant>/fp16/steady/...
print(f"{'variant':<8} {'wall ms':>10} {'cpu ms':>10} {'wall/fp16':>12} {'cpu/fp16':>12}")
for v in ("fp16", "int8", "int8pc"):
    wall, cpu = rows[v]
    print(f"{v:<8} {wall:10.2f} {cpu:10.2f} {wall / rows['fp16'][0]:12.2f} {cpu / rows['fp16'][1]:12.2f}")
PY
