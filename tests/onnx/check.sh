#!/usr/bin/env bash
# The operator conformance gate, as scripts/test.sh runs it (from any directory):
#   1. regenerate the corpus into $BUILD/onnx-corpus (skipped when already there, ~3 s otherwise);
#   2. the runner's own tests (against a fake toolchain);
#   3. every core case through $BUILD/bin/emberc and $BUILD/bin/ember-run: the cases listed in
#      expected_pass_core.txt must pass, and nothing may FAIL, CRASH or TIMEOUT;
#   4. every case of the extended tier (ops beyond the core set: recurrent layers, indexing,
#      scans, scatters, ...), pinned the same way in expected_pass_extended.txt;
#   5. every case of the other tier (control flow, quantization, integer-only graphs), pinned in
#      expected_pass_other.txt.
# BUILD is ${EMBER_BUILD_DIR:-build} under the project root; EMBERC / EMBER_RUN override the tools.
# Extra arguments go to run_conformance.py (e.g. -k conv, --keep-failed).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=/usr/bin/python3
build=${EMBER_BUILD_DIR:-build}
export EMBERC=${EMBERC:-$build/bin/emberc}
export EMBER_RUN=${EMBER_RUN:-$build/bin/ember-run}
corpus=$build/onnx-corpus
case $corpus in /*) ;; *) corpus=$PWD/$corpus ;; esac
"$py" tests/onnx/gen_corpus.py "$corpus"
EMBER_ONNX_CORPUS=$corpus "$py" -m pytest -q -p no:cacheprovider \
    tests/onnx/test_runner.py
"$py" tests/onnx/run_conformance.py --corpus "$corpus" --tier core --freeze-int-inputs \
    -j "${EMBER_TEST_JOBS:-2}" --expect tests/onnx/expected_pass_core.txt "$@"
"$py" tests/onnx/run_conformance.py --corpus "$corpus" --tier extended --freeze-int-inputs \
    -j "${EMBER_TEST_JOBS:-2}" --expect tests/onnx/expected_pass_extended.txt
"$py" tests/onnx/run_conformance.py --corpus "$corpus" --tier other --freeze-int-inputs \
    -j "${EMBER_TEST_JOBS:-2}" --expect tests/onnx/expected_pass_other.txt
