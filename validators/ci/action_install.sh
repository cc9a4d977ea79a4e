#!/usr/bin/env bash
# Install step of the shardgate GitHub Action (action.yml at the repository root).
#   SG_INSTALL  "deb" | "build" | "path" | "" (deb when SG_DEB is set, else build)
#   SG_DEB      path of a shardgate_*.deb (install=deb)
#   SG_SOURCE   the action's checkout (install=build builds the package from it)
# The package is installed with apt-get so its dependencies come along; as non-root via sudo.
set -euo pipefail
mode="${SG_INSTALL:-}"
if [ -z "$mode" ]; then
  if [ -n "${SG_DEB:-}" ]; then mode=deb; else mode=build; fi
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

case "$mode" in
  path)
    for tool in ane-validator golden-validator; do
      command -v "$tool" > /dev/null || { echo "::error::install=path but $tool is not on PATH"; exit 2; }
    done
    ;;
  deb)
    [ -f "${SG_DEB:-}" ] || { echo "::error::install=deb: no package file '${SG_DEB:-}'"; exit 2; }
    # The package's dependencies (libfmt, zlib, ...) come from the archive: a fresh machine or
    # container has no package lists until `update`, and apt cannot locate them without one.
    $sudo apt-get update
    $sudo apt-get install -y "$(realpath "$SG_DEB")"
    ;;
  build)
    build="${RUNNER_TEMP:-/tmp}/shardgate-build"
    $sudo apt-get update
    $sudo apt-get install -y cmake g++ make nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev dpkg-dev file
    cmake -S "$SG_SOURCE" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSG_BUILD_TESTS=OFF -DSG_BUILD_BENCH=OFF
    cmake --build "$build" -j"$(nproc)" --target ane-validator golden-validator
    (cd "$build" && cpack -G DEB -B "$build/package")
    $sudo apt-get install -y "$(ls "$build"/package/shardgate_*.deb | head -1)"
    ;;
  *)
    echo "::error::install must be deb, build or path, not '$mode'"; exit 2 ;;
esac
