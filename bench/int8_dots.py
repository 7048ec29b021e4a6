#!/usr/bin/python3
"""Instructions per 8-bit dot step in the int8 conv kernels' inner loops, per ARM target.

Usage:
  bench/int8_dots.py MODEL.onnx... [--target NAME]... [--work DIR] [--json FILE]

ARM boards are not here, so the int8 kernels are counted instead of timed, as bench/fma_share.py
counts the float ones. A dot step multiplies 4 bytes of data by 4 bytes of weights into each of 4
int32 lanes (16 multiply-adds): one sdot with ARMv8.2's dot product; without it (Cortex-A53, A72:
`aarch64`) smull + smlal + sadalp in the channels form (te::DotS8S8Halves) or 2 smull + 2 sadalp
in the pixels form; on ARMv7 NEON (`armv7`) vmull + vmlal + vpadal, or 2 vmull + 2 vpadal. For each int8 conv
kernel (the schedule its node was planned on), the loop with the most dot steps of its own is
its inner loop; its instructions per dot step are printed per schedule (median and highest, the
kernel), with the multiply-adds per instruction (16 / that). A float kernel's FMA does 4 per
instruction at 100% FMA share. MODEL: a quantized model (`emberc quantize`, or
tests/models/gen_quantized.py). Tools: build/bin/emberc or $EMBERC; llvm-objdump-19.
"""

import argparse
import collections
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("fma_share", os.path.join(ROOT, "bench",
                                                                        "fma_share.py"))
fma_share = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fma_share)

TARGETS = {
    "aarch64": "llvm -mtriple=aarch64-linux-gnu",
    "aarch64-a53": "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53",
    "aarch64-a72": "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72",
    "aarch64-dotprod": "llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod",
    "armv7": "llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon",
}
# The widening multiplies of each ISA: aarch64's, ARMv7's.
MULTIPLY = ("smull", "smull2", "vmull")
MULTIPLY_ADD = ("smlal", "smlal2", "vmlal")


def dot_steps(mnemonics):
    """Dot steps in a loop body, from its instruction counts."""
    c = collections.Counter(m.split(".")[0] for m in mnemonics)
    dots = c["sdot"] + c["usdot"]
    multiply_adds = sum(c[m] for m in MULTIPLY_ADD)
    if multiply_adds:  # halves: smull + smlal + sadalp per step
        return dots + multiply_adds
    return dots + sum(c[m] for m in MULTIPLY) // 2


def measure(model_path, target, work):
    emberc = os.environ.get("EMBERC", os.path.join(ROOT, "build", "bin", "emberc"))
    name = os.path.splitext(os.path.basename(model_path))[0] + "_" + target
    art, dump = os.path.join(work, name), os.path.join(work, name + "_ir")
    subprocess.run([emberc, "compile", model_path, "-o", art, "--target", TARGETS[target],
                    "--dump-ir", dump], check=True, stdout=subprocess.DEVNULL)
    funcs = fma_share.functions(os.path.join(art, "lib.so"))
    rows = []
    for func, schedule in sorted(fma_share.plans(dump).items()):
        if "int8" not in schedule or schedule.startswith("depthwise"):
            continue
        loops = [(dot_steps(m for _, m, _ in body), len(body))
                 for symbol, code in funcs.items()
                 if symbol == func or symbol.startswith(func + "_compute_")
                 for body, _ in fma_share.loops(code)]
        loops = [l for l in loops if l[0] > 0]
        if not loops:
            continue
        steps, size = max(loops, key=lambda l: (l[0], -l[1]))
        rows.append({"kernel": func, "schedule": schedule, "steps": steps, "instructions": size,
                     "per_step": size / steps})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--target", action="append", choices=sorted(TARGETS))
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    targets = args.target or ["aarch64-a72", "aarch64-dotprod"]
    work = args.work or tempfile.mkdtemp(prefix="ember-int8-dots-")
    rows = []
    for target in targets:
        for model in args.models:
            for row in measure(model, target, work):
                row.update(model=os.path.splitext(os.path.basename(model))[0], target=target)
                rows.append(row)
    print("%-16s %-32s %7s %9s %9s %8s  %s" % ("target", "schedule", "kernels", "median",
                                               "highest", "MAC/insn", "highest in"))
    for target in targets:
        for schedule in sorted({r["schedule"] for r in rows if r["target"] == target}):
            mine = [r for r in rows if r["target"] == target and r["schedule"] == schedule]
            median = statistics.median(r["per_step"] for r in mine)
            high = max(mine, key=lambda r: r["per_step"])
            print("%-16s %-32s %7d %9.2f %9.2f %8.2f  %s/%s (%d steps in %d)" % (
                target, schedule, len(mine), median, high["per_step"], 16 / median,
                high["model"], high["kernel"], high["steps"], high["instructions"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
