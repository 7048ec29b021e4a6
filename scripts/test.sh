#!/usr/bin/env bash
# Ember's whole test suite, as CI runs it: install packages, configure, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/bootstrap.sh

echo "== build (Release) =="
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"

echo "== C++ tests =="
(cd build && ctest --output-on-failure -j "$jobs")
