#!/usr/bin/python3
"""Ember against ONNX Runtime on the same models, inputs and thread counts.

Usage:
  bench/compare_ort.py [--model NAME]... [--threads 1,2] [--rounds R] [--runs N] [--warmup W]
  bench/compare_ort.py --check-only          # compile, run once in both, compare; exit 1 on mismatch
  bench/compare_ort.py --ort-only            # ORT latencies alone (no Ember needed)
  bench/compare_ort.py --plot latency.png    # also draw the table (bench/latency_plot.py)
  bench/compare_ort.py --busy-core 1 --threads 2 --runs 200   # tail latency on a busy device
  bench/compare_ort.py --target "llvm -mcpu=haswell"  # Ember's AVX2 kernels (ORT keeps the host's)

For every model written by tests/models/gen_models.py (mlp, mlp_batch64, cnn, resnet18,
mobilenetv2, mobilenetv3; or --models DIR with NAME.onnx files):

 1. ORT (bench/peer/ort_run.js) generates seeded inputs, saves them as .npy
    and dumps its outputs: these are the reference;
 2. `emberc compile MODEL -o WORK/NAME/art` (timed);
 3. `ember-run ART --input NAME=FILE.npy ... --output-dir OUT` once, and the
    outputs are compared with ORT's (rtol 1e-3, atol 1e-4; dtype and shape
    must match);
 4. unless --check-only: for each thread count, R rounds that alternate
    `ember-run ART --bench --json --threads T ...` and `ort_run.js --threads T`
    on the same inputs; the reported latency is the median of the round
    medians, and the ratio is Ember / ORT (below 1.0 means Ember is faster).

With --busy-core CPU a busy loop (another process, pinned to that CPU) runs through the timed
rounds, as on a phone or board whose cores also run other work; the table then adds each side's
p99 and max (p99: median over the rounds; max: over all runs) and Ember's count of workers that
were descheduled mid-task and sat out launches.

The machine is shared, so the ORT CPU/wall figure is printed: well below T
means the run was disturbed.  Exit status: 1 when a compile fails or an output
mismatches, else 0.

Tools: build/bin/emberc and build/bin/ember-run under the project root;
$EMBERC / $EMBER_RUN or --emberc / --ember-run override them (split like a
shell command line).  ORT is installed by bench/peer/install_ort.sh (into
${EMBER_ORT_DIR:-~/.cache/ember/ort}) when missing.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER = os.path.join(HERE, "peer")
DEFAULT_MODELS = ("mlp", "mlp_batch64", "cnn", "resnet18", "mobilenetv2", "mobilenetv3")


class ToolError(Exception):
    pass


def run(argv, what, timeout=900):
    """Run argv, return its stdout; raise ToolError with the first stderr line on failure."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolError("%s did not finish within %d s" % (what, timeout))
    except OSError as e:
        raise ToolError("%s could not start: %s" % (what, e))
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        how = ("killed by signal %d" % -proc.returncode if proc.returncode < 0
               else "exited %d" % proc.returncode)
        raise ToolError("%s %s%s" % (what, how, ": " + err[-1] if err else ""))
    return proc.stdout.decode("utf-8", "replace")


def last_json(text, what):
    """The last line of text that parses as a JSON object."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    raise ToolError("%s printed no JSON object; its output was: %r" % (what, text[-300:]))


def tool(spec, what):
    argv = shlex.split(spec)
    if not argv:
        sys.exit("compare_ort.py: the %s command is empty" % what)
    if os.sep in argv[0]:
        argv[0] = os.path.abspath(argv[0])
        if not os.access(argv[0], os.X_OK):
            sys.exit("compare_ort.py: %s not found or not executable: %s (build it, or set it with "
                     "--%s / $%s)" % (what, argv[0], what, what.upper().replace("-", "_")))
    elif shutil.which(argv[0]) is None:
        sys.exit("compare_ort.py: %s command %r is not on PATH" % (what, argv[0]))
    return argv


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ---------------------------------------------------------------------------------------------

class Ort(object):
    def __init__(self, node):
        self.node = node
        out = run([os.path.join(PEER, "install_ort.sh")], "bench/peer/install_ort.sh")
        self.dir = out.strip().splitlines()[-1]
        self.script = os.path.join(PEER, "ort_run.js")

    def __call__(self, model, *args):
        argv = [self.node, self.script, model, "--ort-dir", self.dir] + [str(a) for a in args]
        return last_json(run(argv, "ort_run.js " + os.path.basename(model)), "ort_run.js")


def ember_input_args(reference):
    args = []
    for name, info in reference["inputs"].items():
        path = info["source"].split("saved to ", 1)[1]
        args += ["--input", "%s=%s" % (name, path)]
    return args


def compare_outputs(ref_dir, got_dir, count, rtol, atol, range_frac=0.0, mean_frac=0.0):
    """None when every output_N.npy matches, else a one-line reason. With range_frac, an
    output's absolute tolerance is at least that fraction of its expected range (max - min);
    with mean_frac, the mean absolute difference must also stay within that fraction of it."""
    for i in range(count):
        name = "output_%d.npy" % i
        exp = np.load(os.path.join(ref_dir, name), allow_pickle=False)
        path = os.path.join(got_dir, name)
        if not os.path.isfile(path):
            return "%s not written by ember-run" % name
        try:
            got = np.load(path, allow_pickle=False)
        except Exception as e:  # an unreadable file is a finding, not a crash of this script
            return "%s unreadable: %s" % (name, e)
        if got.dtype != exp.dtype or got.shape != exp.shape:
            return "%s: got %s %s, expected %s %s" % (name, got.dtype, got.shape, exp.dtype,
                                                      exp.shape)
        g = got.astype(np.float64)
        e = exp.astype(np.float64)
        finite = e[np.isfinite(e)]
        spread = float(finite.max() - finite.min()) if finite.size else 0.0
        out_atol = max(atol, range_frac * spread)
        close = np.isclose(g, e, rtol=rtol, atol=out_atol, equal_nan=True)
        if not close.all():
            err = np.where(close, 0.0, np.abs(g - e))
            err = np.where(np.isnan(err), np.inf, err)
            worst = np.unravel_index(int(np.argmax(err)), err.shape)
            return ("%s: %d/%d elements differ (rtol=%g atol=%g), worst at %s: got %r, expected %r"
                    % (name, int((~close).sum()), close.size, rtol, out_atol, worst,
                       got[worst].item(), exp[worst].item()))
        mean = float(np.abs(g - e).mean()) if g.size else 0.0
        if mean_frac > 0 and mean > mean_frac * spread:
            return "%s: mean difference %g is over %g of the range %g" % (name, mean, mean_frac,
                                                                          spread)
    return None


class BusyCore(object):
    """A process spinning on one CPU for as long as the `with` block runs (none for cpu None)."""

    def __init__(self, cpu):
        self.cpu = cpu
        self.proc = None

    def __enter__(self):
        if self.cpu is not None:
            spin = "import os\nos.sched_setaffinity(0, {%d})\nwhile True:\n    pass\n" % self.cpu
            self.proc = subprocess.Popen([sys.executable, "-c", spin])
            time.sleep(0.2)  # let it start spinning before the first timed run
            if self.proc.poll() is not None:
                raise ToolError("the busy loop on CPU %d exited at once (is the CPU allowed? "
                                "os.sched_getaffinity(0) = %s)" % (
                                    self.cpu, sorted(os.sched_getaffinity(0))))
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        return False


def prepare_models(opts, work):
    if opts.models:
        folder = os.path.abspath(opts.models)
    else:
        folder = os.path.join(work, "models")
        sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
        import gen_models
        wanted = [n for n in opts.model if n in gen_models.MODELS] or list(DEFAULT_MODELS)
        args = [folder]
        for n in wanted:
            args += ["--only", n]
        start = time.time()
        gen_models.main(args)
        print("models generated in %.1f s" % (time.time() - start))
    names = opts.model or [n for n in DEFAULT_MODELS if os.path.isfile(
        os.path.join(folder, n + ".onnx"))]
    missing = [n for n in names if not os.path.isfile(os.path.join(folder, n + ".onnx"))]
    if missing or not names:
        sys.exit("compare_ort.py: no %s in %s" % (
            ", ".join(m + ".onnx" for m in missing) or "models", folder))
    return [(n, os.path.join(folder, n + ".onnx")) for n in names]


def summarize_side(reports, side):
    """One side's figures over the rounds: median of medians, median p99, max, the rounds."""
    return {side + "_ms": statistics.median(r["median_ms"] for r in reports),
            side + "_rounds": [r["median_ms"] for r in reports],
            side + "_p99_ms": statistics.median(r.get("p99_ms", r["max_ms"]) for r in reports),
            side + "_max_ms": max(r["max_ms"] for r in reports)}


def time_alternating(ember_argv, ort, model_path, ort_args, threads, opts, what):
    """opts.rounds rounds alternating `ember_argv --bench --json` (None: ORT alone) and ORT
    (ort_args: its inputs) at `threads`, each opts.runs runs after opts.warmup, with a busy loop
    on opts.busy_core (None: none); the figures of both sides (summarize_side) and their ratio.
    Raises ToolError."""
    ember_reps, ort_reps = [], []
    with BusyCore(getattr(opts, "busy_core", None)):
        for _ in range(opts.rounds):
            if ember_argv is not None:
                rep = last_json(run(ember_argv + ["--bench", "--json", "--threads", str(threads),
                                                  "--warmup", str(opts.warmup), "--repeat",
                                                  str(opts.runs), "--number", "1"], what),
                                "ember-run")
                if "median_ms" not in rep:
                    raise ToolError("ember-run --bench --json gave no median_ms: %r" % rep)
                ember_reps.append(rep)
            ort_reps.append(ort(model_path, "--threads", threads, "--warmup", opts.warmup,
                                "--runs", opts.runs, *ort_args))
    row = summarize_side(ort_reps, "ort")
    row["ort_cpu_per_wall"] = statistics.median(r["cpu_per_wall"] for r in ort_reps)
    if ember_reps:
        row.update(summarize_side(ember_reps, "ember"))
        row["ratio"] = row["ember_ms"] / row["ort_ms"]
        row["ember_workers_late"] = sum(r.get("workers_late", 0) for r in ember_reps)
    if getattr(opts, "busy_core", None) is not None:
        row["busy_core"] = opts.busy_core
    return row


def print_tail_table(results, busy_core):
    print("with a busy loop on CPU %d through the timed rounds" % busy_core)
    print("| model | threads | Ember median | p99 | max | p99/median | ORT median | p99 | max "
          "| p99/median | workers late |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for entry in results:
        for t, row in sorted(entry.get("timing", {}).items(), key=lambda kv: int(kv[0])):
            ember = "- | - | - | -"
            if "ember_ms" in row:
                ember = "%.3f | %.3f | %.3f | %.1f" % (
                    row["ember_ms"], row["ember_p99_ms"], row["ember_max_ms"],
                    row["ember_p99_ms"] / row["ember_ms"])
            print("| %s | %s | %s | %.3f | %.3f | %.3f | %.1f | %s |" % (
                entry["model"], t, ember, row["ort_ms"], row["ort_p99_ms"], row["ort_max_ms"],
                row["ort_p99_ms"] / row["ort_ms"], row.get("ember_workers_late", "-")))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", default=[],
                    help="model name (repeatable; default all four)")
    ap.add_argument("--models", metavar="DIR", help="use NAME.onnx files from DIR instead of "
                                                    "generating them")
    ap.add_argument("--threads", default="1,2", help="comma separated thread counts (default 1,2)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per case (default 3)")
    ap.add_argument("--runs", type=int, default=20, help="timed runs per round (default 20)")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up runs per round (default 5)")
    ap.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--check-only", action="store_true",
                    help="compile, run once in both runtimes, compare; no timing")
    ap.add_argument("--ort-only", action="store_true", help="time ORT alone (no Ember needed)")
    ap.add_argument("--emberc", help="default $EMBERC or build/bin/emberc")
    ap.add_argument("--target", help="emberc's --target (default the host), e.g. "
                    "'llvm -mcpu=haswell' to run a machine without AVX-512's kernels here")
    ap.add_argument("--ember-run", help="default $EMBER_RUN or build/bin/ember-run")
    ap.add_argument("--node", default=os.environ.get("NODE", "node"), help="node.js binary")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "compare-ort"),
                    help="scratch folder (default build/compare-ort)")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--busy-core", type=int, metavar="CPU",
                    help="run a busy loop pinned to this CPU through the timed rounds; the table "
                         "adds p99 and max")
    ap.add_argument("--plot", metavar="FILE.png",
                    help="draw the latencies and ratios (bench/latency_plot.py; needs Debian's "
                         "python3-matplotlib)")
    opts = ap.parse_args(argv)
    if opts.check_only and opts.ort_only:
        ap.error("--check-only and --ort-only exclude each other")
    if opts.busy_core is not None and opts.busy_core not in os.sched_getaffinity(0):
        ap.error("--busy-core %d: this process may run on CPUs %s only" % (
            opts.busy_core, sorted(os.sched_getaffinity(0))))
    if opts.plot and (opts.check_only or opts.ort_only):
        ap.error("--plot compares timings of both: not with --check-only or --ort-only")
    try:
        threads = [int(t) for t in opts.threads.split(",") if t.strip()]
    except ValueError:
        ap.error("--threads wants comma separated integers, got %r" % opts.threads)
    if not threads or min(threads) < 1 or opts.rounds < 1 or opts.runs < 1 or opts.warmup < 0:
        ap.error("--threads, --rounds and --runs must be >= 1 and --warmup >= 0")

    use_ember = not opts.ort_only
    if use_ember:
        emberc = tool(opts.emberc or os.environ.get("EMBERC")
                      or os.path.join(ROOT, "build", "bin", "emberc"), "emberc")
        ember_run = tool(opts.ember_run or os.environ.get("EMBER_RUN")
                         or os.path.join(ROOT, "build", "bin", "ember-run"), "ember-run")
    if shutil.which(opts.node) is None:
        sys.exit("compare_ort.py: node.js (%s) not found; apt-get install nodejs npm" % opts.node)
    work = os.path.abspath(opts.work)
    os.makedirs(work, exist_ok=True)
    models = prepare_models(opts, work)
    ort = Ort(opts.node)

    results = []
    failures = []
    for name, path in models:
        base = os.path.join(work, name)
        shutil.rmtree(base, ignore_errors=True)
        ins, ref, art, out = (os.path.join(base, d) for d in ("in", "ref", "art", "out"))
        entry = {"model": name, "path": path}
        results.append(entry)
        try:
            reference = ort(path, "--runs", 1, "--warmup", 0, "--seed", opts.seed,
                            "--save-inputs", ins, "--dump-outputs", ref)
            entry["ort_version"] = reference.get("ort_version")
            if use_ember:
                start = time.time()
                target = ["--target", opts.target] if opts.target else []
                run(emberc + ["compile", path, "-o", art] + target, "emberc compile " + name)
                entry["compile_s"] = round(time.time() - start, 2)
                entry["artifact_bytes"] = {f: os.path.getsize(os.path.join(art, f))
                                           for f in ("graph.json", "lib.so", "params.bin")
                                           if os.path.isfile(os.path.join(art, f))}
                feed = ember_input_args(reference)
                run(ember_run + [art] + feed + ["--output-dir", out], "ember-run " + name)
                why = compare_outputs(ref, out, len(reference["outputs"]), opts.rtol, opts.atol)
                entry["check"] = why or "ok"
                if why:
                    failures.append("%s: %s" % (name, why))
                print("%-12s compiled in %5.2f s; outputs %s" % (
                    name, entry["compile_s"], "match ORT" if not why else "DIFFER: " + why))
                sys.stdout.flush()
        except ToolError as e:
            entry["check"] = "error: %s" % e
            failures.append("%s: %s" % (name, e))
            print("%-12s ERROR %s" % (name, e))
            continue
        if opts.check_only:
            continue

        entry["timing"] = {}
        ember_argv = ember_run + [art] + feed if use_ember else None
        for t in threads:
            try:
                row = time_alternating(ember_argv, ort, path, ["--inputs", ins], t, opts,
                                       "ember-run --bench " + name)
            except ToolError as e:
                failures.append("%s threads=%d: %s" % (name, t, e))
                print("%-12s threads=%d ERROR %s" % (name, t, e))
                continue
            entry["timing"][str(t)] = row
            print("%-12s threads=%d  %s ort %.3f ms (cpu/wall %.2f)" % (
                name, t, "ember %.3f ms," % row["ember_ms"] if "ember_ms" in row else "",
                row["ort_ms"], row["ort_cpu_per_wall"]))
            sys.stdout.flush()

    if not opts.check_only:
        ort_version = next((r.get("ort_version") for r in results if r.get("ort_version")), "?")
        print("")
        print("%s, %s (%d CPUs), ONNX Runtime %s (onnxruntime-node), %d rounds x %d runs, "
              "medians in ms" % (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
                                 cpu_name(), os.cpu_count(), ort_version, opts.rounds, opts.runs))
        if opts.busy_core is not None:
            print_tail_table(results, opts.busy_core)
        else:
            print("| model | threads | Ember ms | ORT ms | Ember/ORT | outputs |")
            print("|---|---:|---:|---:|---:|---|")
            for entry in results:
                for t, row in sorted(entry.get("timing", {}).items(), key=lambda kv: int(kv[0])):
                    print("| %s | %s | %s | %.3f | %s | %s |" % (
                        entry["model"], t, "%.3f" % row["ember_ms"] if "ember_ms" in row else "-",
                        row["ort_ms"], "%.2f" % row["ratio"] if "ratio" in row else "-",
                        entry.get("check", "-")))

    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"date": datetime.datetime.utcnow().isoformat() + "Z", "cpu": cpu_name(),
                       "cpus": os.cpu_count(), "results": results, "failures": failures}, f,
                      indent=1)
            f.write("\n")
    if opts.plot and any("timing" in entry for entry in results):
        from latency_plot import plot_latency
        plot_latency(results, opts.plot, title="Ember against ONNX Runtime %s, %s, %s" % (
            ort_version, cpu_name(), datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")))
        print("wrote %s" % opts.plot)
    if failures:
        print("")
        print("%d problem(s):" % len(failures))
        for f in failures:
            print("  " + f)
        return 1
    if use_ember:
        print("all %d model outputs match ONNX Runtime (rtol %g, atol %g)" % (
            len(results), opts.rtol, opts.atol))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
