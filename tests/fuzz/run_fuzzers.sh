#!/usr/bin/env bash
# Runs every fuzz target of a -DSG_FUZZ=ON build for a fixed time each, one after another (or
# SG_FUZZ_JOBS at a time).
#
#   tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]
#   SG_FUZZ_JOBS=2 tests/fuzz/run_fuzzers.sh ...   # that many targets at once (default 1)
#
# Targets default to all (mil_text, model_proto, blob, tensor_files, json_inputs, package,
# reports, exec). The corpus of each lives in BUILD_DIR/fuzz/corpus/<target> (made by
# make_seeds.sh on the first run and kept, so later runs start where earlier ones ended);
# logs in BUILD_DIR/fuzz/logs. Each run: -max_total_time=SECONDS -rss_limit_mb=2048
# -timeout=10. A crash, sanitizer report, leak, out-of-memory or hang makes libFuzzer write the
# input to BUILD_DIR/fuzz/findings/<target>/; this script then prints that reproducer path
# and how to replay it, and exits 1 after running the remaining targets.
set -uo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "$1" && pwd)"
seconds="$2"
shift 2
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(mil_text model_proto blob tensor_files json_inputs package reports exec)
fi

work="$build/fuzz"
mkdir -p "$work/logs"
if [[ ! -d "$work/corpus" ]]; then
  "$here/make_seeds.sh" "$work/corpus" "$build" || exit 2
fi

jobs="${SG_FUZZ_JOBS:-1}"
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "SG_FUZZ_JOBS=$jobs: expected a whole number of targets to run at once, 1 or more" >&2
  exit 2
fi
for i in "${!targets[@]}"; do
  targets[$i]="${targets[$i]#fuzz_}"  # "exec" and "fuzz_exec" both name fuzz_exec
  if [[ ! -x "$build/tests/fuzz/fuzz_${targets[$i]}" ]]; then
    echo "$build/tests/fuzz/fuzz_${targets[$i]}: no such fuzz target (configure with -DSG_FUZZ=ON and build)" >&2
    exit 2
  fi
done

# One target: its run, then its report into logs/<t>.result (exit status 1 on a finding), so
# targets run side by side still report in the order given.
run_target() {
  local t="$1" bin="$build/tests/fuzz/fuzz_$1"
  mkdir -p "$work/corpus/$t" "$work/findings/$t"
  local log="$work/logs/$t.log"
  "$bin" "$work/corpus/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/findings/$t/" >"$log" 2>&1
  local rc=$?
  # libFuzzer's last status line ("#123456 DONE cov: 1234 ft: ... corp: ...") and its stats.
  local done_line execs
  done_line="$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)' "$log" | tail -1)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  if [[ $rc -eq 0 ]]; then
    echo "fuzz_$t: ok, ${execs:-?} executions in ${seconds}s; $done_line"
    return 0
  fi
  {
    echo "fuzz_$t: FINDING (exit $rc), log $log"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error:)' "$log" | head -5
    for f in $(grep -oE "Test unit written to [^ ]+" "$log" | sed 's/Test unit written to //'); do
      echo "  reproducer: $f"
      echo "  replay:     $bin $f"
    done
  } >&2
  return 1
}

for t in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n; done
  run_target "$t" >"$work/logs/$t.result" 2>&1 &
done
wait
failed=0
for t in "${targets[@]}"; do
  if grep -q "^fuzz_$t: ok," "$work/logs/$t.result"; then
    cat "$work/logs/$t.result"
  else
    failed=1
    cat "$work/logs/$t.result" >&2
  fi
done
exit $failed
