#!/usr/bin/env bash
# Ember's main job, end to end on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
echo "demo: the runtime is built in build/; the end-to-end demo lands with the graph executor"
