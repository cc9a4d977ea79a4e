#!/usr/bin/env bash
# Run step of the shardgate GitHub Action (action.yml at the repository root).
#   SG_TOOL         ane-validator | golden-validator
#   SG_TARGETS      shards/globs/directories, or chain manifests (whitespace-separated)
#   SG_ARGS         extra options for every run (split on whitespace)
#   SG_SHARD_INDEX, SG_SHARD_COUNT   this job's slice
#   SG_REPORT_DIR   where reports go
# Writes every report Markdown to $GITHUB_STEP_SUMMARY, `exit-code` and `verdict` to
# $GITHUB_OUTPUT, and exits with the tool's exit code (the worst one over several chains).
set -uo pipefail
tool="${SG_TOOL:-}" index="${SG_SHARD_INDEX:-0}" count="${SG_SHARD_COUNT:-1}"
out="${SG_REPORT_DIR:-shardgate-reports}"
summary="${GITHUB_STEP_SUMMARY:-/dev/null}" outputs="${GITHUB_OUTPUT:-/dev/null}"
# Split on whitespace (newlines too) without expanding globs: the tools expand them.
read -r -d '' -a targets <<< "${SG_TARGETS:-}" || true
read -r -d '' -a args <<< "${SG_ARGS:-}" || true
mkdir -p "$out"

finish() {  # finish EXIT_CODE [VERDICT]: the verdict follows the exit code unless given
  local verdict=error
  case "$1" in 0) verdict=pass ;; 1) verdict=fail ;; esac
  # A slice that selected nothing exits 0 but passed nothing: it says so.
  [ -n "${2:-}" ] && verdict=$2
  { echo "exit-code=$1"; echo "verdict=$verdict"; } >> "$outputs"
  echo "shardgate: $tool slice $index of $count: $verdict (exit $1)"
  exit "$1"
}
fail_usage() { echo "::error::$1"; echo "**shardgate**: $1" >> "$summary"; finish 2; }

case "$tool" in ane-validator|golden-validator) ;; *) fail_usage "tool must be ane-validator or golden-validator, not '$tool'" ;; esac
[ "${#targets[@]}" -gt 0 ] || fail_usage "no targets given"
[[ "$index" =~ ^[0-9]+$ && "$count" =~ ^[1-9][0-9]*$ && "$index" -lt "$count" ]] \
  || fail_usage "shard-index $index / shard-count $count: need 0 <= index < count"

"$tool" --version || fail_usage "$tool is not installed"

if [ "$tool" = ane-validator ]; then
  # ane-validator selects its own slice (--shard-index/--shard-count) over the expanded shards.
  split=()
  [ "$count" -gt 1 ] && split=(--shard-index "$index" --shard-count "$count")
  # Reports of an earlier run in the same report-dir would otherwise be read (and uploaded) as
  # this run's when the tool dies before writing its own.
  rm -f "$out/ane-report.json" "$out/ane-junit.xml" "$out/ane-summary.md"
  ane-validator "${targets[@]}" "${args[@]}" "${split[@]}" --json "$out/ane-report.json" \
    --junit "$out/ane-junit.xml" --markdown "$out/ane-summary.md" 2>&1 | tee "$out/ane-output.txt"
  rc=${PIPESTATUS[0]}
  [ -f "$out/ane-summary.md" ] && cat "$out/ane-summary.md" >> "$summary"
  empty=""
  [ "$rc" = 0 ] && grep -q "nothing to check in this job" "$out/ane-output.txt" && empty=empty-slice
  rm -f "$out/ane-output.txt"
  finish "$rc" "$empty"
fi

# golden-validator: globs in the targets are expanded here (** included, sorted); chain k of
# the expanded list goes to slice k mod count; one run per chain.
shopt -s globstar nullglob
chains=()
for t in "${targets[@]}"; do
  if [[ "$t" == *[*?[]* ]]; then
    matched=($t)
    [ "${#matched[@]}" -gt 0 ] || fail_usage "no chain manifest matches '$t'"
    chains+=("${matched[@]}")
  else
    chains+=("$t")
  fi
done
targets=("${chains[@]}")
# Reports are named after the manifest; two manifests with one name (a/chain.json, b/chain.json)
# get <name>-<k>, k their place in the expanded list (the same in every slice), so neither
# overwrites the other's reports.
declare -A named=()
for chain in "${targets[@]}"; do
  stem="$(basename "$chain" .json)"
  named[$stem]=$(( ${named[$stem]:-0} + 1 ))
done
worst=0 ran=0
for k in "${!targets[@]}"; do
  [ $((k % count)) -eq "$index" ] || continue
  chain="${targets[$k]}"
  stem="$(basename "$chain" .json)"
  [ "${named[$stem]}" -gt 1 ] && stem="$stem-$k"
  # A report left by an earlier run must not stand in for this one if the tool dies first.
  rm -f "$out/$stem.json" "$out/$stem-junit.xml" "$out/$stem.md" "$out/$stem.html"
  golden-validator run "$chain" "${args[@]}" --json "$out/$stem.json" --junit "$out/$stem-junit.xml" \
    --markdown "$out/$stem.md" --html "$out/$stem.html"
  rc=$?
  ran=$((ran + 1))
  if [ -f "$out/$stem.md" ]; then cat "$out/$stem.md" >> "$summary"; echo >> "$summary"
  else echo "**shardgate**: \`$chain\`: no report (exit $rc)" >> "$summary"; fi
  [ "$rc" -gt "$worst" ] && worst=$rc
done
if [ "$ran" = 0 ]; then
  echo "**shardgate**: slice $index of $count holds none of the ${#targets[@]} chain(s); nothing to run here." >> "$summary"
  finish 0 empty-slice
fi
finish "$worst"
