#!/usr/bin/env bash
# The operator conformance gate, as scripts/test.sh runs it (from any directory):
#   1. regenerate the corpus into build/onnx-corpus (skipped when already there, ~3 s otherwise);
#   2. the runner's own tests (against a fake toolchain);
#   3. every core case through build/bin/emberc and build/bin/ember-run: the cases listed in
#      expected_pass_core.txt must pass, and nothing may FAIL, CRASH or TIMEOUT.
# Extra arguments go to run_conformance.py (e.g. -k conv, --keep-failed).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=/usr/bin/python3
"$py" tests/onnx/gen_corpus.py build/onnx-corpus
"$py" -m pytest -q -p no:cacheprovider tests/onnx/test_runner.py
"$py" tests/onnx/run_conformance.py --corpus build/onnx-corpus --tier core --freeze-int-inputs \
    -j "${EMBER_TEST_JOBS:-2}" --expect tests/onnx/expected_pass_core.txt "$@"
