#!/usr/bin/env bash
# Times `ane-validator` listing 80 shards: hard-linked copies of one full-size shard, so the
# disk holds the weights once while the tool sees 80 shard directories. Prints the median wall
# time of several runs. Listing must stay well under a second: it parses each program and
# sizes the weight files, but never maps or reads weight data.
#
# Usage: bench/list_shards_bench.sh SHARD_DIR [COPIES=80] [RUNS=7] [BUILD_DIR=build-bench] [EXTRA_ARGS]
#   EXTRA_ARGS  more ane-validator options, e.g. "--no-fingerprint" (default: none)
#   SHARD_DIR  one .mlmodelc or .mlpackage, e.g. from
#              /opt/ctvenv/bin/python tests/generators/generate_fixtures.py --full /tmp/sgfull
# Run from the repository root after building: cmake --build BUILD_DIR --target ane-validator
set -euo pipefail

shard=${1:?usage: $0 SHARD_DIR [COPIES] [RUNS] [BUILD_DIR]}
copies=${2:-80}
runs=${3:-7}
build=${4:-build-bench}
extra=${5:-}
tool="$build/validators/ane-validator"
[[ -x "$tool" ]] || { echo "$tool not built (cmake --build $build --target ane-validator)" >&2; exit 2; }
[[ -d "$shard" ]] || { echo "$shard: not a shard directory" >&2; exit 2; }

shard=${shard%/}
ext=${shard##*.}
work=$(mktemp -d "${TMPDIR:-/tmp}/sg_list_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
for ((i = 0; i < copies; i++)); do
  cp -al "$shard" "$work/$(printf 'layer_%03d' "$i").$ext"
done
weights=$(du -sb --apparent-size "$shard" | cut -f1)
echo "shard: $shard ($weights bytes), $copies hard-linked copies, $runs runs${extra:+, extra args: $extra}"

times=()
cpu=()
TIMEFORMAT='%R %U %S'
for ((r = 0; r < runs; r++)); do
  set +e
  # shellcheck disable=SC2086  # EXTRA_ARGS splits into options on purpose
  t=$( { time "$tool" "$work"/*."$ext" -q --min-residency 0 $extra > /dev/null 2>&1; } 2>&1 )
  code=$?
  set -e
  if ((code > 1)); then echo "ane-validator exited $code" >&2; exit "$code"; fi
  read -r real user sys <<< "$t"
  times+=("$real")
  cpu+=("$(echo "$user + $sys" | bc)")
done
median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
echo "wall (s): ${times[*]}"
echo "cpu  (s): ${cpu[*]}"
echo "median wall $(median "${times[@]}") s, median cpu $(median "${cpu[@]}") s for $copies shards"
