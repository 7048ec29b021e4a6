#!/usr/bin/python3
"""A stand-in for emberc and ember-run, used only by test_runner.py.

It speaks the same command line as the real tools:

  fake_ember.py compile MODEL.onnx -o ART      (as emberc)
  fake_ember.py ART --input NAME=F.npy ... --output-dir OUT   (as ember-run)

"Compiling" copies the model into ART next to empty graph.json/lib.so/
params.bin; "running" evaluates the graph with NumPy.  A handful of ops are
implemented correctly, and a few others are deliberately mapped to every way
a real tool can misbehave, so the runner's statuses can be tested:

  Relu, Add, Neg, Identity, Reshape (constant shape)   correct
  Sub      ember-run computes a + b instead             -> FAIL (wrong values)
  Mul      ember-run writes float64 instead of float32  -> FAIL (dtype)
  Abs      emberc kills itself with SIGSEGV             -> CRASH
  Sqrt     ember-run sleeps forever                     -> TIMEOUT
  Exp      emberc exits 1 without a message             -> FAIL
  Floor    ember-run skips writing its outputs          -> FAIL
  anything else: emberc refuses with a one-line reason  -> UNSUPPORTED
"""

import json
import os
import shutil
import signal
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

SUPPORTED = {"Relu", "Add", "Neg", "Identity", "Reshape", "Sub", "Mul", "Sqrt", "Floor"}


def compile_model(argv):
    if len(argv) != 3 or argv[1] != "-o":
        print("fake emberc: usage: compile MODEL.onnx -o OUTDIR", file=sys.stderr)
        return 2
    model_path, out = argv[0], argv[2]
    model = onnx.load(model_path)
    ops = [n.op_type for n in model.graph.node]
    if "Abs" in ops:
        os.kill(os.getpid(), signal.SIGSEGV)
    if "Exp" in ops:
        return 1
    constant = {t.name for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type not in SUPPORTED:
            print("emberc: error: node %r: operator %s (opset %d) is not supported"
                  % (node.name, node.op_type, model.opset_import[0].version), file=sys.stderr)
            return 2
        if node.op_type == "Reshape" and node.input[1] not in constant:
            print("emberc: error: node %r: Reshape needs a constant shape, got graph input %r"
                  % (node.name, node.input[1]), file=sys.stderr)
            return 2
    os.makedirs(out, exist_ok=True)
    shutil.copy(model_path, os.path.join(out, "model.onnx"))
    with open(os.path.join(out, "graph.json"), "w") as f:
        json.dump({"fake": True, "ops": ops}, f)
    for name in ("lib.so", "params.bin"):
        open(os.path.join(out, name), "wb").close()
    return 0


def evaluate(node, args):
    op = node.op_type
    if op == "Relu":
        return np.maximum(args[0], 0).astype(args[0].dtype)
    if op in ("Add", "Sub"):  # Sub is wrong on purpose
        return args[0] + args[1]
    if op == "Mul":  # wrong dtype on purpose
        return (args[0] * args[1]).astype(np.float64)
    if op == "Neg":
        return -args[0]
    if op == "Identity":
        return args[0]
    if op == "Reshape":
        return args[0].reshape([int(d) for d in args[1]])
    if op == "Sqrt":
        while True:
            time.sleep(1)
    if op == "Floor":
        return None
    raise SystemExit("fake ember-run: no kernel for %s" % op)


def run_artifact(argv):
    art, inputs, out_dir = argv[0], {}, None
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        if flag == "--input":
            name, path = rest.pop(0).split("=", 1)
            inputs[name] = np.load(path, allow_pickle=False)
        elif flag == "--output-dir":
            out_dir = rest.pop(0)
        else:
            print("fake ember-run: unknown option %s" % flag, file=sys.stderr)
            return 2
    model = onnx.load(os.path.join(art, "model.onnx"))
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env.update(inputs)
    skip_write = False
    for node in model.graph.node:
        value = evaluate(node, [env[i] for i in node.input])
        if value is None:
            skip_write = True
            value = np.zeros(0)
        env[node.output[0]] = value
    if skip_write:
        return 0
    os.makedirs(out_dir, exist_ok=True)
    for i, out in enumerate(model.graph.output):
        np.save(os.path.join(out_dir, "output_%d.npy" % i), np.asarray(env[out.name]),
                allow_pickle=False)
    return 0


def main(argv):
    if argv and argv[0] == "compile":
        return compile_model(argv[1:])
    if not argv:
        print("fake ember: expected 'compile ...' or an artifact folder", file=sys.stderr)
        return 2
    return run_artifact(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
