#!/usr/bin/python3
"""emberc / ember-run stand-ins backed by ONNX Runtime, for testing bench/compare_ort.py.

  fake_ember_ort.py compile MODEL.onnx -o ART
  fake_ember_ort.py ART --input NAME=F.npy ... [--output-dir DIR] [--threads T]
                        [--bench [--warmup W] [--repeat R] [--number K]] [--json]

"compile" copies the model into ART beside empty graph.json/lib.so/params.bin;
"run" hands the model to bench/peer/ort_run.js.  FAKE_EMBER_PERTURB=1 adds 1e-2
to the first output element, so the comparison's failure path can be tested.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_RUN = os.path.join(ROOT, "bench", "peer", "ort_run.js")


def compile_model(args):
    if len(args) != 3 or args[1] != "-o":
        sys.exit("fake emberc: usage: compile MODEL.onnx -o OUTDIR")
    os.makedirs(args[2], exist_ok=True)
    shutil.copy(args[0], os.path.join(args[2], "model.onnx"))
    for name in ("graph.json", "lib.so", "params.bin"):
        open(os.path.join(args[2], name), "wb").close()
    return 0


def run_artifact(args):
    art = args.pop(0)
    inputs, out_dir, threads, bench, as_json, warmup, repeat = {}, None, 1, False, False, 5, 10
    while args:
        flag = args.pop(0)
        if flag == "--input":
            name, path = args.pop(0).split("=", 1)
            inputs[name] = path
        elif flag == "--output-dir":
            out_dir = args.pop(0)
        elif flag == "--threads":
            threads = int(args.pop(0))
        elif flag == "--warmup":
            warmup = int(args.pop(0))
        elif flag == "--repeat":
            repeat = int(args.pop(0))
        elif flag == "--number":
            args.pop(0)
        elif flag == "--bench":
            bench = True
        elif flag == "--json":
            as_json = True
        else:
            sys.exit("fake ember-run: unknown option %s" % flag)
    with tempfile.TemporaryDirectory() as feed:
        for name, path in inputs.items():
            shutil.copy(path, os.path.join(feed, name + ".npy"))
        argv = ["node", ORT_RUN, os.path.join(art, "model.onnx"), "--inputs", feed,
                "--threads", str(threads)]
        argv += ["--warmup", str(warmup), "--runs", str(repeat)] if bench else \
            ["--warmup", "0", "--runs", "1"]
        if out_dir:
            argv += ["--dump-outputs", out_dir]
        proc = subprocess.run(argv, stdout=subprocess.PIPE, check=True)
    report = json.loads(proc.stdout)
    if out_dir and os.environ.get("FAKE_EMBER_PERTURB") == "1":
        path = os.path.join(out_dir, "output_0.npy")
        y = np.load(path)
        y.flat[0] += np.float32(1e-2)
        np.save(path, y)
    if bench and as_json:
        print(json.dumps({"median_ms": report["median_ms"], "mean_ms": report["mean_ms"],
                          "p99_ms": report["p99_ms"], "min_ms": report["min_ms"],
                          "max_ms": report["max_ms"], "workers_late": 0, "repeat": repeat, "number": 1, "threads": threads}))
    return 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(compile_model(argv[1:]) if argv and argv[0] == "compile" else run_artifact(argv))
