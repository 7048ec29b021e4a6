#!/usr/bin/python3
"""Checks apps/bundle_static against ember-run on the same model and input.

bundle_static holds the model's kernels (emberc --system-lib), graph and params in one executable;
the reference is the three-file artifact of the same model and emberc target, run by ember-run
through dlopen. Both get one seeded input; output 0 must agree to float rounding. With
--expect-static the executable must also have no program interpreter and no shared-library needs.
Target binaries run through --emulator (e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu") when given.
"""
import argparse
import json
import os
import shlex
import struct
import subprocess
import sys
import tempfile

import numpy as np

PARAMS_MAGIC = 0xF7E58D4F05049CB7
DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32,
          "int8": np.int8, "uint8": np.uint8}


def param_names(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, _reserved, count = struct.unpack_from("<QQQ", data, 0)
    if magic != PARAMS_MAGIC:
        sys.exit("%s: not a params file (magic %#x)" % (path, magic))
    names, at = set(), 24
    for _ in range(count):
        (n,) = struct.unpack_from("<Q", data, at)
        names.add(data[at + 8:at + 8 + n].decode())
        at += 8 + n
    return names


def first_input(artifact):
    """(name, shape, dtype) of the first graph input that is not a parameter."""
    with open(os.path.join(artifact, "graph.json")) as f:
        graph = json.load(f)
    params = param_names(os.path.join(artifact, "params.bin"))
    for nid in graph["arg_nodes"]:
        name = graph["nodes"][nid]["name"]
        if name in params:
            continue
        entry = graph["node_row_ptr"][nid]
        return name, graph["attrs"]["shape"][1][entry], graph["attrs"]["dltype"][1][entry]
    sys.exit("%s/graph.json: no input that is not a parameter" % artifact)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit("FAILED (exit %d): %s\n%s%s" % (p.returncode, shlex.join(cmd), p.stdout, p.stderr))
    return p.stdout


def check_static(binary):
    headers = run(["readelf", "-lW", binary])
    if "INTERP" in headers:
        sys.exit("%s: has a program interpreter, so it is not statically linked" % binary)
    dynamic = run(["readelf", "-dW", binary])
    needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
    if needed:
        sys.exit("%s: needs shared libraries:\n%s" % (binary, "\n".join(needed)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--ember-run", required=True)
    ap.add_argument("--artifact", required=True, help="directory with graph.json, lib.so, params.bin")
    ap.add_argument("--emulator", default="", help="command prefix for target binaries")
    ap.add_argument("--expect-static", action="store_true")
    args = ap.parse_args()
    emu = shlex.split(args.emulator)

    if args.expect_static:
        check_static(args.bundle)
    name, shape, dtype = first_input(args.artifact)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(DTYPES[dtype])
    with tempfile.TemporaryDirectory(prefix="ember_bundle_") as tmp:
        x_path = os.path.join(tmp, "input.npy")
        np.save(x_path, x)
        bundle_out = os.path.join(tmp, "bundle_out.npy")
        printed = run(emu + [args.bundle, x_path, bundle_out])
        run(emu + [args.ember_run, args.artifact, "--input", "%s=%s" % (name, x_path),
                   "--output-dir", tmp])
        got = np.load(bundle_out)
        want = np.load(os.path.join(tmp, "output_0.npy"))
        if got.shape != want.shape or got.dtype != want.dtype:
            sys.exit("bundle output %s %s, ember-run output %s %s" % (got.shape, got.dtype,
                                                                     want.shape, want.dtype))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        top = [line for line in printed.splitlines() if "index" in line]
        if len(top) != min(5, want.size):
            sys.exit("bundle_static printed %d top entries, expected %d:\n%s" % (
                len(top), min(5, want.size), printed))
        best = int(np.argmax(want.reshape(-1)))
        if "index %d " % best not in top[0]:
            sys.exit("bundle_static's first entry is not index %d:\n%s" % (best, printed))
        # The built-in input works too (no files at all).
        run(emu + [args.bundle])
    print("bundle_static matches ember-run on %s %s (max abs diff %.3g)" % (
        name, list(shape), float(np.max(np.abs(got.astype(np.float64) - want)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
