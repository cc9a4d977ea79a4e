# Sourced by every bench script that reports Google Benchmark medians (formats, kernel_formats,
# many_tokens, conv_encoder, cpu_levels, run_exec):
#
#   . "$(dirname "$0")/bench_common.sh"
#   require_repetitions "$runs"   # before any work
#   run_header                    # the first two lines of the output

# Google Benchmark reports medians only for two or more repetitions, and the scripts read
# medians: with one they would find nothing to print.
require_repetitions() {
  if ! [[ $1 =~ ^[0-9]+$ ]] || (($1 < 2)); then
    echo "RUNS must be a whole number of at least 2 (medians need repetitions), got '$1'" >&2
    exit 2
  fi
}

# When and at which commit a run was made, the host's load, and which machine made it: the
# ratios depend on the machine (Zen 4 runs a 512-bit FMA per cycle, the Xeon of bench/README
# two), and the VM these were measured on changed between sessions, so a run says which it was.
run_header() {
  local model family cpu_model flags
  model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
  cpu_model=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1)
  flags=" $(sed -n 's/^flags[[:space:]]*: //p' /proc/cpuinfo | head -1) "
  local isa=""
  # /proc/cpuinfo's names: AVX512-FP16 is "avx512_fp16".
  for f in avx2 avx512f avx512_fp16; do
    [[ $flags == *" $f "* ]] && isa+=" ${f/_/}"
  done
  # Changed paths: a dirty tree's numbers are not the commit's.
  local git_at
  git_at="$(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(git status --porcelain 2>/dev/null | wc -l) changed paths"
  echo "date: $(date -Is)  git: $git_at  loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "machine: ${model:-unknown} (family ${family:-?} model ${cpu_model:-?}), $(nproc) CPUs,${isa:- no AVX2}"
}
