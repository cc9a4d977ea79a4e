#!/usr/bin/env bash
# Compiles every source file of the runtime and the two tools for 64-bit ARM, warnings as
# errors, without generating code: the side of each `#if defined(__x86_64__)` guard that no x86
# build ever compiles (CI's step "aarch64 compile check"). Needs only g++-aarch64-linux-gnu: the
# third-party headers (fmt, nlohmann-json, CLI11, zlib) are taken from the host's /usr/include
# after the cross compiler's own, which is enough to check syntax, types and warnings. The full
# cross build that also runs the suite under QEMU is tests/cross/aarch64.cmake (README, "Other
# CPUs").
#
# Usage: tests/cross/check_aarch64_compiles.sh [jobs]     (from anywhere; exit 1 on any diagnostic)
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs="${1:-2}"
cxx="${SG_CROSS_CXX:-aarch64-linux-gnu-g++}"
if ! command -v "$cxx" > /dev/null; then
  echo "check_aarch64_compiles: $cxx not found (apt-get install g++-aarch64-linux-gnu)" >&2
  exit 2
fi
# The flags of the CMake build (CMakeLists.txt: add_compile_options, the target definitions),
# copied: its GCC 12 suppressions are left out because the warnings they silence come from the
# optimiser, which -fsyntax-only never runs. A warning option added there belongs here too.
flags=(-std=c++20 -fsyntax-only -Wall -Wextra -Wno-missing-field-initializers -Werror
       -I runtime -I runtime/include -I validators -idirafter /usr/include
       -DSG_SOURCE_DIR='"."' -DSG_VERSION='"0"')
files=$(find runtime validators -name '*.cpp' -not -path 'validators/python/*' | sort)
count=$(echo "$files" | wc -l)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if echo "$files" | xargs -P "$jobs" -n 8 "$cxx" "${flags[@]}" > "$log" 2>&1; then
  echo "check_aarch64_compiles: $count files compile for aarch64 with no diagnostic ($cxx)"
else
  cat "$log" >&2
  echo "check_aarch64_compiles: diagnostics above ($count files, $cxx)" >&2
  exit 1
fi
