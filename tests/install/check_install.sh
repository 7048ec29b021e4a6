#!/usr/bin/env bash
# tests/install/check_install.sh BUILD_DIR WORK_DIR [TOOLCHAIN_FILE]
#
# `cmake --install BUILD_DIR --prefix WORK_DIR/prefix`, then checks what a user of the prefix gets:
# the files (a versioned SONAME, the static library, headers, the package and pkg-config files,
# emberc and the compiler headers on a host), and apps/cpp_deploy built out of tree against the
# prefix three ways (find_package with Ember::runtime and Ember::runtime_static, pkg-config) run on
# BUILD_DIR's test artifact: all three and the installed ember-run must run it. With a cross
# TOOLCHAIN_FILE (toolchains/*.cmake) the programs run under its qemu.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:?usage: check_install.sh BUILD_DIR WORK_DIR [TOOLCHAIN_FILE]}" && pwd)
WORK=${2:?usage: check_install.sh BUILD_DIR WORK_DIR [TOOLCHAIN_FILE]}
TOOLCHAIN=${3:-}
PREFIX=$WORK/prefix
ARTIFACT=$BUILD/test_artifacts/mlp

fail() { echo "check_install.sh: $*" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log"
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
LIBDIR=$(cache_value CMAKE_INSTALL_LIBDIR)
WITH_COMPILER=$(cache_value EMBER_BUILD_COMPILER)

if [ -n "$TOOLCHAIN" ]; then
  triple=$(sed -n 's/^set(EMBER_CROSS_TRIPLE \(.*\))$/\1/p' "$TOOLCHAIN")
  qemu=$(sed -n 's/^set(EMBER_CROSS_QEMU \(.*\))$/\1/p' "$TOOLCHAIN")
  [ -n "$triple" ] && [ -n "$qemu" ] || fail "$TOOLCHAIN names no EMBER_CROSS_TRIPLE/EMBER_CROSS_QEMU"
  RUN=("$qemu" -L "/usr/$triple")
  CXX=$triple-g++
  READELF=$triple-readelf
  # dlpack's header comes from the host, through the cross build's directory of links to it.
  CROSS_HEADERS=(-isystem "$BUILD/ember-cross-host-headers")
  CMAKE_ARGS=(-DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DEmber_DIR="$PREFIX/$LIBDIR/cmake/Ember")
else
  RUN=()
  CXX=${CXX:-c++}
  READELF=readelf
  CROSS_HEADERS=()
  CMAKE_ARGS=(-DCMAKE_PREFIX_PATH="$PREFIX")
fi

# --- the files --------------------------------------------------------------------------------
expected=(include/ember/runtime/graph_executor.h include/ember/runtime/c_runtime_api.h
          "$LIBDIR/libember_runtime.so" "$LIBDIR/libember_runtime.a"
          "$LIBDIR/cmake/Ember/EmberConfig.cmake" "$LIBDIR/cmake/Ember/EmberConfigVersion.cmake"
          "$LIBDIR/cmake/Ember/EmberRuntimeTargets.cmake" "$LIBDIR/pkgconfig/ember-runtime.pc"
          bin/ember-run)
[ "$WITH_COMPILER" = ON ] && expected+=(bin/emberc "$LIBDIR/libember_compiler.so"
                                  include/ember/compiler/driver.h)
for f in "${expected[@]}"; do [ -e "$PREFIX/$f" ] || fail "the install has no $f"; done
soname=$("$READELF" -d "$PREFIX/$LIBDIR/libember_runtime.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libember_runtime\.so\.[0-9]+$ ]] || fail "libember_runtime.so's SONAME is '$soname'"
[ -f "$PREFIX/$LIBDIR/$soname" ] || fail "the install has no $soname"
echo "installed: SONAME $soname, $(find "$PREFIX" -type f | wc -l) files"

# --- apps/cpp_deploy against the prefix ---------------------------------------------------------
cmake -S "$ROOT/tests/install/app" -B "$WORK/app" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "${CMAKE_ARGS[@]}" -DEMBER_EXPECT_COMPILER="$WITH_COMPILER" >"$WORK/app-configure.log" || { cat "$WORK/app-configure.log"; exit 1; }
cmake --build "$WORK/app" >"$WORK/app-build.log" || { cat "$WORK/app-build.log"; exit 1; }
# pkg-config's own flags, with the prefix's library directory as the run path.
PKG_CONFIG_PATH=$PREFIX/$LIBDIR/pkgconfig PKG_CONFIG_LIBDIR=$PREFIX/$LIBDIR/pkgconfig \
  pkg-config --exists --print-errors ember-runtime
pc_flags=$(PKG_CONFIG_LIBDIR=$PREFIX/$LIBDIR/pkgconfig pkg-config --cflags --libs ember-runtime)
# shellcheck disable=SC2086  # the flags are words
"$CXX" -std=c++17 -O1 "${CROSS_HEADERS[@]}" "$ROOT/apps/cpp_deploy/cpp_deploy.cc" $pc_flags \
  -Wl,-rpath,"$PREFIX/$LIBDIR" -o "$WORK/deploy_pkgconfig"

run_deploy() { "${RUN[@]}" "$@" "$ARTIFACT" data "$ARTIFACT/input_data.npy"; }
want=$(run_deploy "$WORK/app/deploy_shared")
[ "$(echo "$want" | wc -l)" = 5 ] || fail "deploy_shared printed: $want"
[ "$(run_deploy "$WORK/app/deploy_static")" = "$want" ] || fail "deploy_static differs"
[ "$(run_deploy "$WORK/deploy_pkgconfig")" = "$want" ] || fail "deploy_pkgconfig differs"
# The installed ember-run finds the installed library through its run path alone.
"${RUN[@]}" "$PREFIX/bin/ember-run" "$ARTIFACT" --output-dir "$WORK/out" >"$WORK/ember-run.log" 2>&1 ||
  { cat "$WORK/ember-run.log"; fail "the installed ember-run failed"; }
[ -f "$WORK/out/output_0.npy" ] || fail "the installed ember-run wrote no output"
echo "find_package (shared, static), pkg-config and the installed ember-run all ran $ARTIFACT"
