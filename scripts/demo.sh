#!/usr/bin/env bash
# Ember's main job, end to end on this machine: compile a bundled ONNX model for the host with
# emberc, run it with ember-run, print its outputs and its latency.
# Usage: scripts/demo.sh [mobilenetv2|resnet18|cnn|mlp]   (default: mobilenetv2)
set -euo pipefail
cd "$(dirname "$0")/.."

model=${1:-mobilenetv2}
case "$model" in
  mobilenetv2 | resnet18 | cnn | mlp) ;;
  *) echo "demo.sh: unknown model '$model'; choose mobilenetv2, resnet18, cnn or mlp" >&2; exit 2 ;;
esac
py=/usr/bin/python3
work=build/demo

scripts/bootstrap.sh
echo "== building emberc and ember-run =="
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target emberc ember-run

echo "== writing the bundled model: $model (seeded weights, tests/models/gen_models.py) =="
"$py" tests/models/gen_models.py "$work" --only "$model"

echo "== emberc compile $work/$model.onnx -o $work/$model =="
start_ns=$(date +%s%N)
build/bin/emberc compile "$work/$model.onnx" -o "$work/$model"
echo "compiled in $(( ($(date +%s%N) - start_ns) / 1000000 )) ms:"
ls -l "$work/$model"

echo "== ember-run: one inference on a seeded random input =="
build/bin/ember-run "$work/$model" --seed 1 --output-dir "$work/out"
"$py" - "$work/out/output_0.npy" <<'PY'
import sys
import numpy as np
out = np.load(sys.argv[1], allow_pickle=False)
flat = out.reshape(-1)
top = np.argsort(-flat)[:5]
print("output_0: shape %s dtype %s" % (out.shape, out.dtype))
print("top-5 (index: value): " + ", ".join("%d: %.5f" % (i, flat[i]) for i in top))
PY

echo "== ember-run --bench (1 thread, then every core) =="
build/bin/ember-run "$work/$model" --bench --warmup 5 --repeat 30 --threads 1 --output-dir "$work/out"
build/bin/ember-run "$work/$model" --bench --warmup 5 --repeat 30 --output-dir "$work/out"
