#!/usr/bin/python3
"""Regenerate the ONNX backend node test corpus from Debian's python3-onnx.

Usage:  gen_corpus.py [OUTDIR] [--force]

python3-onnx 1.12 ships the generators of the upstream backend node tests
(onnx.backend.test.case).  They were written against an older NumPy and still
use the aliases np.float, np.int, np.bool and np.object that NumPy 1.24
removed, so this script puts those names back before importing the generator
and then writes OUTDIR/node/<case>/{model.onnx,test_data_set_0/*.pb}, the same
layout as the published corpus.  OUTDIR defaults to build/onnx-corpus (relative
to the current directory).

Idempotent: OUTDIR/.complete records the onnx version that produced the tree;
when it matches, nothing is regenerated (use --force to rebuild anyway).  The
tree is written into a fresh temporary sibling directory and renamed into
place, so an interrupted run never leaves a half corpus that looks complete,
and two runs at once do not trip over each other.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

STAMP = ".complete"


def is_complete(stamp, want):
    try:
        with open(stamp) as f:
            return f.read() == want
    except OSError:
        return False


def restore_numpy_aliases():
    """The generators predate NumPy 1.24; give them back the builtin aliases."""
    for alias, builtin in (("float", float), ("int", int), ("bool", bool),
                           ("object", object), ("complex", complex), ("str", str)):
        if alias not in np.__dict__:
            setattr(np, alias, builtin)


def generate(tmpdir):
    restore_numpy_aliases()
    warnings.simplefilter("ignore")
    import onnx
    from onnx.backend.test import cmd_tools

    # generate-data collects every node case, then writes model.onnx and the
    # serialized data sets. Its CLI is the supported entry point, so drive it
    # through the same argument namespace it builds for itself.
    cmd_tools.generate_data(argparse.Namespace(output=tmpdir, op_type=None))
    return onnx.__version__


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?", default=os.path.join("build", "onnx-corpus"))
    ap.add_argument("--force", action="store_true", help="regenerate even if the stamp matches")
    args = ap.parse_args(argv)

    import onnx
    outdir = os.path.abspath(args.outdir)
    stamp = os.path.join(outdir, STAMP)
    want = "onnx %s\n" % onnx.__version__
    if not args.force and is_complete(stamp, want):
        print("gen_corpus: %s is up to date (%s)" % (outdir, want.strip()))
        return 0

    start = time.time()
    parent = os.path.dirname(outdir)
    os.makedirs(parent, exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix=os.path.basename(outdir) + ".tmp-", dir=parent)
    try:
        generate(tmpdir)
    except BaseException:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise

    node_dir = os.path.join(tmpdir, "node")
    cases = sorted(os.listdir(node_dir)) if os.path.isdir(node_dir) else []
    if not cases:
        print("gen_corpus: the generator produced no node cases in %s" % node_dir, file=sys.stderr)
        shutil.rmtree(tmpdir, ignore_errors=True)
        return 1
    # Only the node tests are part of the corpus; drop the other kinds
    # (the "real" model stubs point at downloads this project never uses).
    for kind in os.listdir(tmpdir):
        if kind != "node":
            shutil.rmtree(os.path.join(tmpdir, kind))
    with open(os.path.join(tmpdir, STAMP), "w") as f:
        f.write(want)

    if not args.force and is_complete(stamp, want):
        # Another run (e.g. a parallel test job) finished first; keep its tree.
        shutil.rmtree(tmpdir, ignore_errors=True)
    else:
        shutil.rmtree(outdir, ignore_errors=True)
        os.rename(tmpdir, outdir)
    print("gen_corpus: %d node cases in %s (%.1f s)" % (len(cases), outdir, time.time() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
