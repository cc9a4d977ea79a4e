#!/usr/bin/env bash
# End-to-end interpreter benchmark: an 8-token forward through the full-size attention and MoE
# shards (fp16 and 4-bit LUT weights), this machine's FMA / read-bandwidth floors measured in
# the same run, and a PyTorch CPU peer on the same weights. Prints medians and the ratios
# ours / floor (bench/README.md) and ours / PyTorch.
#
# Usage: bench/run_exec_bench.sh [FULL_DIR=/tmp/fullsize] [BUILD_DIR=build-bench] [RUNS=7]
# Environment:
#   SG_BENCH_THREADS  thread counts to run (default 1,2)
#   SG_CT_PY          Python with coremltools (default /opt/ctvenv/bin/python): fixtures, dumps
#   SG_TORCH_PY       Python with PyTorch (default /opt/torchvenv/bin/python; see requirements.txt)
#   SG_BENCH_OUT      where the JSON results go (default BUILD_DIR/exec_bench_results)
# Run from the repository root. Not part of ctest; needs no GPU.
set -euo pipefail

full=${1:-/tmp/fullsize}
build=${2:-build-bench}
runs=${3:-7}
. "$(dirname "$0")/bench_common.sh"
require_repetitions "$runs"
threads=${SG_BENCH_THREADS:-1,2}
ct_py=${SG_CT_PY:-/opt/ctvenv/bin/python}
torch_py=${SG_TORCH_PY:-/opt/torchvenv/bin/python}
out=${SG_BENCH_OUT:-$build/exec_bench_results}
shards=(attention_fp16 attention_lut4 moe_fp16 moe_lut4)

[[ -f bench/exec_bench.cpp ]] || { echo "run from the repository root" >&2; exit 2; }
mkdir -p "$out"

# 1. Full-size shards (about 2-3 minutes; never committed).
missing=0
for s in "${shards[@]}"; do [[ -d "$full/$s.mlpackage" ]] || missing=1; done
if ((missing)); then
  echo "== generating full-size shards into $full"
  "$ct_py" tests/generators/generate_fixtures.py --full "$full" --full-variants fp16,lut4
fi

# 2. Release build of what we run.
echo "== building (Release) in $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSG_NATIVE=ON -DSG_BUILD_TESTS=OFF -DSG_BUILD_BENCH=ON > "$out/cmake.log"
cmake --build "$build" -j2 --target exec_bench floors_bench golden-validator > "$out/build.log"
gv="$build/validators/golden-validator"

# 3. Page cache: every run below reads the weights from memory, as a warm sweep does.
cat "$full"/*.mlpackage/Data/com.apple.CoreML/weights/weight.bin > /dev/null

# 4. The machine and its load.
run_header | tee "$out/machine.txt"

gb=(--benchmark_repetitions="$runs" --benchmark_report_aggregates_only=true --benchmark_min_time=0.05)

# 5. Floors.
echo "== floors ($runs repetitions)"
"$build/bench/floors_bench" "${gb[@]}" --benchmark_out="$out/floors.json" --benchmark_out_format=json \
  | grep -E "median|Benchmark"

# 6. Our interpreter: fp16 storage (the tool's default) and fp32 (reference mode, the math the
# PyTorch peer does), steady state and open+run.
echo "== interpreter ($runs repetitions, threads $threads)"
args=()
for s in "${shards[@]}"; do args+=(--shard "$full/$s.mlpackage"); done
"$build/bench/exec_bench" "${args[@]}" --threads "$threads" --precision fp16,fp32 --mode steady,open \
  "${gb[@]}" --benchmark_out="$out/exec.json" --benchmark_out_format=json | grep -E "median|Benchmark"

# 7. PyTorch peer on the same weights and the same seeded input; our fp32 output for checking.
# OpenMP threads sleep instead of spinning while they wait (OMP_WAIT_POLICY=PASSIVE): on a
# machine shared with other work, spinning threads steal the cores their peers need (the
# executor's threads block, too). Set OMP_WAIT_POLICY to override.
echo "== PyTorch peer ($runs runs)"
: > "$out/torch.jsonl"
for s in "${shards[@]}"; do
  [[ -f "$out/$s.npz" ]] || "$ct_py" bench/torch_peer.py dump "$full/$s.mlpackage" "$out/$s.npz" 2>&1 \
    | grep -v -e "^Failed to load" -e "scikit-learn"
  "$gv" exec "$full/$s.mlpackage" --seed 0 --precision fp32 --out "$out/ours_$s" -q > /dev/null
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} "$torch_py" bench/torch_peer.py time "$out/$s.npz" --input "$out/ours_$s/inputs/hidden.npy" \
    --compare "$out/ours_$s/hidden_out.npy" --threads "$threads" --runs "$runs" >> "$out/torch.jsonl"
done
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"

# 8. Summary.
python3 bench/summarize_exec_bench.py "$out"
