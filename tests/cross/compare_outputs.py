#!/usr/bin/python3
"""compare_outputs.py REF_DIR GOT_DIR [--rtol R] [--atol A] [--label TEXT]

Compares every output_N.npy of REF_DIR (e.g. the x86-64 artifact's outputs) with the file of the
same name in GOT_DIR (e.g. the aarch64 artifact's under qemu): same shape and dtype, and
|got - ref| <= atol + rtol * |ref| elementwise. Prints one line per output; exit 1 on a mismatch.
"""
import argparse
import glob
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref_dir")
    ap.add_argument("got_dir")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--label", default="")
    args = ap.parse_args()

    refs = sorted(glob.glob(os.path.join(args.ref_dir, "output_*.npy")))
    if not refs:
        print("%s: no output_*.npy in %s" % (args.label, args.ref_dir))
        return 1
    ok = True
    for ref_path in refs:
        name = os.path.basename(ref_path)
        got_path = os.path.join(args.got_dir, name)
        if not os.path.exists(got_path):
            print("%s %s: MISSING in %s" % (args.label, name, args.got_dir))
            ok = False
            continue
        ref, got = np.load(ref_path), np.load(got_path)
        if ref.shape != got.shape or ref.dtype != got.dtype:
            print("%s %s: MISMATCH shape/dtype %s %s vs %s %s" % (
                args.label, name, got.shape, got.dtype, ref.shape, ref.dtype))
            ok = False
            continue
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        bound = args.atol + args.rtol * np.abs(ref.astype(np.float64))
        bad = int(np.count_nonzero(~(diff <= bound)))
        status = "ok" if bad == 0 else "MISMATCH"
        ok = ok and bad == 0
        print("%s %s: %s shape %s max|diff| %.3g (rtol %g atol %g, %d of %d outside)" % (
            args.label, name, status, list(ref.shape), float(diff.max()) if diff.size else 0.0,
            args.rtol, args.atol, bad, ref.size))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
