#!/usr/bin/python3
"""What an If on run-time data costs when its branch is taken and when it is skipped.

Usage:
  bench/if_branch_cost.py [--width N] [--work DIR]

Writes a wake-word-style model (tests/models/gen_exported.py's layout at a larger size): a score
from one Gemm, GreaterOrEqual -> Cast -> If whose then_branch is three N x N MatMuls and whose
else_branch passes the score through. Two copies differ only in the threshold (0: always taken,
1.5: never). Each is compiled with emberc and profiled with `ember-run --profile`; the `fused_if`
row is the If's kernel, which runs only the taken branch. Tools: build/bin/emberc and
build/bin/ember-run, or $EMBERC / $EMBER_RUN.
"""

import argparse
import os
import subprocess
import sys
import tempfile

from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import gen_exported  # noqa: E402


def verifier_model(name, width, threshold):
    m = gen_exported.Model(name, 1, "If branch cost")
    x = m.input("x", [1, width])
    score = m.node("Gemm", [x, m.weight("head_w", [width, 1], 0.01), m.weight("head_b", [1])],
                   ["logit"])
    score = m.node("Sigmoid", [score], ["score"])
    best = m.node("ReduceMax", [score], ["best"], keepdims=0)
    passed = m.node("GreaterOrEqual", [best, m.weight_values("threshold", threshold)], ["passed"])
    cond = m.node("Cast", [passed], ["verify"], to=TensorProto.BOOL)
    weights = [m.weight("v%d" % i, [width, width], 0.03) for i in range(3)]
    inits, m.inits = m.inits[-3:], m.inits[:-3]
    chain = ["x", "h0", "h1", "h2"]
    nodes = [helper.make_node("MatMul", [chain[i], weights[i]], [chain[i + 1]], name="mm%d" % i)
             for i in range(3)]
    nodes.append(helper.make_node("ReduceMax", ["h2"], ["verified"], name="peak", axes=[1]))
    then_graph = gen_exported.branch("verify", nodes, ["verified"], inits)
    else_graph = gen_exported.branch("pass", [helper.make_node("Identity", ["score"], ["kept"],
                                                               name="pass")], ["kept"])
    m.node("If", [cond], ["y"], then_branch=then_graph, else_branch=else_graph)
    m.output("y", rank=2)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    emberc = os.environ.get("EMBERC", os.path.join(ROOT, "build", "bin", "emberc"))
    ember_run = os.environ.get("EMBER_RUN", os.path.join(ROOT, "build", "bin", "ember-run"))
    work = args.work or tempfile.mkdtemp(prefix="ember-if-cost-")
    os.makedirs(work, exist_ok=True)
    for name, threshold in (("taken", 0.0), ("skipped", 1.5)):
        verifier_model("if_" + name, args.width, threshold).save(work)
        art = os.path.join(work, "if_" + name)
        subprocess.run([emberc, "compile", art + ".onnx", "-o", art], check=True,
                       stdout=subprocess.DEVNULL)
        prof = subprocess.run([ember_run, art, "--profile", "--output-dir", art + "_out"],
                              check=True, capture_output=True, text=True)
        rows = [line for line in (prof.stdout + prof.stderr).splitlines()
                if "fused_if" in line]
        print("%-8s branch: %s" % (name, rows[0] if rows else "(no fused_if row)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
