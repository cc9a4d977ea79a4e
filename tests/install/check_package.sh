#!/usr/bin/env bash
# Builds the Debian packages from a Release build directory (shardgate: the tools and data;
# shardgate-dev: the library, headers and package config), installs them with dpkg into a clean
# root, and uses only what was installed: runs the bundled sample with the installed tools from
# an unrelated directory, and builds a project that finds the library with
# find_package(shardgate). Also checks that the build is portable (no -march=native).
#
#   tests/install/check_package.sh BUILD_DIR [KEEP_DIR]
#
# KEEP_DIR, when given, receives a copy of both packages (CI hands shardgate to the action's test).
# The clean root is a fresh dpkg database in a temp directory (`dpkg --root`), so nothing of the
# source tree or of an earlier install is visible; the packages' dependencies (the tools' from
# dpkg-shlibdeps, the -dev package's declared) are checked to be installed on this machine,
# whose libraries and headers the installed tools and the consumer then use. Prints
# "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:?usage: check_package.sh BUILD_DIR [KEEP_DIR]}" && pwd)"
keep="${2:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1" >&2; failed=$((failed + 1)); }
check() {  # check NAME EXPECTED_EXIT COMMAND...
  local name="$1" want="$2"; shift 2
  "$@" > "$work/out.txt" 2>&1; local got=$?
  if [ "$got" = "$want" ]; then ok "$name (exit $got)"; else
    bad "$name: exit $got, expected $want"; sed 's/^/     /' "$work/out.txt" >&2; fi
}

# Portable build: no -march=native unless SG_NATIVE was asked for.
if grep -q '^SG_NATIVE:BOOL=ON' "$build/CMakeCache.txt"; then
  bad "portable build: $build was configured with -DSG_NATIVE=ON"
elif grep -q -- '-march=native' "$build/compile_commands.json"; then
  bad "portable build: -march=native in $build/compile_commands.json"
else ok "portable build: no -march=native"; fi

# The packages.
(cd "$build" && cpack -G DEB -B "$work/pkg" > "$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; bad "cpack"; }
deb="$(ls "$work"/pkg/shardgate_*.deb 2>/dev/null | head -1)"
devdeb="$(ls "$work"/pkg/shardgate-dev_*.deb 2>/dev/null | head -1)"
if [ -z "$deb" ] || [ -z "$devdeb" ]; then
  bad "cpack made no shardgate_*.deb and shardgate-dev_*.deb: $(ls "$work/pkg" 2>/dev/null | tr '\n' ' ')"
  echo "$passed passed, $failed failed"; exit 1
fi
ok "cpack: $(basename "$deb") $(basename "$devdeb")"
if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$deb" "$devdeb" "$keep/"; fi

# The split: the tools' package holds no library files, the -dev package nothing but them.
# (Listings go to files first: `grep -q` closing a pipe early fails dpkg-deb under pipefail.)
dpkg-deb -c "$deb" | awk '{print $6}' | grep -v '/$' > "$work/tools.files"
dpkg-deb -c "$devdeb" | awk '{print $6}' | grep -v '/$' > "$work/dev.files"
if grep -qE '^\./usr/(include|lib)/' "$work/tools.files"; then
  bad "shardgate holds library files: $(grep -E '^\./usr/(include|lib)/' "$work/tools.files" | head -3 | tr '\n' ' ')"
else ok "shardgate: the tools and their data only"; fi
if ! grep -q 'libshardgate\.a$' "$work/dev.files" || grep -qvE '^\./usr/(include/shardgate|lib)/' "$work/dev.files"; then
  bad "shardgate-dev: not the library, headers and package config alone: $(grep -vE '^\./usr/(include/shardgate|lib)/' "$work/dev.files" | head -3 | tr '\n' ' ')"
else ok "shardgate-dev: the library, headers and package config only"; fi

# Without dpkg-shlibdeps CPack alone would make a package with no Depends: cpack must refuse,
# naming the packages (runtime/cmake/cpack_checks.cmake). PATH here is every program of this
# PATH but dpkg-shlibdeps, and find_program is kept off the system directories (where it
# would find it anyway), as on a machine without dpkg-dev.
nodeps="$work/path-without-shlibdeps"
mkdir -p "$nodeps"
IFS=: read -r -a path_dirs <<< "$PATH"
for dir in "${path_dirs[@]}"; do
  for f in "$dir"/*; do
    name="$(basename "$f")"
    [ "$name" = dpkg-shlibdeps ] || [ -e "$nodeps/$name" ] || ln -s "$f" "$nodeps/$name"
  done
done
(cd "$build" && PATH="$nodeps" cpack -G DEB -B "$work/pkg-nodeps" -D CMAKE_FIND_USE_CMAKE_SYSTEM_PATH=FALSE \
   > "$work/nodeps.log" 2>&1)
if [ $? != 0 ] && grep -q "apt-get install -y dpkg-dev file" "$work/nodeps.log" \
   && ! ls "$work"/pkg-nodeps/shardgate_*.deb > /dev/null 2>&1; then
  ok "cpack without dpkg-shlibdeps refuses to make a package with no Depends"
else
  bad "cpack without dpkg-shlibdeps: made a package or did not say what to install"
  sed 's/^/     /' "$work/nodeps.log" >&2
fi

# Every package a Depends field names is installed here (name only; versions are this
# machine's own, which the package was built against). shardgate itself goes into the clean
# root below, not here.
check_installed() {  # check_installed PACKAGE DEPENDS
  for dep in $(echo "$2" | tr ',' '\n' | sed 's/(.*)//; s/|.*//' | tr -d ' '); do
    [ "$dep" = shardgate ] && continue
    dpkg-query -W -f '${Status}' "$dep" 2>/dev/null | grep -q 'install ok installed' \
      || bad "dependency $dep of $1 is not installed"
  done
}
depends="$(dpkg-deb -f "$deb" Depends)"
[ -n "$depends" ] && ok "package depends: $depends" || bad "package has no Depends"
check_installed shardgate "$depends"

# shardgate-dev depends on the tools' package of its own version and on the -dev packages of
# what find_package(shardgate) finds (shardgateConfig.cmake.in), each installed here too.
devdepends="$(dpkg-deb -f "$devdeb" Depends)"
version="$(dpkg-deb -f "$deb" Version)"
devdeps_ok=1
for want in "shardgate (= $version)" libfmt-dev nlohmann-json3-dev zlib1g-dev; do
  echo "$devdepends" | tr ',' '\n' | sed 's/^ *//; s/ *$//' | grep -qxF "$want" \
    || { bad "shardgate-dev does not depend on '$want' (Depends: $devdepends)"; devdeps_ok=0; }
done
[ "$devdeps_ok" = 1 ] && ok "shardgate-dev depends: $devdepends"
check_installed shardgate-dev "$devdepends"

# dpkg -i into a clean root.
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
check "dpkg -i into a clean root" 0 dpkg --root="$root" --force-depends --force-not-root \
  --force-script-chrootless -i "$deb"
check "dpkg -i shardgate-dev into the same root" 0 dpkg --root="$root" --force-depends --force-not-root \
  --force-script-chrootless -i "$devdeb"
bin="$root/usr/bin" share="$root/usr/share/shardgate"
for tool in ane-validator golden-validator; do
  [ -x "$bin/$tool" ] && ok "installed $tool" || bad "$tool not installed in usr/bin"
  # grep without -q reads all of ldd's output: an early exit could kill ldd with SIGPIPE, and
  # under pipefail the match would then read as no match.
  if ldd "$bin/$tool" | grep 'not found' > /dev/null; then bad "$tool: missing shared libraries"; fi
done
for f in include/shardgate/placement.h include/shardgate/ops.h lib/libshardgate.a \
         lib/cmake/shardgate/shardgateConfig.cmake share/shardgate/gates/fidelity.json \
         share/shardgate/schema/golden-report.schema.json share/shardgate/sample/chains/chain_lut4.json; do
  [ -e "$root/usr/$f" ] || bad "not installed: usr/$f"
done

# The sample from the installed tools, run from a directory that is not the source tree.
mkdir -p "$work/elsewhere" && cd "$work/elsewhere"
check "installed ane-validator: sample shard passes" 0 \
  "$bin/ane-validator" "$share/sample/shards/L0_attn_lut4.mlpackage" \
  --gate "$share/gates/residency.json" --json "$work/residency.json"
check "installed golden-validator: INT4-LUT sample chain passes" 0 \
  "$bin/golden-validator" run "$share/sample/chains/chain_lut4.json" --gate "$share/gates/fidelity.json"
check "installed golden-validator: INT8 sample chain fails its logits" 1 \
  "$bin/golden-validator" run "$share/sample/chains/chain_int8.json" --gate "$share/gates/fidelity.json"
check "installed ane-validator: a missing shard is bad input" 2 "$bin/ane-validator" "$work/nothing.mlpackage"
check "installed tools: --version" 0 "$bin/golden-validator" --version

# find_package(shardgate) from the installed files only.
check "find_package(shardgate): configure" 0 cmake -S "$src/tests/install/consumer" -B "$work/consumer" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
check "find_package(shardgate): build" 0 cmake --build "$work/consumer" -j2
if grep -q -- "$src/runtime" "$work/consumer/CMakeFiles/list_placement.dir/flags.make" 2>/dev/null; then
  bad "consumer compiled against the source tree, not the installed headers"
fi
# Its summary must agree with the installed ane-validator's report of the same shard.
"$work/consumer/list_placement" "$share/sample/shards/L0_attn_lut4.mlpackage" > "$work/consumer.txt" 2>&1
want="$(python3 -c 'import json,sys
r=json.load(open(sys.argv[1])); s=r["shards"][0]["summary"]
print("compute=%d ane=%d compile_time=%d" % (s["compute_ops"], s["on_ane"], s["compile_time_ops"]))' \
  "$work/residency.json" 2>&1)"
if [ "$(cat "$work/consumer.txt")" = "$want" ]; then ok "consumer agrees with ane-validator: $want"
else bad "consumer printed '$(cat "$work/consumer.txt")', ane-validator reports '$want'"; fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
