#!/usr/bin/python3
"""What a compile and a start-up cost: emberc's time per stage, and load + first inference.

Usage:
  bench/footprint.py [--model NAME]... [--repeat N] [--jobs J] [--threads T] [--models DIR]
                     [--sizes]

For every model written by tests/models/gen_models.py (resnet18 and mobilenetv2 by default):

 1. compile: `emberc compile MODEL -o OUT -v` N times (default 3); prints the median whole-process
    wall time and user CPU time, and the median of each stage `-v` reports (import, the passes
    summed, kernel lowering, LLVM optimisation and object emission as thread time, link, and
    writing graph.json and params.bin);
 2. start-up: `ember-run OUT --bench --json` N times with a warm page cache and N times with the
    artifact's files and the runtime library evicted from it (posix_fadvise DONTNEED, which
    needs no privileges; pages another process holds mapped stay resident); prints the median
    load time (dlopen, graph.json, params.bin, executor), the first inference, and the steady
    median, with first / steady as a ratio;
 3. with --sizes: bench/runtime_size.py, the runtime's stripped size per target (x86-64,
    aarch64, armv7) and flavour (default, minimal) and where its bytes go (it builds each).

Medians only: the machine is shared and noisy. Tools: build/bin/emberc and build/bin/ember-run, or
$EMBERC / $EMBER_RUN. Exit status 1 when a compile or a run fails.
"""

import argparse
import glob
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_MODELS = ("resnet18", "mobilenetv2")

# `emberc -v` lines: "emberc: import   69.46 ms  (152 nodes)" and the kernel build summary.
STAGE_LINE = re.compile(r"^emberc: (\w+)\s+([\d.]+) ms")
KERNEL_LINE = re.compile(r"lower\+codegen ([\d.]+) ms.*llvm opt ([\d.]+) ms \+ object ([\d.]+) ms"
                         r".* in ([\d.]+) ms wall on (\d+) threads?, link ([\d.]+) ms")


def fail(message):
    sys.exit("footprint.py: " + message)


def run(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        fail("%s exited %d%s" % (" ".join(argv), proc.returncode, ": " + err[-1] if err else ""))
    return proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def timed(argv):
    """(stdout, stderr, wall seconds, user CPU seconds) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    start = time.monotonic()
    out, err = run(argv)
    wall = time.monotonic() - start
    return out, err, wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before


def compile_stages(stderr):
    """Stage -> ms from one `emberc -v` run; the passes are summed into one figure."""
    stages = {"passes": 0.0}
    for line in stderr.splitlines():
        kernels = KERNEL_LINE.search(line)
        if kernels:
            lower, opt, obj, wall, threads, link = kernels.groups()
            stages.update({"lower": float(lower), "llvm_opt": float(opt), "object": float(obj),
                           "kernels_wall": float(wall), "link": float(link),
                           "threads": int(threads)})
            continue
        stage = STAGE_LINE.match(line)
        if not stage or stage.group(1) in ("codegen",):
            continue
        name, ms = stage.group(1), float(stage.group(2))
        if name in ("import", "write_artifact"):
            stages[name] = ms
        else:
            stages["passes"] += ms
    return stages


def measure_compile(emberc, model, out, repeat, jobs):
    argv = [emberc, "compile", model, "-o", out, "-v"] + (["--jobs", str(jobs)] if jobs else [])
    walls, users, stages = [], [], []
    for _ in range(repeat):
        _, err, wall, user = timed(argv)
        walls.append(wall)
        users.append(user)
        stages.append(compile_stages(err))
    median = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
    return statistics.median(walls), statistics.median(users), median


def evict(paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def runtime_library(ember_run):
    """The libember_runtime.so ember-run loads, found beside it the way CMake lays the tree out."""
    found = glob.glob(os.path.join(os.path.dirname(os.path.dirname(ember_run)), "lib",
                                   "libember_runtime.so*"))
    return [p for p in found if not os.path.islink(p)]


def measure_startup(ember_run, artifact, repeat, threads, cold):
    files = [os.path.join(artifact, f) for f in ("graph.json", "lib.so", "params.bin")]
    files += runtime_library(ember_run)
    argv = [ember_run, artifact, "--bench", "--json", "--warmup", "3", "--repeat", "20",
            "--threads", str(threads)]
    loads, firsts, steadies = [], [], []
    for _ in range(repeat):
        if cold:
            evict(files)
        out, _ = run(argv)
        d = json.loads(out.strip().splitlines()[-1])
        loads.append(d["load_ms"])
        firsts.append(d["first_run_ms"])
        steadies.append(d["median_ms"])
    return statistics.median(loads), statistics.median(firsts), statistics.median(steadies)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="model name (default: %s)" %
                    ", ".join(DEFAULT_MODELS))
    ap.add_argument("--models", help="directory of NAME.onnx (default: generated into --work)")
    ap.add_argument("--work", default="/tmp/ember-footprint", help="scratch directory")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median taken)")
    ap.add_argument("--jobs", type=int, default=0, help="emberc --jobs (default: its own)")
    ap.add_argument("--threads", type=int, default=1, help="ember-run --threads")
    ap.add_argument("--sizes", action="store_true",
                    help="also print the runtime's sizes (bench/runtime_size.py)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        fail("--repeat must be at least 1, got %d" % args.repeat)
    models = args.model or list(DEFAULT_MODELS)
    emberc = os.environ.get("EMBERC", os.path.join(ROOT, "build", "bin", "emberc"))
    ember_run = os.environ.get("EMBER_RUN", os.path.join(ROOT, "build", "bin", "ember-run"))
    for tool in (emberc, ember_run):
        if not os.access(tool, os.X_OK):
            fail("%s not found or not executable (build the project, or set $EMBERC / "
                 "$EMBER_RUN)" % tool)
    model_dir = args.models or os.path.join(args.work, "models")
    if not args.models:
        run([sys.executable, os.path.join(ROOT, "tests", "models", "gen_models.py"), model_dir]
            + sum((["--only", m] for m in models), []))

    print("compile (median of %d; stage times in ms, LLVM stages as thread time)" % args.repeat)
    print("%-12s %7s %7s %8s %7s %7s %9s %8s %7s %6s %4s %6s" %
          ("model", "wall s", "user s", "import", "passes", "lower", "llvm opt", "object",
           "kernels", "link", "thr", "write"))
    for name in models:
        model = os.path.join(model_dir, name + ".onnx")
        if not os.path.isfile(model):
            fail("no model %s" % model)
        out = os.path.join(args.work, name)
        wall, user, s = measure_compile(emberc, model, out, args.repeat, args.jobs)
        print("%-12s %7.2f %7.2f %8.1f %7.1f %7.1f %9.1f %8.1f %7.1f %6.1f %4d %6.1f" %
              (name, wall, user, s.get("import", 0), s["passes"], s.get("lower", 0),
               s.get("llvm_opt", 0), s.get("object", 0), s.get("kernels_wall", 0),
               s.get("link", 0), s.get("threads", 0), s.get("write_artifact", 0)))

    print("\nstart-up, %d thread%s (median of %d; ms)" %
          (args.threads, "" if args.threads == 1 else "s", args.repeat))
    print("%-12s %-5s %8s %8s %8s %7s" % ("model", "cache", "load", "first", "steady",
                                          "first/steady"))
    for name in models:
        artifact = os.path.join(args.work, name)
        for cold in (False, True):
            load, first, steady = measure_startup(ember_run, artifact, args.repeat, args.threads,
                                                  cold)
            print("%-12s %-5s %8.2f %8.2f %8.2f %7.2f" %
                  (name, "cold" if cold else "warm", load, first, steady, first / steady))
    if args.sizes:
        print()
        sys.stdout.flush()
        return subprocess.call([sys.executable, os.path.join(HERE, "runtime_size.py")])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
