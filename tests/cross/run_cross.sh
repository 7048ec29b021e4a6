#!/usr/bin/env bash
# tests/cross/run_cross.sh [--full] [--arch aarch64|armhf]...
#
# Ember on ARM, end to end on an x86-64 host with qemu-user:
#   1. the host emberc and ember-run (built in $EMBER_HOST_BUILD if needed);
#   2. per ARM target, a runtime-only cross build (toolchains/*.cmake) and its CTest suite, run
#      through qemu (runtime tests, apps/bundle_static against ember-run); for aarch64, its
#      `cmake --install` and an app built against the prefix (tests/install/check_install.sh) and
#      its runtime-only Python wheel; for both, the Debian packages (tests/install/check_debs.sh);
#   3. the MLPs, the small CNN and MobileNetV2 (tests/models/gen_models.py) compiled for x86-64,
#      aarch64 and armv7 hard-float NEON; the ARM outputs, from the cross-built ember-run under qemu, must
#      match the x86-64 ones on the same input within rtol 1e-3 / atol 1e-4;
#   3b. for aarch64, the minimal runtime (EMBER_RUNTIME_MINIMAL=ON, its own build directory): the
#      same aarch64 artifacts run through tests/minimal/minimal_run.c (C ABI only) under qemu must
#      match x86-64, and what the build leaves out must fail with a message naming the option;
#   3c. exporter-shaped models with control flow (tests/models/gen_exported.py: Ifs on run-time
#      data, nested; a Loop with a shape-derived trip count), dilated convs (dense and depthwise,
#      on the blocked NEON kernels), float16 (armv7 converts halves through the runtime's
#      __gnu_h2f_ieee / __gnu_f2h_ieee) and int8 (ORT's QDQ and QOperator layouts) compiled for
#      each ARM target must match x86-64 the same way, the int8 ones bit for bit;
#   3d. the int8 kernels (tests/models/gen_int8_convs.py: QLinearConvs, each conv case on both
#      forms of the int8 conv and each depthwise case on its kernel, forced) compiled for aarch64
#      with -mattr=+dotprod (sdot), +dotprod,+i8mm (usdot) and without a dot (smull + sadalp), and
#      for armv7 NEON (vmull + vpadal): each planned on the kernel, its lib.so holding the dot's
#      instruction, and under qemu (QEMU_CPU=max) equal bit for bit to x86-64 and to the integer
#      definition; for aarch64 +dotprod and +i8mm, the int8 models of 3c the same way;
#   4. the `core` ONNX conformance tier (tests/onnx/run_conformance.py) with the ARM artifacts under
#      qemu against the same cases on x86-64: every case that passes on x86-64 must pass on ARM.
#      Default: one case per operator of the core and extended tiers (the loop kernels, Einsum,
#      GridSample, the spectral ops...), aarch64 only. --full: the whole core tier, aarch64 and
#      armv7.
#
# Environment (all optional):
#   EMBER_HOST_BUILD        host build directory holding bin/emberc, bin/ember-run (default: build)
#   EMBER_CROSS_BUILD_ROOT  cross build directories go to $EMBER_CROSS_BUILD_ROOT/cross-<arch>
#                           (default: build)
#   EMBER_CROSS_BUILD_AARCH64, EMBER_CROSS_BUILD_ARMHF   a build directory for one arch instead
#   EMBER_CROSS_BUILD_AARCH64_MINIMAL   the minimal runtime's (default: <aarch64 build>-minimal)
#   EMBER_CROSS_WORK        models, artifacts, reports (default: $EMBER_CROSS_BUILD_ROOT/cross-work)
#   EMBER_CROSS_JOBS        parallel jobs for builds, ctest and conformance (default 2)
# Exit status 0 only if every step passed; the summary at the end lists each step and its time.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib/in_parallel.sh
. "$ROOT/tests/lib/in_parallel.sh"
PY=/usr/bin/python3
FULL=0
ARCHES=()
usage() { sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --full) FULL=1 ;;
    --arch) shift; ARCHES+=("${1:?--arch needs aarch64 or armhf}") ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_cross.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#ARCHES[@]} -eq 0 ] && ARCHES=(aarch64 armhf)

abspath() { case "$1" in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
HOST_BUILD=$(abspath "${EMBER_HOST_BUILD:-build}")
CROSS_ROOT=$(abspath "${EMBER_CROSS_BUILD_ROOT:-build}")
WORK=$(abspath "${EMBER_CROSS_WORK:-$CROSS_ROOT/cross-work}")
JOBS=${EMBER_CROSS_JOBS:-2}

declare -A BUILD=([aarch64]=$(abspath "${EMBER_CROSS_BUILD_AARCH64:-$CROSS_ROOT/cross-aarch64}")
                 [armhf]=$(abspath "${EMBER_CROSS_BUILD_ARMHF:-$CROSS_ROOT/cross-armhf}"))
MINIMAL_BUILD=$(abspath "${EMBER_CROSS_BUILD_AARCH64_MINIMAL:-${BUILD[aarch64]}-minimal}")
declare -A TOOLCHAIN=([aarch64]=aarch64-linux-gnu.cmake [armhf]=arm-linux-gnueabihf.cmake)
declare -A SYSROOT=([aarch64]=/usr/aarch64-linux-gnu [armhf]=/usr/arm-linux-gnueabihf)
declare -A QEMU=([aarch64]=qemu-aarch64 [armhf]=qemu-arm)
declare -A TARGET=([aarch64]="llvm -mtriple=aarch64-linux-gnu"
                   [armhf]="llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon")
for a in "${ARCHES[@]}"; do
  [ -n "${TOOLCHAIN[$a]:-}" ] || { echo "run_cross.sh: unknown arch '$a' (aarch64, armhf)" >&2; exit 2; }
done

STEPS=()
FAILED=0
# step NAME COMMAND...: runs COMMAND, records pass/fail and seconds; a failure does not stop the run.
step() {
  local name=$1; shift
  local start=$SECONDS
  echo
  echo "=== $name"
  if "$@"; then
    STEPS+=("$(printf 'PASS  %5ds  %s' $((SECONDS - start)) "$name")")
  else
    STEPS+=("$(printf 'FAIL  %5ds  %s' $((SECONDS - start)) "$name")")
    FAILED=1
  fi
}
emulator() { echo "${QEMU[$1]} -L ${SYSROOT[$1]}"; }

# --- 1. host tools ----------------------------------------------------------------------------
host_tools() {
  for tool in "${QEMU[@]}"; do
    command -v "$tool" >/dev/null || { echo "missing $tool (Debian package qemu-user)"; return 1; }
  done
  if [ ! -f "$HOST_BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$HOST_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release || return 1
  fi
  cmake --build "$HOST_BUILD" -j "$JOBS" --target emberc ember-run
}

# --- 2. cross builds and their CTest suites ----------------------------------------------------
cross_build() {
  local arch=$1 dir=${BUILD[$1]}
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$ROOT/toolchains/${TOOLCHAIN[$arch]}" \
    -DEMBER_HOST_EMBERC="$HOST_BUILD/bin/emberc" >"$WORK/logs/configure-$arch.log" 2>&1 ||
    { tail -30 "$WORK/logs/configure-$arch.log"; return 1; }
  cmake --build "$dir" -j "$JOBS"
}
# Not run under qemu, because they measure qemu rather than Ember; they run natively in the x86-64
# suite and on real boards:
#  - ThreadPoolTest.Fork*: a child forked from a process that already has threads aborts inside
#    qemu-user when it starts threads of its own (qemu asserts `cpu == current_cpu`);
#  - GraphExecutor.LoadingNeverHoldsParamsTwice...: its resident-memory bound counts qemu's own
#    translation cache (~2-3 MB over the test's slack); the params-held-once ratio itself passes;
#  - ThreadPoolEnvironment.*: re-executes the test binary (a "threadsafe" death test), which the
#    kernel cannot exec without qemu registered in binfmt_misc ("Exec format error");
#  - RunProcess.NamesAProgramThatIsMissing: qemu-user's emulated posix_spawn starts a child that
#    fails to exec instead of failing the spawn, so the host-side tool's message differs;
#  - DeviceAPI.LargeArraysArriveWithTheirPagesFaultedIn: qemu-user answers madvise's
#    MADV_POPULATE_WRITE with success without passing it on, so no page comes in.
QEMU_NOT_RUN='^(ThreadPoolTest\.Fork|GraphExecutor\.LoadingNeverHoldsParamsTwice|ThreadPoolEnvironment\.|RunProcess\.NamesAProgramThatIsMissing|DeviceAPI\.LargeArraysArriveWithTheirPagesFaultedIn)'
cross_ctest() {
  echo "not run under qemu (they measure qemu or exec themselves, see run_cross.sh):"
  ctest --test-dir "${BUILD[$1]}" -N -R "$QEMU_NOT_RUN" | grep 'Test *#' | sed 's/^/  /'
  # The summary, and what a failing test printed (a tail alone showed the name but not why).
  local log="${BUILD[$1]}/ctest-qemu.log" status=0
  ctest --test-dir "${BUILD[$1]}" --output-on-failure -j "$JOBS" --timeout 600 \
    -E "$QEMU_NOT_RUN" >"$log" 2>&1 || status=$?
  tail -25 "$log"
  if [ "$status" -ne 0 ]; then
    echo "--- output of the failing tests (all of it: $log)"
    grep -v -e ' Passed ' -e '^ *Start ' "$log" | head -200
  fi
  return "$status"
}

# The minimal runtime for aarch64: the library and tests/minimal's C driver, nothing else.
minimal_build() {
  cmake -S "$ROOT" -B "$MINIMAL_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$ROOT/toolchains/${TOOLCHAIN[aarch64]}" -DEMBER_RUNTIME_MINIMAL=ON \
    >"$WORK/logs/configure-aarch64-minimal.log" 2>&1 ||
    { tail -30 "$WORK/logs/configure-aarch64-minimal.log"; return 1; }
  cmake --build "$MINIMAL_BUILD" -j "$JOBS"
}
# minimal_check MODEL: the artifact model_check compiled for aarch64, run by the minimal runtime.
minimal_check() {
  local m=$1 art=$WORK/aarch64/$1 out=$WORK/aarch64-minimal/$1
  [ -f "$art/lib.so" ] || { echo "no aarch64 artifact for $m (its model step failed)"; return 1; }
  rm -rf "$out" && mkdir -p "$out" || return 1
  # shellcheck disable=SC2046
  $(emulator aarch64) "$MINIMAL_BUILD/bin/ember_minimal_run" "$art" \
    "$WORK/models/${m}_input.npy" "$out" || return 1
  "$PY" "$ROOT/tests/cross/compare_outputs.py" "$WORK/x86_64/$m/out" "$out" \
    --rtol 1e-3 --atol 1e-4 --label "$m aarch64 minimal runtime vs x86-64"
}
minimal_absent() {
  # shellcheck disable=SC2046
  $(emulator aarch64) "$MINIMAL_BUILD/bin/ember_minimal_run" --check-absent "$WORK/aarch64/mlp"
}

# cmake --install of the cross build, then apps/cpp_deploy built out of tree against the prefix
# with the toolchain file (find_package, pkg-config) and run under qemu.
cross_install() {
  "$ROOT/tests/install/check_install.sh" "${BUILD[$1]}" "$WORK/install-$1" \
    "$ROOT/toolchains/${TOOLCHAIN[$1]}"
}
# The Debian packages of the cross build: names, architecture, dependencies and files.
cross_debs() {
  "$ROOT/tests/install/check_debs.sh" "${BUILD[$1]}" "$WORK/debs-$1"
}
# The runtime-only Python wheel of the cross build, tagged for the board.
cross_wheel() {
  local dir=$WORK/wheel-$1 wheel
  rm -rf "$dir" && mkdir -p "$dir" || return 1
  EMBER_BUILD_DIR=${BUILD[$1]} "$PY" -m pip wheel --no-build-isolation --no-index --no-deps -q \
    --wheel-dir "$dir" "$ROOT/python" || return 1
  wheel=$(ls "$dir"/ember-*-py3-none-linux_"$1".whl) || return 1
  # Listed first, then searched: with pipefail, grep -q ending a pipe early fails the writer.
  local listing
  listing=$("$PY" -m zipfile -l "$wheel") || return 1
  grep -q '^ember/lib/libember_runtime.so ' <<<"$listing" || return 1
  echo "$(basename "$wheel"): $(stat -c %s "$wheel") bytes"
}

# --- 3. whole models: ARM outputs against x86-64 ------------------------------------------------
MODELS=(mlp mlp_batch64 cnn mobilenetv2 resnet18 mobilenetv3)
prepare_models() {
  mkdir -p "$WORK/models" || return 1
  local m need=0
  for m in "${MODELS[@]}"; do
    [ "$WORK/models/$m.onnx" -nt "$ROOT/tests/models/gen_models.py" ] || need=1
  done
  if [ $need = 1 ]; then
    # shellcheck disable=SC2046
    "$PY" "$ROOT/tests/models/gen_models.py" "$WORK/models" \
      $(printf -- '--only %s ' "${MODELS[@]}") || return 1
  fi
  # One seeded input per model, shared by every target.
  "$PY" - "$WORK/models" "${MODELS[@]}" <<'EOF' || return 1
import os, sys
import numpy as np
import onnx
d = sys.argv[1]
for m in sys.argv[2:]:
    g = onnx.load(os.path.join(d, m + ".onnx")).graph
    inits = {t.name for t in g.initializer}
    (inp,) = [i for i in g.input if i.name not in inits]
    shape = [x.dim_value for x in inp.type.tensor_type.shape.dim]
    x = np.random.default_rng(2024).standard_normal(shape).astype(np.float32)
    np.save(os.path.join(d, "%s_input.npy" % m), x)
EOF
  # x86-64 references from the host tools.
  for m in "${MODELS[@]}"; do
    local art=$WORK/x86_64/$m
    rm -rf "$art" && mkdir -p "$art/out" || return 1
    "$HOST_BUILD/bin/emberc" compile "$WORK/models/$m.onnx" -o "$art" || return 1
    "$HOST_BUILD/bin/ember-run" "$art" --input "input=$WORK/models/${m}_input.npy" \
      --output-dir "$art/out" >/dev/null || return 1
  done
}
model_check() {
  local arch=$1 m=$2 art=$WORK/$1/$2
  rm -rf "$art" && mkdir -p "$art/out" || return 1
  "$HOST_BUILD/bin/emberc" compile "$WORK/models/$m.onnx" -o "$art" --target "${TARGET[$arch]}" ||
    return 1
  file -b "$art/lib.so" | cut -c1-60
  # shellcheck disable=SC2046
  $(emulator "$arch") "${BUILD[$arch]}/bin/ember-run" "$art" \
    --input "input=$WORK/models/${m}_input.npy" --output-dir "$art/out" >/dev/null || return 1
  "$PY" "$ROOT/tests/cross/compare_outputs.py" "$WORK/x86_64/$m/out" "$art/out" \
    --rtol 1e-3 --atol 1e-4 --label "$m $arch vs x86-64"
}

# --- 3c. exporter-shaped models with control flow: If on data (one kernel), unrolled Loop ------
EXPORTED=(if_data_nested if_data_taken loop_shape qdq_uint8 qdq_uint8_depthwise qdq_uint8_maxpool
  qoperator_uint8 dilated_segmentation float16_convnet)
# --input NAME=FILE for every seeded input of model $1, and its emberc arguments.
exported_inputs() {
  local f
  for f in "$WORK/exported/$1"_in_*.npy; do
    printf -- '--input %s=%s ' "$(basename "$f" .npy | sed "s/^$1_in_//")" "$f"
  done
}
exported_args() { if [ "$1" = loop_shape ]; then echo "--input-shape seq=3,1,4"; fi; }
# The int8 models' arithmetic is integer (exact float sums, ONNX's rounding): bit for bit.
exported_tolerance() {
  case $1 in q*_uint8) echo "--rtol 0 --atol 0" ;; *) echo "--rtol 1e-3 --atol 1e-4" ;; esac
}
prepare_exported() {
  "$PY" "$ROOT/tests/models/gen_exported.py" "$WORK/exported" >/dev/null || return 1
  "$PY" - "$WORK/exported" "${EXPORTED[@]}" <<'EOF' || return 1
import os, sys
import numpy as np
import onnx
d = sys.argv[1]
for m in sys.argv[2:]:
    g = onnx.load(os.path.join(d, m + ".onnx")).graph
    inits = {t.name for t in g.initializer}
    for k, inp in enumerate(i for i in g.input if i.name not in inits):
        shape = [x.dim_value or 3 for x in inp.type.tensor_type.shape.dim]
        x = np.random.default_rng(2024 + k).standard_normal(shape).astype(np.float32)
        np.save(os.path.join(d, "%s_in_%s.npy" % (m, inp.name)), x)
EOF
  local m art
  for m in "${EXPORTED[@]}"; do
    art=$WORK/x86_64/$m
    rm -rf "$art" && mkdir -p "$art/out" || return 1
    # shellcheck disable=SC2046
    "$HOST_BUILD/bin/emberc" compile "$WORK/exported/$m.onnx" -o "$art" $(exported_args "$m") ||
      return 1
    # shellcheck disable=SC2046
    "$HOST_BUILD/bin/ember-run" "$art" $(exported_inputs "$m") --output-dir "$art/out" \
      >/dev/null || return 1
  done
}
# exported_check ARCH MODEL [VARIANT]: VARIANT (dotprod, i8mm; 3d) compiles for that aarch64 target.
exported_check() {
  local arch=$1 m=$2 variant=${3:-} target=${TARGET[$1]} art=$WORK/$1/$2
  [ -z "$variant" ] || { target=${INT8_TARGET[$variant]}; art=$WORK/$1-$variant/$2; }
  rm -rf "$art" && mkdir -p "$art/out" || return 1
  # shellcheck disable=SC2046
  "$HOST_BUILD/bin/emberc" compile "$WORK/exported/$m.onnx" -o "$art" $(exported_args "$m") \
    --target "$target" || return 1
  # shellcheck disable=SC2046
  env ${variant:+QEMU_CPU=max} $(emulator "$arch") "${BUILD[$arch]}/bin/ember-run" "$art" \
    $(exported_inputs "$m") --output-dir "$art/out" >/dev/null || return 1
  # shellcheck disable=SC2046
  "$PY" "$ROOT/tests/cross/compare_outputs.py" "$WORK/x86_64/$m/out" "$art/out" \
    $(exported_tolerance "$m") --label "$m $arch${variant:+ +$variant} vs x86-64"
}

# --- 3d. ARM int8 kernels: sdot (dotprod), usdot (i8mm), smull / vmull without a dot -----------
INT8_DIR=$WORK/int8
declare -A INT8_TARGET=([dotprod]="llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod"
                        [i8mm]="llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod,+i8mm"
                        [neon]="${TARGET[aarch64]}" [neon32]="${TARGET[armhf]}")
declare -A INT8_ARCH=([dotprod]=aarch64 [i8mm]=aarch64 [neon]=aarch64 [neon32]=armhf)
declare -A INT8_DOT=([dotprod]=sdot [i8mm]=usdot [neon]=smull [neon32]=vmull.s8)
# The conv kernels' names end in the variant's suffix; the depthwise ones in the arch's.
declare -A INT8_SUFFIX=([dotprod]=_neon_dotprod [i8mm]=_neon_i8mm [neon]=_neon [neon32]=_neon32)
declare -A DEPTHWISE_SUFFIX=([aarch64]=_neon [armhf]=_neon32)
int8_cases() { [ -f "$INT8_DIR/cases.tsv" ] && cut -f1 "$INT8_DIR/cases.tsv"; }
# int8_refuses CASE KERNEL: 1 where the kernel must refuse the case's weights (cases.tsv's third
# column lists those kernels), else 0.
int8_refuses() {
  awk -F'\t' -v m="$1" -v k="$2" '$1 == m { n = split($3, r, " "); for (i = 1; i <= n; i++)
    if (r[i] == k) found = 1 } END { print found ? 1 : 0 }' "$INT8_DIR/cases.tsv"
}
# int8_kernels CASE VARIANT: the kernels the case runs on, each forced in turn (cases.tsv's
# families: both forms of the int8 conv, or the depthwise one).
int8_kernels() {
  local family
  for family in $(awk -F'\t' -v m="$1" '$1 == m { print $2 }' "$INT8_DIR/cases.tsv"); do
    case $family in
      depthwise_*) echo "${family}${DEPTHWISE_SUFFIX[${INT8_ARCH[$2]}]}" ;;
      *) echo "${family}${INT8_SUFFIX[$2]}" ;;
    esac
  done
}
# int8_reference CASE: the case on x86-64, equal to the integer definition.
int8_reference() {
  local m=$1 art=$WORK/x86_64/int8_$1
  rm -rf "$art" && mkdir -p "$art/out" || return 1
  "$HOST_BUILD/bin/emberc" compile "$INT8_DIR/$m.onnx" -o "$art" || return 1
  "$HOST_BUILD/bin/ember-run" "$art" --input "x=$INT8_DIR/${m}_x.npy" --output-dir "$art/out" \
    >/dev/null || return 1
  "$PY" "$ROOT/tests/cross/compare_outputs.py" "$INT8_DIR/${m}_expected" "$art/out" \
    --rtol 0 --atol 0 --label "int8 $m x86-64 vs the integer definition"
}
prepare_int8_kernels() {
  "$PY" "$ROOT/tests/models/gen_int8_convs.py" "$INT8_DIR" || return 1
  int8_cases | in_parallel "$JOBS" int8_reference
}
# int8_kernel_case VARIANT CASE KERNEL: the case compiled for the variant with the kernel forced,
# planned on it (or refused where it must be), its lib.so holding the variant's dot instruction,
# and its outputs under qemu equal bit for bit to x86-64's.
int8_kernel_case() {
  local variant=$1 m=$2 kernel=$3 arch=${INT8_ARCH[$1]} art dots refused
  art=$WORK/$arch-$variant/int8_${m}_$kernel
  rm -rf "$art" && mkdir -p "$art/out" || return 1
  EMBER_SCHEDULE=$kernel "$HOST_BUILD/bin/emberc" compile "$INT8_DIR/$m.onnx" -o "$art" \
    --dump-ir "$art/ir" --target "${INT8_TARGET[$variant]}" >/dev/null || return 1
  # The widening dot's channels form refuses weights with two -128 in a pair of products it
  # sums in int16 (cases.tsv's third column); the conv then runs on another path, still exact.
  refused=$(int8_refuses "$m" "$kernel")
  if grep -q "\"$kernel\"" "$art"/ir/*_plan_kernels.txt; then
    [ "$refused" = 0 ] || { echo "int8 $m: planned on $kernel, which must refuse it"; return 1; }
  elif [ "$refused" = 1 ]; then
    echo "int8 $m: $kernel refuses its weights (two -128 in a pair), as it must"
  else
    echo "int8 $m: not planned on $kernel"
    return 1
  fi
  if [[ $kernel != depthwise_* && $refused = 0 ]]; then
    # Counted, not grep -q: with pipefail, a grep ending the pipe early fails the writer.
    dots=$(llvm-objdump-19 -d "$art/lib.so" | grep -cw "${INT8_DOT[$variant]}")
    [ "$dots" -gt 0 ] || { echo "int8 $m: $kernel emitted no ${INT8_DOT[$variant]}"; return 1; }
    echo "int8 $m $kernel: $dots ${INT8_DOT[$variant]} in lib.so"
  fi
  # shellcheck disable=SC2046
  QEMU_CPU=max $(emulator "$arch") "${BUILD[$arch]}/bin/ember-run" "$art" \
    --input "x=$INT8_DIR/${m}_x.npy" --output-dir "$art/out" >/dev/null || return 1
  "$PY" "$ROOT/tests/cross/compare_outputs.py" "$WORK/x86_64/int8_$m/out" "$art/out" \
    --rtol 0 --atol 0 --label "int8 $m $arch $kernel vs x86-64"
}
# int8_kernel_check dotprod|i8mm|neon|neon32: every case on each of its kernels.
int8_kernel_check() {
  local variant=$1 m kernel cases
  command -v llvm-objdump-19 >/dev/null || { echo "missing llvm-objdump-19 (Debian llvm-19)"; return 1; }
  cases=$(int8_cases)
  [ -n "$cases" ] || { echo "no int8 cases in $INT8_DIR (their generate step failed)"; return 1; }
  for m in $cases; do
    for kernel in $(int8_kernels "$m" "$variant"); do echo "$variant $m $kernel"; done
  done | in_parallel "$JOBS" int8_kernel_case
}

# --- 4. ONNX conformance (core tier) ------------------------------------------------------------
CORPUS=$WORK/onnx-corpus
prepare_conformance() {
  mkdir -p "$WORK/bin" || return 1
  # emberc for a cross target: the runner calls `$EMBERC compile MODEL -o DIR`.
  local arch
  for arch in "${ARCHES[@]}"; do
    cat >"$WORK/bin/emberc-$arch" <<EOF
#!/bin/sh
# Generated by tests/cross/run_cross.sh: the host emberc with the $arch target.
exec "$HOST_BUILD/bin/emberc" "\$@" --target "${TARGET[$arch]}"
EOF
    chmod +x "$WORK/bin/emberc-$arch" || return 1
  done
  local list=$WORK/core-cases.txt extended=$WORK/extended-cases.txt
  "$PY" "$ROOT/tests/onnx/run_conformance.py" --corpus "$CORPUS" --tier core --list >"$list" ||
    return 1
  "$PY" "$ROOT/tests/onnx/run_conformance.py" --corpus "$CORPUS" --tier extended --list \
    >"$extended" || return 1
  # The default subset: the first case of each operator (ops list) of the core and extended
  # tiers, as a corpus of links.
  rm -rf "$WORK/onnx-subset" && mkdir -p "$WORK/onnx-subset/node" || return 1
  cat "$list" "$extended" | awk -F'\t' 'NF >= 3 && !seen[$3]++ { print $1 }' | while read -r c; do
    ln -s "$CORPUS/node/$c" "$WORK/onnx-subset/node/$c"
  done
  echo "core tier: $(awk -F'\t' 'NF >= 3' "$list" | wc -l) cases, extended $(awk -F'\t' 'NF >= 3' "$extended" | wc -l); default subset: $(ls "$WORK/onnx-subset/node" | wc -l) (one per operator)"
}
# conformance LABEL CORPUS EMBERC EMBER_RUN [TIER]: writes $WORK/conformance-LABEL.json; without
# TIER every case of CORPUS runs.
conformance() {
  local label=$1 corpus=$2 tier=()
  [ -n "${5:-}" ] && tier=(--tier "$5")
  EMBERC=$3 EMBER_RUN=$4 "$PY" "$ROOT/tests/onnx/run_conformance.py" --corpus "$corpus" \
    --no-generate "${tier[@]}" --freeze-int-inputs -j "$JOBS" --timeout 300 --report-only \
    --json "$WORK/conformance-$label.json" >"$WORK/logs/conformance-$label.log" 2>&1
  tail -1 "$WORK/logs/conformance-$label.log"
}
conformance_check() {
  local arch=$1 corpus=$2 set=$3 tier=
  [ "$set" = core ] && tier=core
  [ -f "$WORK/conformance-x86_64-$set.json" ] || {
    conformance "x86_64-$set" "$corpus" "$HOST_BUILD/bin/emberc" "$HOST_BUILD/bin/ember-run" \
      "$tier" || return 1
  }
  conformance "$arch-$set" "$corpus" "$WORK/bin/emberc-$arch" \
    "$(emulator "$arch") ${BUILD[$arch]}/bin/ember-run" "$tier" || return 1
  "$PY" "$ROOT/tests/cross/compare_conformance.py" "$WORK/conformance-x86_64-$set.json" \
    "$WORK/conformance-$arch-$set.json" --label "$arch"
}

# --- 5. stripped sizes (figures, not a check) ----------------------------------------------------
sizes() {
  local label=$1 dir=$2 strip=$3 f tmp
  tmp=$(mktemp)
  for f in lib/libember_runtime.so lib/libember_runtime.a bin/ember-run bin/cpp_deploy bin/bundle_static; do
    [ -f "$dir/$f" ] || continue
    case $f in *.a) "$strip" --strip-debug -o "$tmp" "$dir/$f" ;; *) "$strip" --strip-unneeded -o "$tmp" "$dir/$f" ;; esac
    printf '  %-16s %-26s %9d bytes stripped\n' "$label" "$f" "$(stat -c %s "$tmp")"
  done
  rm -f "$tmp"
}
declare -A STRIP=([aarch64]=aarch64-linux-gnu-strip [armhf]=arm-linux-gnueabihf-strip)

# --- run ------------------------------------------------------------------------------------------
T0=$SECONDS
mkdir -p "$WORK/logs"
rm -f "$WORK"/conformance-*.json
echo "run_cross.sh: $([ $FULL = 1 ] && echo full || echo default) mode, arches: ${ARCHES[*]}"
echo "host build $HOST_BUILD, work $WORK, $JOBS jobs"
for a in "${ARCHES[@]}"; do echo "$a build ${BUILD[$a]}"; done

step "host emberc + ember-run" host_tools
if [ $FAILED = 1 ]; then
  printf '%s\n' "${STEPS[@]}"
  exit 1
fi
for arch in "${ARCHES[@]}"; do
  step "$arch: runtime-only cross build" cross_build "$arch"
  step "$arch: ctest under qemu (runtime tests, bundle_static)" cross_ctest "$arch"
done
for arch in "${ARCHES[@]}"; do
  step "$arch: Debian packages" cross_debs "$arch"
done
if [[ " ${ARCHES[*]} " == *" aarch64 "* ]]; then
  step "aarch64: cmake --install, an app built against the prefix under qemu" cross_install aarch64
  step "aarch64: runtime-only Python wheel" cross_wheel aarch64
fi
step "models: generate, x86-64 reference outputs" prepare_models
for arch in "${ARCHES[@]}"; do
  for m in "${MODELS[@]}"; do
    step "$arch: $m matches x86-64 (rtol 1e-3, atol 1e-4)" model_check "$arch" "$m"
  done
done
step "exported models with control flow: generate, x86-64 reference outputs" prepare_exported
for arch in "${ARCHES[@]}"; do
  for m in "${EXPORTED[@]}"; do
    step "$arch: $m matches x86-64 (rtol 1e-3, atol 1e-4)" exported_check "$arch" "$m"
  done
done
step "int8 kernel cases: generate, x86-64 outputs equal the integer definition" \
  prepare_int8_kernels
if [[ " ${ARCHES[*]} " == *" armhf "* ]]; then
  step "armv7 NEON: int8 conv and depthwise kernels match x86-64 bit for bit" \
    int8_kernel_check neon32
fi
if [[ " ${ARCHES[*]} " == *" aarch64 "* ]]; then
  step "aarch64 without a dot: int8 conv and depthwise kernels match x86-64 bit for bit" \
    int8_kernel_check neon
  for variant in dotprod i8mm; do
    step "aarch64 +$variant: int8 conv and depthwise kernels match x86-64 bit for bit" \
      int8_kernel_check "$variant"
    for m in qdq_uint8 qdq_uint8_depthwise qdq_uint8_maxpool qoperator_uint8; do
      step "aarch64 +$variant: $m matches x86-64 bit for bit" exported_check aarch64 "$m" "$variant"
    done
  done
  step "aarch64: minimal runtime (EMBER_RUNTIME_MINIMAL=ON) cross build" minimal_build
  for m in mlp cnn mobilenetv2; do
    step "aarch64 minimal runtime: $m matches x86-64 (rtol 1e-3, atol 1e-4)" minimal_check "$m"
  done
  step "aarch64 minimal runtime: left-out calls fail naming the option" minimal_absent
fi
step "conformance: corpus and emberc wrappers" prepare_conformance
if [ $FULL = 1 ]; then
  for arch in "${ARCHES[@]}"; do
    step "$arch: core conformance tier vs x86-64" conformance_check "$arch" "$CORPUS" core
  done
elif [[ " ${ARCHES[*]} " == *" aarch64 "* ]]; then
  step "aarch64: core and extended conformance, one case per operator, vs x86-64" \
    conformance_check aarch64 "$WORK/onnx-subset" subset
fi

echo
echo "=== stripped sizes (Release)"
sizes x86-64 "$HOST_BUILD" strip
for arch in "${ARCHES[@]}"; do sizes "$arch" "${BUILD[$arch]}" "${STRIP[$arch]}"; done
[[ " ${ARCHES[*]} " == *" aarch64 "* ]] && sizes "aarch64 minimal" "$MINIMAL_BUILD" "${STRIP[aarch64]}"

echo
echo "=== summary ($([ $FULL = 1 ] && echo full || echo default) mode, $((SECONDS - T0)) s)"
printf '%s\n' "${STEPS[@]}"
exit $FAILED
