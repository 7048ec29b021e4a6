#!/usr/bin/python3
"""compare_conformance.py X86.json ARCH.json [--label aarch64]

Reads two --json reports of tests/onnx/run_conformance.py over the same cases (one with the host
tools, one with a cross target) and prints both pass rates and every case whose status differs.
Exit 1 if a case that passes on x86 does not pass on the cross target, or if the cross target has
a wrong answer, crash or timeout that x86 does not have.
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        report = json.load(f)
    return {r["case"]: r for r in report["cases"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("x86_json")
    ap.add_argument("arch_json")
    ap.add_argument("--label", default="cross")
    args = ap.parse_args()
    x86, arch = load(args.x86_json), load(args.arch_json)
    if set(x86) != set(arch):
        print("the two reports cover different cases (%d vs %d)" % (len(x86), len(arch)))
        return 1

    def passed(rs):
        return sum(1 for r in rs.values() if r["status"] == "PASS")

    n = len(x86)
    print("conformance: x86-64 %d/%d pass (%.1f%%), %s %d/%d pass (%.1f%%)" % (
        passed(x86), n, 100.0 * passed(x86) / max(n, 1), args.label, passed(arch), n,
        100.0 * passed(arch) / max(n, 1)))
    bad = 0
    for name in sorted(x86):
        a, b = x86[name]["status"], arch[name]["status"]
        if a == b:
            continue
        regression = (a == "PASS") or b in ("FAIL", "CRASH", "TIMEOUT")
        bad += regression
        detail = (arch[name].get("reason") or "").strip()
        print("  %s %s: x86-64 %s, %s %s%s" % ("!" if regression else "~", name, a, args.label, b,
                                             (" -- " + detail.splitlines()[0]) if detail else ""))
    if bad:
        print("%s: %d case(s) worse than on x86-64" % (args.label, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
