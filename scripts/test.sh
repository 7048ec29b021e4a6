#!/usr/bin/env bash
# Ember's whole test suite, exactly as CI runs it:
#   install packages, build, C++ tests, Python tests, ONNX conformance, the runtime under
#   ASan/UBSan, the loader fuzzers, and the ARM builds under qemu-user.
# Usage: scripts/test.sh [--full]   (--full also runs the whole conformance tier on aarch64 and armv7)
set -euo pipefail
cd "$(dirname "$0")/.."

full=()
[ "${1:-}" = "--full" ] && full=(--full)
jobs=$(nproc)
py=/usr/bin/python3
stages_passed=0

stage() {
  echo
  echo "== $* ($(date -u +%H:%M:%S)) =="
}
stage_done() { stages_passed=$((stages_passed + 1)); }

scripts/bootstrap.sh

stage "build (Release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
stage_done

stage "C++ tests: runtime, compiler, integration"
(cd build && ctest --output-on-failure -j "$jobs")
stage_done

stage "Python tests"
EMBER_LIBRARY_PATH="$PWD/build/lib" "$py" -m pytest -q -p no:cacheprovider tests/python tests/models
stage_done

stage "whole models (MLP, batch-64 MLP, CNN, ResNet-18, MobileNetV2) against ONNX Runtime"
"$py" bench/compare_ort.py --check-only --work build/compare-ort
stage_done

stage "ONNX operator conformance (core tier)"
tests/onnx/check.sh
stage_done

stage "runtime tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_BUILD_COMPILER=OFF \
  -DEMBER_BUILD_BENCH=OFF -DEMBER_SANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$jobs"
# The resident-memory bound of params sharing measures the process's RSS, which ASan's quarantine
# and shadow memory inflate; it runs in the plain build above.
(cd build-asan && ctest --output-on-failure -j "$jobs" -L runtime \
  -E 'GraphExecutor.LoadingNeverHoldsParamsTwiceAndExecutorsShareThem')
stage_done

stage "fuzzing the graph JSON, params and .npy loaders (libFuzzer)"
tests/fuzz/run_fuzzers.sh build-fuzz "${EMBER_FUZZ_SECONDS:-20}"
stage_done

stage "ARM: cross-built runtime and artifacts under qemu-user"
tests/cross/run_cross.sh "${full[@]}"
stage_done

echo
echo "test.sh: ${stages_passed} passed, 0 failed"
