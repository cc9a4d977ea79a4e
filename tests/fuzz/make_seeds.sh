#!/usr/bin/env bash
# Seed corpora for the fuzz targets, made from the project's test data (nothing large is
# committed: tests/fuzz/seeds holds only the hand-written exec programs).
#
#   tests/fuzz/make_seeds.sh OUT_DIR [BUILD_DIR]
#
# Writes OUT_DIR/<target>/ for every target. Targets that read several formats pick the format
# by the input's first byte, so those seeds are the file prefixed by that byte (the numbers
# below match the `switch` in each fuzz_*.cpp). With BUILD_DIR, report seeds are made by
# running that build's golden-validator and ane-validator on the bundled sample.
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 OUT_DIR [BUILD_DIR]" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$1"
build="${2:-}"
data="$root/tests/data"

# seed TARGET SELECTOR FILE: copies FILE into OUT/TARGET, prefixed by byte SELECTOR unless it is
# "-". Names are made unique with the file's path.
seed() {
  local target="$1" selector="$2" file="$3"
  local name
  name="$(realpath --relative-to="$root" "$file" | tr '/' '_')"
  mkdir -p "$out/$target"
  if [[ "$selector" == "-" ]]; then
    cp "$file" "$out/$target/$name"
  else
    { printf "\\x$(printf '%02x' "$selector")"; cat "$file"; } >"$out/$target/$selector-$name"
  fi
}

# A spread of at most N files from a sorted list (every k-th), so corpora stay small.
spread() {
  local n="$1"
  mapfile -t files
  local count=${#files[@]} step
  step=$(( count > n ? (count + n - 1) / n : 1 ))
  for ((i = 0; i < count; i += step)); do echo "${files[i]}"; done
}

small() { find "$@" -type f -size -256k | LC_ALL=C sort; }

# MIL text: the corpus models and the hand-written programs.
for f in $(small "$data" -name '*.mil') "$root"/tests/fuzz/seeds/exec/*.mil; do seed mil_text - "$f"; done
# Protobuf model specs and blob files (the test data has over a hundred of each).
for f in $(small "$data" "$root/goldens" -name '*.mlmodel' | spread 40); do seed model_proto - "$f"; done
for f in $(small "$data" "$root/goldens" -name 'weight.bin' | spread 40); do seed blob - "$f"; done
# Tensor files: 0 npy, 1 npz, 2 safetensors.
for f in $(small "$data" "$root/goldens" -name '*.npy' -size -16k | spread 40); do seed tensor_files 0 "$f"; done
for f in $(small "$data" -name '*.npz'); do seed tensor_files 1 "$f"; done
for f in $(small "$data" -name '*.safetensors'); do seed tensor_files 2 "$f"; done
# JSON inputs: 0 golden manifest, 1 chain, 2 fidelity gate, 3 residency gate, 4 regression
# gate, 5 compute plan.
for f in $(small "$data" "$root/goldens" -name 'manifest.json'); do seed json_inputs 0 "$f"; done
for f in $(small "$data/chain" "$root/goldens/sample/chains" -maxdepth 1 -name '*.json'); do seed json_inputs 1 "$f"; done
seed json_inputs 2 "$root/gates/fidelity.json"
seed json_inputs 3 "$root/gates/residency.json"
seed json_inputs 4 "$root/gates/regression.json"
for f in $(small "$data/placement/mac" -maxdepth 1 -name '*.json') $(small "$data" -name '*.plan.json'); do seed json_inputs 5 "$f"; done
# Package metadata: 0 Manifest.json, 1 metadata.json.
for f in $(small "$data" "$root/goldens" -name 'Manifest.json' | spread 30); do seed package 0 "$f"; done
for f in $(small "$data" -name 'metadata.json'); do seed package 1 "$f"; done
# Shard execution: the hand-written programs, each op's first two oracle cases as one-op
# programs (cases_to_mil.py: 305 programs over 156 ops, so mutations start inside every kernel
# family; they also seed the MIL text reader), and compiled models with their weights.
for f in "$root"/tests/fuzz/seeds/exec/*.mil; do seed exec - "$f"; done
python3 "$root/tests/fuzz/cases_to_mil.py" "$out/exec" >/dev/null
cp "$out"/exec/case_*.mil "$out/mil_text/"
# with_weights NAME MODELC [SED_SCRIPT]: the model's text (edited by SED_SCRIPT), the line
# fuzz_exec splits on (kWeightSeparator) and its weight.bin, as the exec seed NAME.
with_weights() {
  { sed "${3:-}" "$2/model.mil"; printf '\n@@weight.bin\n'; cat "$2/weights/weight.bin"; } >"$out/exec/$1"
}
# Apple's compiled style, its flexible input fixed to the default shape so seeded inputs can
# be made; and two published models whose weights are compressed (4-bit palettes, int8), fixed
# shapes: mutations of their blobs reach the blob reader, the constexpr decoders and the
# streamed-weight kernels of a real conv/LSTM graph (each runs in a few milliseconds).
with_weights compiled_style_with_weights "$data/exec/compiled_style/compiled_style.mlmodelc" \
  's/tensor<fp16, \[?, ?, 8\]> x)/tensor<fp16, [1, 4, 8]> x)/'
for m in unified_palette_4bit unified_int8; do
  with_weights "silero_${m}_with_weights" "$data/corpus/silero-vad/$m.mlmodelc"
done

# Reports (0 regate a golden-validator report, 1 diff): written by the tools of BUILD_DIR.
if [[ -n "$build" ]]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  gv="$build/validators/golden-validator" av="$build/validators/ane-validator"
  # Exit 1 (a failing gate) still writes the report; anything else is this script's problem.
  for chain in chain_lut4 chain_int8; do
    "$gv" run "$root/goldens/sample/chains/$chain.json" --json "$tmp/$chain.json" >/dev/null || [[ $? == 1 ]]
    seed reports 0 "$tmp/$chain.json"
    seed reports 1 "$tmp/$chain.json"
  done
  "$av" "$root/goldens/sample/shards/L0_attn_lut4.mlpackage" --ops --json "$tmp/ane.json" >/dev/null || [[ $? == 1 ]]
  seed reports 1 "$tmp/ane.json"
fi
echo "seeds in $out: $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1)"
