#!/usr/bin/python3
"""How much of each kernel's inner loop is fused multiply-add, per schedule, on aarch64 and x86-64.

Usage:
  bench/fma_share.py [--model NAME]... [--target aarch64|x86-64]... [--models DIR] [--work DIR]
                     [--json FILE]

ARM kernels cannot be timed on this machine, so they are counted instead. For every model written
by tests/models/gen_models.py (mobilenetv2 and resnet18 by default) and every target, emberc
compiles with --dump-ir; the plan pass's dump names the schedule each conv and dense node got
(ember_plan_kernel), groups.txt the node each kernel function anchors, and llvm-objdump the
kernel's code.

What is counted is the loop that executes the most multiply-adds at run time. The loop IR
(kernels.loop.txt) says which: per loop, the multiply-adds in its body (an addition or
subtraction with a product operand; outside nested loops and `if 0` branches) times its trip count
and those of the loops around it (a vectorised loop counts per element, as written). A kernel's
transforms, packing and epilogue loops then lose to its reduction (a Winograd kernel's batched
products, not its input transform), and straight-line edge tiles count when they are where the
work is. In the code (the kernel and its parallel closures `NAME_compute_N`), loops are natural
loops of the control-flow graph, each counted over its own blocks (those of no loop inside it):
every instruction there, on every branch, is one per iteration. The hot loop's code is the loop
whose FMA count (fmla/fmls/fmadd/fmsub on aarch64, vfmadd*/vfnmadd* on x86-64) is the loop IR
loop's multiply-adds, or a multiple of it (LLVM unrolled it); of several, the least dense; when
none matches, the loop with the most FMAs (the JSON row has matched = false). The share is FMA
instructions / instructions of that loop: loads, stores, address arithmetic, epilogue and loop
control are the rest. Both targets are measured alike. Prints one row per schedule and target:
kernels, the lowest share and its kernel, the median; the goal of issue 23 is no NEON inner loop
below 60%. Tools: build/bin/emberc or $EMBERC; llvm-objdump-19.
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


UNCONDITIONAL = ("b", "jmp")
# aarch64 b.cond, cbz, tbz; x86 jcc; ARMv7 bcond (bl is a call: "l" is no condition).
CONDITIONAL = re.compile(
    r"^(b\.\w+|cbn?z|tbn?z|j(?!mp)\w+|b(eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le))$")
RETURNS = ("ret", "retq", "br", "bx")


def basic_blocks(code):
    """[(instructions, successor block indices)] of a function's code."""
    addresses = {addr for addr, _, _ in code}
    leaders = {code[0][0]} if code else set()
    for i, (addr, mnemonic, operands) in enumerate(code):
        if mnemonic in UNCONDITIONAL or CONDITIONAL.match(mnemonic) or mnemonic in RETURNS:
            m = BRANCH_TARGET.search(operands)
            if m and int(m.group(1), 16) in addresses:
                leaders.add(int(m.group(1), 16))
            if i + 1 < len(code):
                leaders.add(code[i + 1][0])
    blocks, index = [], {}
    for insn in code:
        if insn[0] in leaders:
            index[insn[0]] = len(blocks)
            blocks.append([])
        blocks[-1].append(insn)
    out = []
    for k, block in enumerate(blocks):
        _, mnemonic, operands = block[-1]
        succ = []
        m = BRANCH_TARGET.search(operands)
        if (mnemonic in UNCONDITIONAL or CONDITIONAL.match(mnemonic)) and m:
            target = int(m.group(1), 16)
            if target in index:
                succ.append(index[target])
        falls = mnemonic not in UNCONDITIONAL and mnemonic not in RETURNS
        if falls and k + 1 < len(blocks):
            succ.append(k + 1)
        out.append((block, succ))
    return out


def dominators(blocks, preds):
    """Per block, the bit set of the blocks that dominate it (0: unreachable from the entry)."""
    everything = (1 << len(blocks)) - 1
    dom = [everything] * len(blocks)
    dom[0] = 1
    changed = True
    while changed:
        changed = False
        for k in range(1, len(blocks)):
            meet, reached = everything, False
            for p in preds[k]:
                if dom[p]:  # an unreachable block (alignment padding) constrains nothing
                    meet, reached = meet & dom[p], True
            new = (meet | (1 << k)) if reached else 0
            if new != dom[k]:
                dom[k], changed = new, True
    return dom


def loops(code):
    """Per natural loop (an edge to a block that dominates its source, the loop being the blocks
    that reach that source without passing the header), the instructions of its own blocks (those
    of no loop nested in it) and the set of all its blocks."""
    blocks = basic_blocks(code)
    preds = [[] for _ in blocks]
    for k, (_, succ) in enumerate(blocks):
        for t in succ:
            preds[t].append(k)
    dom = dominators(blocks, preds)
    bodies = {}
    for latch, (_, succ) in enumerate(blocks):
        for header in succ:
            if not dom[latch] >> header & 1:
                continue
            body, work = bodies.setdefault(header, {header}), [latch]
            while work:
                k = work.pop()
                if k not in body:
                    body.add(k)
                    work.extend(preds[k])
    out = []
    for h, body in bodies.items():
        own = set(body)
        for o, inner in bodies.items():
            if o != h and o in body:
                own -= inner
        out.append(([insn for k in sorted(own) for insn in blocks[k][0]], frozenset(body)))
    return out


def loop_fmas(code, fma):
    """[(fma count, instructions, blocks)] of the loops holding FMAs of their own."""
    out = []
    for own, body in loops(code):
        count = sum(1 for _, mnemonic, _ in own if fma.match(mnemonic))
        if count:
            out.append((count, len(own), body))
    return out


def hot_loop_code(loops, per):
    """(fma count, instructions, matched) of the code of a hot loop with `per` multiply-adds: the
    loops whose FMAs are `per` or a multiple of it (LLVM unrolled it); of those, one nested in
    another runs at least as often as the outer (whose FMAs of its own are then an epilogue's), so
    an outer one gives way; of several left, the least dense. When none matches, the loop with the
    most FMAs. `loops` holds (function, fma count, instructions, blocks) rows."""
    fits = [l for l in loops if l[1] % per == 0]
    inner = [l for l in fits
             if not any(o[0] == l[0] and o[3] < l[3] for o in fits)]
    if inner:
        _, count, size, _ = min(inner, key=lambda l: (l[1], -l[2]))
        return count, size, True
    _, count, size, _ = max(loops, key=lambda l: l[1])
    return count, size, False


def parse_value(text):
    """A loop-IR value as nested (op, left, right) / (call, [args]) / leaf tuples."""
    tokens = re.findall(r"<buffer load>|[A-Za-z_][\w.]*\(|\w[\w.]*|<=|>=|==|!=|&&|\|\||[^\s\w]", text)
    pos = [0]

    def expr():
        t = tokens[pos[0]]
        pos[0] += 1
        if t == "(":
            left = expr()
            if tokens[pos[0]] == ")":  # a parenthesised leaf
                pos[0] += 1
                return left
            op = tokens[pos[0]]
            pos[0] += 1
            right = expr()
            pos[0] += 1  # ")"
            return (op, left, right)
        if t.endswith("("):
            args = []
            while tokens[pos[0]] != ")":
                args.append(expr())
                if tokens[pos[0]] == ",":
                    pos[0] += 1
            pos[0] += 1
            return ("call", args)
        if t == "-" and pos[0] < len(tokens):  # a negative literal
            return ("leaf", [expr()])
        return ("leaf", [])

    return expr()


def multiply_adds(tree):
    """Additions or subtractions with a product operand: each an FMA when compiled."""
    op, *rest = tree
    if op in ("leaf", "call"):
        return sum(multiply_adds(a) for a in rest[0])
    left, right = rest
    own = op in ("+", "-") and ("*" in (left[0], right[0]))
    return int(own) + multiply_adds(left) + multiply_adds(right)


LOOP = re.compile(r"^(\s*)(?:\w+ )?for (\S+) in \[0, (\d+)\)(?: while .*)?:$")
GUARD = re.compile(r"^(\s*)(if|else)\b(.*)$")
STORE = re.compile(r"^(\s*)\S+\[.*?\] = (.*)$")


def hot_loops(loop_dump, var=None):
    """{function: multiply-adds per iteration of its loop that runs the most of them}, from the
    loop IR: a loop's multiply-adds (in its body, outside nested loops and `if 0` branches)
    times its trip count and those of the loops around it. With `var`, only loops over a
    variable of that name count."""
    out, func, stack = {}, None, []
    for line in open(loop_dump):
        if line.startswith("func "):
            func, stack = line[5:].split("(")[0], []
            out[func] = (0, 0)
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        m = LOOP.match(line)
        if m:
            trips = int(m.group(3)) * (stack[-1][1] if stack else 1)
            counted = var is None or m.group(2) == var
            # indent, runs, multiply-adds, dead, counted
            stack.append([indent, trips, 0, False, counted])
            continue
        m = GUARD.match(line)
        if m:
            dead = (m.group(2) == "if" and m.group(3).strip() == "0:") or any(
                f[3] for f in stack)
            stack.append([indent, stack[-1][1] if stack else 1, None, dead, False])
            continue
        m = STORE.match(line)
        if not m or func is None:
            continue
        loop = next((f for f in reversed(stack) if f[2] is not None), None)
        if loop is None or any(f[3] for f in stack):
            continue
        loop[2] += multiply_adds(parse_value(m.group(2).rstrip()))
        if loop[4] and loop[2] * loop[1] > out[func][0] * out[func][1]:
            out[func] = (loop[2], loop[1])
    return {f: per for f, (per, _) in out.items() if per}


def plans(dump_dir):
    """{kernel function: schedule} for the kernels anchored by a planned node: the first planned
    node's, or that of a depthwise conv planned together with the 1x1 conv before it
    (ember_plan_fused_with_producer), which names the kernel of both."""
    by_node, fused = {}, set()
    plan_dump = [f for f in os.listdir(dump_dir) if f.endswith("_plan_kernels.txt")][0]
    with open(os.path.join(dump_dir, plan_dump)) as f:
        for line in f:
            m = re.search(r'ember_plan_kernel="([^"]+)".*#\s*(\S+)\s*$', line)
            if m:
                by_node[m.group(2)] = m.group(1)
                if "ember_plan_fused_with_producer=1" in line:
                    fused.add(m.group(2))
    out, func = {}, None
    with open(os.path.join(dump_dir, "groups.txt")) as f:
        for line in f:
            if not line.startswith(" "):
                func = line.split("(")[0].strip()
            else:
                node = line.split("#")[-1].strip()
                if node in by_node and (func not in out or node in fused):
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
    hot = hot_loops(os.path.join(dump, "kernels.loop.txt"))
    # A 1x1 conv fused with a depthwise conv: its hottest loop is the 1x1's, so the depthwise
    # tiles get a row of their own: their loop over `dt` (expand_depthwise.cc), or where a row
    # is one tile, the loop over a row's blocks `dv` (whose own multiply-adds are the tiles').
    depthwise_tiles = hot_loops(os.path.join(dump, "kernels.loop.txt"), var="dv")
    depthwise_tiles.update(hot_loops(os.path.join(dump, "kernels.loop.txt"), var="dt"))
    rows = []
    for func, schedule in sorted(plans(dump).items()):
        loops = [(symbol,) + loop for symbol, code in funcs.items()
                 if symbol == func or symbol.startswith(func + "_compute_")
                 for loop in loop_fmas(code, fma)]
        if not loops or func not in hot:
            continue
        parts = [(schedule, hot[func])]
        if schedule.startswith("expand_depthwise") and func in depthwise_tiles:
            parts.append((schedule + " (depthwise tiles)", depthwise_tiles[func]))
        for name, per in parts:
            count, size, matched = hot_loop_code(loops, per)
            rows.append({"kernel": func, "schedule": name, "share": count / size, "fma": count,
                         "instructions": size, "matched": matched})
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
