#!/usr/bin/python3
"""How much of each kernel's inner loop is fused multiply-add, per schedule, on aarch64 and x86-64.

Usage:
  bench/fma_share.py [--model NAME]... [--target aarch64|x86-64]... [--models DIR] [--work DIR]
                     [--json FILE]

ARM kernels cannot be timed on this machine, so they are counted instead. For every model written
by tests/models/gen_models.py (mobilenetv2 and resnet18 by default) and every target, emberc
compiles with --dump-ir; the plan pass's dump names the schedule each conv and dense node got
(ember_plan_kernel), groups.txt the node each kernel function anchors, and llvm-objdump the
kernel's code. A kernel's inner loop is its innermost loop (a backward branch with no loop inside)
holding the most FMA instructions (fmla/fmls/fmadd/fmsub on aarch64, vfmadd*/vfnmadd* on x86-64),
its parallel closures (`NAME_compute_N`) included. The share is FMA instructions / instructions in
that loop: loads, stores, address arithmetic and loop control are the rest. Prints one row per
schedule and target: kernels, the lowest share and its kernel, the median; the goal of issue 23
is no NEON inner loop below 60%. Tools: build/bin/emberc or $EMBERC; llvm-objdump-19.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {
    "aarch64": ("llvm -mtriple=aarch64-linux-gnu", re.compile(r"^(fmla|fmls|fmadd|fmsub)\b")),
    "x86-64": ("llvm", re.compile(r"^vf(n)?m(add|sub)")),
}
GOAL = 0.60
INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
LABEL = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
BRANCH_TARGET = re.compile(r"(?:0x)?([0-9a-f]+) <")


def functions(lib):
    """{symbol: [(address, mnemonic, operands)]} from llvm-objdump -d."""
    out = subprocess.run(["llvm-objdump-19", "-d", "--no-show-raw-insn", lib], check=True,
                         capture_output=True, text=True).stdout
    funcs, current = {}, None
    for line in out.splitlines():
        m = LABEL.match(line)
        if m:
            current = funcs.setdefault(m.group(2), [])
            continue
        m = INSN.match(line)
        if m and current is not None:
            current.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return funcs


def innermost_loops(code):
    """[(start, end)] address ranges of loops (backward branches) that contain no other loop."""
    loops = []
    for addr, mnemonic, operands in code:
        is_branch = mnemonic.startswith(("b", "cb", "tb", "j")) and mnemonic not in ("bl", "blr",
                                                                                   "bic", "bif",
                                                                                   "bit", "bsl")
        m = BRANCH_TARGET.search(operands) if is_branch else None
        if m and int(m.group(1), 16) <= addr:
            loops.append((int(m.group(1), 16), addr))
    return [(s, e) for s, e in loops
            if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in loops)]


def inner_loop_share(code, fma):
    """(share, fma count, instructions) of the innermost loop with the most FMAs, or None."""
    best = None
    for start, end in innermost_loops(code):
        body = [mn for addr, mn, _ in code if start <= addr <= end]
        count = sum(1 for mn in body if fma.match(mn))
        if count and (best is None or count > best[1]):
            best = (count / len(body), count, len(body))
    return best


def plans(dump_dir):
    """{kernel function: schedule} for the kernels anchored by a planned node."""
    by_node = {}
    plan_dump = [f for f in os.listdir(dump_dir) if f.endswith("_plan_kernels.txt")][0]
    with open(os.path.join(dump_dir, plan_dump)) as f:
        for line in f:
            m = re.search(r'ember_plan_kernel="([^"]+)".*#\s*(\S+)\s*$', line)
            if m:
                by_node[m.group(2)] = m.group(1)
    out, func = {}, None
    with open(os.path.join(dump_dir, "groups.txt")) as f:
        for line in f:
            if not line.startswith(" "):
                func = line.split("(")[0].strip()
            else:
                node = line.split("#")[-1].strip()
                if node in by_node and func not in out:
                    out[func] = by_node[node]
    return out


def measure(model_path, target, work):
    triple_args, fma = TARGETS[target]
    emberc = os.environ.get("EMBERC", os.path.join(ROOT, "build", "bin", "emberc"))
    name = os.path.splitext(os.path.basename(model_path))[0] + "_" + target
    art, dump = os.path.join(work, name), os.path.join(work, name + "_ir")
    subprocess.run([emberc, "compile", model_path, "-o", art, "--target", triple_args,
                    "--dump-ir", dump], check=True, stdout=subprocess.DEVNULL)
    funcs = functions(os.path.join(art, "lib.so"))
    rows = []
    for func, schedule in sorted(plans(dump).items()):
        best = None
        for symbol, code in funcs.items():
            if symbol == func or symbol.startswith(func + "_compute_"):
                share = inner_loop_share(code, fma)
                if share and (best is None or share[1] > best[1]):
                    best = share
        if best:
            rows.append({"kernel": func, "schedule": schedule, "share": best[0], "fma": best[1],
                         "instructions": best[2]})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append")
    ap.add_argument("--target", action="append", choices=sorted(TARGETS))
    ap.add_argument("--models", default=None, help="directory of gen_models.py's .onnx files")
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    models = args.model or ["mobilenetv2", "resnet18"]
    targets = args.target or ["aarch64", "x86-64"]
    work = args.work or tempfile.mkdtemp(prefix="ember-fma-")
    model_dir = args.models or os.path.join(work, "models")
    if not all(os.path.exists(os.path.join(model_dir, m + ".onnx")) for m in models):
        only = sum([["--only", m] for m in models], [])
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "models", "gen_models.py"),
                        model_dir] + only, check=True, stdout=subprocess.DEVNULL)
    rows = []
    for target in targets:
        for model in models:
            for row in measure(os.path.join(model_dir, model + ".onnx"), target, work):
                row.update(model=model, target=target)
                rows.append(row)
    print("%-8s %-30s %7s %7s %7s  %s" % ("target", "schedule", "kernels", "median", "lowest",
                                          "lowest in"))
    below = 0
    for target in targets:
        for schedule in sorted({r["schedule"] for r in rows if r["target"] == target}):
            mine = [r for r in rows if r["target"] == target and r["schedule"] == schedule]
            low = min(mine, key=lambda r: r["share"])
            below += sum(1 for r in mine if target == "aarch64" and r["share"] < GOAL)
            print("%-8s %-30s %7d %6.0f%% %6.0f%%  %s/%s (%d of %d)" % (
                target, schedule, len(mine), 100 * statistics.median(r["share"] for r in mine),
                100 * low["share"], low["model"], low["kernel"], low["fma"],
                low["instructions"]))
    print("aarch64 inner loops below %d%% FMA: %d" % (100 * GOAL, below))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
