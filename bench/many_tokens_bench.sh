#!/usr/bin/env bash
# The many-token GEMM in one run beside the machine's floor (issue 11, "Done means" bullet 2):
#   1. floors_bench: the 1-thread AVX-512 FMA peak (CPU-time rate);
#   2. gemm_bench: gemm_x_wt and Eigen's fp32 GEMM on each matmul shape of the full-size shards
#      at 8 and 512 tokens, fp16 weights;
#   3. exec_bench: the fp16 MoE layer with a 512-token input (a shard generated with
#      --full-seq 512), steady state, 1 thread, fp16 storage;
#   4. bench/torch_peer.py: PyTorch fp32 on the same weights and the same 512-token input.
# Prints every rate as a fraction of the peak. 1 thread, CPU time, medians.
#
#   bench/many_tokens_bench.sh [FULL512_DIR] [BUILD_DIR] [RUNS]
# RUNS: repetitions of each benchmark, at least 2 (default 5); the medians are reported.
# FULL512_DIR (default /tmp/fullsize512) is made if missing with
#   /opt/ctvenv/bin/python tests/generators/generate_fixtures.py --full DIR --full-variants fp16 --full-seq 512
# The PyTorch environment is /opt/torchvenv (bench/requirements.txt); TORCH_PY overrides it.
set -euo pipefail
full=${1:-/tmp/fullsize512}
build=${2:-build}
runs=${3:-5}
. "$(dirname "$0")/bench_common.sh"
require_repetitions "$runs"
ct_py=${CT_PY:-/opt/ctvenv/bin/python}
torch_py=${TORCH_PY:-/opt/torchvenv/bin/python}
out=$(mktemp -d /tmp/many_tokens.XXXXXX)

[[ -d "$full/moe_fp16.mlpackage" ]] ||
  "$ct_py" tests/generators/generate_fixtures.py --full "$full" --full-variants fp16 --full-seq 512
cmake --build "$build" -j2 --target floors_bench gemm_bench exec_bench golden-validator > "$out/build.log"
cat "$full"/moe_fp16.mlpackage/Data/com.apple.CoreML/weights/weight.bin > /dev/null

run_header
gb=(--benchmark_repetitions="$runs" --benchmark_report_aggregates_only=true)
"$build/bench/floors_bench" --benchmark_filter='fma_peak_avx512/1' "${gb[@]}" \
  --benchmark_out="$out/floors.json" --benchmark_out_format=json > /dev/null
"$build/bench/gemm_bench" "${gb[@]}" --benchmark_min_time=0.2 \
  --benchmark_out="$out/gemm.json" --benchmark_out_format=json > /dev/null
"$build/bench/exec_bench" --shard "$full/moe_fp16.mlpackage" --threads 1 --precision fp16 --mode steady \
  "${gb[@]}" --benchmark_out="$out/exec.json" --benchmark_out_format=json > /dev/null
"$ct_py" bench/torch_peer.py dump "$full/moe_fp16.mlpackage" "$out/moe.npz" 2>&1 |
  grep -v -e "^Failed to load" -e "scikit-learn" || true
"$build/validators/golden-validator" exec "$full/moe_fp16.mlpackage" --seed 0 --precision fp32 --out "$out/ours" -q > /dev/null
OMP_WAIT_POLICY=PASSIVE "$torch_py" bench/torch_peer.py time "$out/moe.npz" --input "$out/ours/inputs/hidden.npy" \
  --compare "$out/ours/hidden_out.npy" --threads 1 --runs "$runs" --weights fp32 > "$out/torch.jsonl"
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$(dirname "$0")" <<'EOF'
import json, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from summarize_exec_bench import load_gbench  # the one reader of Google Benchmark medians
def medians(name):
    return load_gbench(f"{out}/{name}.json")[1]
peak = next(iter(medians("floors").values()))["flop_per_s_cpu"]
print(f"peak FMA, 1 thread (CPU time): {peak / 1e9:.1f} GFLOP/s")
print(f"{'shape (tokens/rows/K)':<36} {'GFLOP/s':>8} {'of peak':>8} {'ms':>8}")
worst = {}
for name, r in medians("gemm").items():
    frac = r["flop_per_s"] / peak
    print(f"{name:<36} {r['flop_per_s'] / 1e9:8.1f} {frac:8.2f} {r['cpu_ms']:8.2f}")
    if name.startswith("BM_gemm_x_wt_f16/512/"):
        worst[name] = frac
if worst:
    w = min(worst, key=worst.get)
    print(f"worst 512-token shape: {w} at {worst[w]:.2f} of peak")
ex = next(iter(medians("exec").values()))
cpu = ex["cpu_s"]
print(f"MoE layer fp16, 512 tokens, ours: {cpu * 1e3:.1f} ms CPU, {ex['weight_flop'] / cpu / 1e9:.1f} GFLOP/s "
      f"= {ex['weight_flop'] / cpu / peak:.2f} of peak (weight FLOP {ex['weight_flop'] / 1e9:.2f} G)")
for line in open(f"{out}/torch.jsonl"):
    t = json.loads(line)
    tc = t["median_cpu_ms"]
    print(f"PyTorch {t['torch']} fp32 weights resident, {t['threads']} thread: {tc:.1f} ms CPU "
          f"(wall {t['median_wall_ms']:.1f} ms); ours / PyTorch = {cpu * 1e3 / tc:.2f}; "
          f"max |ours - PyTorch| {t.get('max_abs_vs_ours', float('nan')):.2g} on outputs up to {t.get('max_abs_ours', float('nan')):.2g}")
EOF
echo "raw results: $out"
