#!/usr/bin/env bash
# Peak resident memory of one shard run through `golden-validator exec` (8-token seeded input),
# measured by /usr/bin/time -v, against the budget "2 x weight file + activations" on top of
# what the program costs with no weights at all (the same command on the small committed MoE
# fixture, whose weights are 0.1 MB).
#
# Why 2 x weights: a weight file mapped and read once (page-cache pages count in RSS while
# mapped) plus at most one decoded copy of the same size; a runtime that expands a 4-bit shard
# as a whole to fp16 or fp32 (4-8x the file) is what the budget catches.
#
# Usage: bench/peak_memory.sh [SHARD=/tmp/fullsize/moe_lut4.mlpackage] [BUILD_DIR=build-bench] [THREADS=1]
# Build first: cmake --build BUILD_DIR --target golden-validator (Release).
# Exit status: 0 within the budget, 1 over it, 2 usage.
set -euo pipefail

shard=${1:-/tmp/fullsize/moe_lut4.mlpackage}
build=${2:-build-bench}
threads=${3:-1}
gv="$build/validators/golden-validator"
baseline_shard=tests/data/fixtures/llm/moe_lut4.mlpackage
[[ -x "$gv" ]] || { echo "$gv not built (cmake --build $build --target golden-validator)" >&2; exit 2; }
[[ -d "$shard" ]] || { echo "$shard: not a shard directory (generate_fixtures.py --full)" >&2; exit 2; }
[[ -d "$baseline_shard" ]] || { echo "run from the repository root" >&2; exit 2; }

# Runs exec under /usr/bin/time -v; prints "peak_rss_kib exec_peak_values_mib seconds".
measure() {
  local log
  log=$(mktemp)
  /usr/bin/time -v "$gv" exec "$1" --seed 0 --threads "$threads" > "$log.out" 2> "$log"
  local rss exec_peak secs
  rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$log")
  secs=$(sed -n 's/^\s*Elapsed (wall clock) time.*: //p' "$log")
  # "golden-validator exec: ... peak 123.4 MiB)": the executor's own count of live values.
  exec_peak=$(sed -n 's/.*peak \([0-9.]*\) MiB).*/\1/p' "$log.out")
  rm -f "$log" "$log.out"
  echo "$rss ${exec_peak:-?} $secs"
}

# Weight bytes: every file under weights/ (package: Data/com.apple.CoreML/weights).
weights=$(find "$shard" -path '*weights/*' -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
cat "$shard"/Data/com.apple.CoreML/weights/* > /dev/null 2>&1 || true  # page cache warm

read -r base_rss _ _ <<< "$(measure "$baseline_shard")"
runs=()
for _ in 1 2 3; do runs+=("$(measure "$shard")"); done
# Median run by peak RSS.
median=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
read -r rss exec_peak secs <<< "$median"

# Activations: the largest live set of the benchmark MoE layer is a handful of [1, 8, 12288]
# fp32 tensors (gate, up, activation: 384 KiB each); 4 MiB covers them with margin. For other
# shards pass SG_ACTIVATION_MIB.
act_mib=${SG_ACTIVATION_MIB:-4}
all_rss=$(printf '%s\n' "${runs[@]}" | cut -d' ' -f1 | tr '\n' ' ')
awk -v rss="$rss" -v base="$base_rss" -v w="$weights" -v act="$act_mib" -v ep="$exec_peak" \
    -v secs="$secs" -v shard="$shard" -v threads="$threads" -v runs="$all_rss" 'BEGIN {
  mib = 1048576
  over = (rss - base) * 1024
  budget = 2 * w + act * mib
  printf "shard: %s (weight files %.1f MiB), threads %d, loadavg %s\n", shard, w / mib, threads, "'"$(cut -d' ' -f1 /proc/loadavg)"'"
  printf "peak RSS, median of 3 runs (KiB: %s)\n", runs
  printf "  exec on this shard:             %8.1f MiB  (wall %s)\n", rss / 1024, secs
  printf "  exec on the small fixture:      %8.1f MiB  (the program without weights)\n", base / 1024
  printf "  difference (weights + values):  %8.1f MiB\n", over / mib
  printf "  budget 2 x weights + %d MiB:     %8.1f MiB  -> %s (%.2fx of budget, %.2fx of the weight file)\n", act, budget / mib, over <= budget ? "within" : "OVER", over / budget, over / w
  printf "  executor peak of live values:   %8s MiB  (RunStats.peak_value_bytes: activations + decoded weights)\n", ep
  exit over <= budget ? 0 : 1
}'
