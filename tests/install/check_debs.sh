#!/usr/bin/env bash
# tests/install/check_debs.sh BUILD_DIR WORK_DIR
#
# Builds BUILD_DIR's Debian packages with CPack and checks each one's name, architecture,
# dependencies (dpkg-deb -I) and files (dpkg-deb -c): libember-runtime holds the library and
# ember-run and depends on libc6 and libstdc++6 only; libember-runtime-dev the headers, the static
# library, the CMake package and the pkg-config file; ember-compiler (when the build has the
# compiler) emberc and its library. Packages for this machine are then unpacked into a root
# (dpkg -x), where ember-run runs BUILD_DIR's test artifact and emberc answers --help.
set -euo pipefail

BUILD=$(cd "${1:?usage: check_debs.sh BUILD_DIR WORK_DIR}" && pwd)
WORK=${2:?usage: check_debs.sh BUILD_DIR WORK_DIR}
fail() { echo "check_debs.sh: $*" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK"
(cd "$WORK" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$WORK" >cpack.log) ||
  { cat "$WORK/cpack.log"; exit 1; }
with_compiler=$(sed -n 's/^EMBER_BUILD_COMPILER:BOOL=//p' "$BUILD/CMakeCache.txt")

deb_of() {
  local found=("$WORK"/"$1"_*.deb)
  [ -f "${found[0]}" ] || fail "cpack made no $1 package (made: $(ls "$WORK"/*.deb))"
  echo "${found[0]}"
}
field() { dpkg-deb -f "$1" "$2"; }
# has DEB PATH...: every PATH (relative to /) is in the package.
has() {
  local deb=$1 list
  shift
  list=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||')
  for f in "$@"; do
    grep -qx "$f" <<<"$list" || fail "$(basename "$deb") lacks /$f"
  done
}
lacks() {
  local deb=$1 pattern=$2
  local list
  # Listed first, then searched: with pipefail, grep -q ending a pipe early fails the writer.
  list=$(dpkg-deb -c "$deb" | awk '{print $6}')
  if grep -qE "$pattern" <<<"$list"; then
    fail "$(basename "$deb") holds files matching $pattern"
  fi
}

runtime=$(deb_of libember-runtime)
dev=$(deb_of libember-runtime-dev)
arch=$(field "$runtime" Architecture)
has "$runtime" usr/lib/libember_runtime.so.0 usr/lib/libember_runtime.so.0.1.0 usr/bin/ember-run
lacks "$runtime" '(include/|\.a$|\.so$|cmake|pkgconfig)'
for dep in $(field "$runtime" Depends | tr ',' '\n' | awk '{print $1}'); do
  case $dep in libc6 | libstdc++6) ;; *) fail "libember-runtime depends on $dep" ;; esac
done
has "$dev" usr/include/ember/runtime/graph_executor.h usr/include/ember/runtime/c_runtime_api.h \
  usr/lib/libember_runtime.a usr/lib/libember_runtime.so usr/lib/cmake/Ember/EmberConfig.cmake \
  usr/lib/cmake/Ember/EmberConfigVersion.cmake usr/lib/pkgconfig/ember-runtime.pc
grep -q "libember-runtime (= $(field "$runtime" Version))" <<<"$(field "$dev" Depends)" ||
  fail "libember-runtime-dev does not depend on this libember-runtime"
debs=("$runtime" "$dev")
if [ "$with_compiler" = ON ]; then
  compiler=$(deb_of ember-compiler)
  has "$compiler" usr/bin/emberc usr/lib/libember_compiler.so \
    usr/lib/cmake/Ember/EmberCompilerTargets.cmake usr/include/ember/compiler/driver.h
  debs+=("$compiler")
fi
for deb in "${debs[@]}"; do
  [ "$(field "$deb" Architecture)" = "$arch" ] || fail "$(basename "$deb") is not for $arch"
  printf '  %-44s %9d bytes\n' "$(basename "$deb")" "$(stat -c %s "$deb")"
done

if [ "$arch" = "$(dpkg --print-architecture)" ]; then
  for deb in "${debs[@]}"; do dpkg -x "$deb" "$WORK/root"; done
  "$WORK/root/usr/bin/ember-run" "$BUILD/test_artifacts/mlp" --output-dir "$WORK/out" \
    >"$WORK/ember-run.log" 2>&1 || { cat "$WORK/ember-run.log"; fail "ember-run from the package failed"; }
  [ -f "$WORK/out/output_0.npy" ] || fail "ember-run from the package wrote no output"
  if [ "$with_compiler" = ON ]; then
    "$WORK/root/usr/bin/emberc" --help >/dev/null || fail "emberc from the package does not run"
  fi
  echo "unpacked $arch packages: ember-run ran the test artifact"
fi
echo "Debian packages for $arch: contents and dependencies as expected"
