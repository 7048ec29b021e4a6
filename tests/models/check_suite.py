#!/usr/bin/python3
"""Ember against ONNX Runtime on a suite of models listed in a manifest.

Usage:
  tests/models/check_suite.py MANIFEST MODELS_DIR [--only NAME]... [--work DIR] [--json FILE]
                              [-j JOBS]
                              [--bench THREADS [--rounds R] [--runs N] [--warmup W]]

MANIFEST is a tab-separated file (tests/models/zoo.tsv, or the manifest.tsv that
gen_exported.py writes) whose rows name MODELS_DIR/NAME.onnx. The columns read are
named by position in the header comment of each manifest; this script needs:
  name         the model file is MODELS_DIR/NAME.onnx
  emberc_args  extra `emberc compile` arguments ("-": none); --input-shape NAME=a,b
               becomes ORT's --shape NAME=axb, and --bind NAME=VALUE feeds ORT that
               value for NAME (emberc removes the input from the artifact)
  tolerance    "-" (rtol=1e-3,atol=1e-4) or a comma list of rtol=R, atol=A,
               range=F: an output's absolute tolerance is at least F times the range
               of ORT's values for it (for float16 models, whose rounding differs), and
               mean=F: the mean absolute difference must also be within F times it
  expect       "ok": compile, run, match ORT; "error:TEXT": emberc must refuse the
               model with a one-line message containing TEXT (and not crash)

For "ok" rows: ORT runs the model on seeded inputs and saves them with its outputs
(bench/peer/ort_run.js), emberc compiles it, ember-run runs it on the same inputs,
and every output must match in dtype, shape and value. Exit status 1 when any row
fails. Tools: build/bin/emberc and build/bin/ember-run, or $EMBERC / $EMBER_RUN.

With --bench 1,2, every model that matched is then timed against ORT at each thread count,
alternating as bench/compare_ort.py does (same inputs, the row's shapes and bound values), and
a table of medians and Ember / ORT ratios follows (a benchmark: the exit status still says only
whether the models matched).
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import compare_ort  # noqa: E402  (the ORT runner and output comparison)

ZOO_COLUMNS = ("name", "package", "paths", "sha256", "emberc_args", "tolerance", "expect", "note")
SUITE_COLUMNS = ("name", "emberc_args", "tolerance", "expect", "note")
DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-4


class Row(object):
    def __init__(self, fields, columns, where):
        if len(fields) != len(columns):
            raise SystemExit("%s: expected %d tab-separated columns (%s), got %d" % (
                where, len(columns), ", ".join(columns), len(fields)))
        for key, value in zip(columns, fields):
            setattr(self, key, value)
        self.args = [] if self.emberc_args == "-" else shlex.split(self.emberc_args)
        self.rtol, self.atol, self.range_frac, self.mean_frac = parse_tolerance(self.tolerance,
                                                                                 where)
        if self.expect != "ok" and not self.expect.startswith("error:"):
            raise SystemExit("%s: expect must be ok or error:TEXT, got %r" % (where, self.expect))


def parse_tolerance(text, where):
    rtol, atol, range_frac, mean_frac = DEFAULT_RTOL, DEFAULT_ATOL, 0.0, 0.0
    if text == "-":
        return rtol, atol, range_frac, mean_frac
    for item in text.split(","):
        key, _, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            raise SystemExit("%s: tolerance item %r is not KEY=NUMBER" % (where, item))
        if key == "rtol":
            rtol = number
        elif key == "atol":
            atol = number
        elif key == "range":
            range_frac = number
        elif key == "mean":
            mean_frac = number
        else:
            raise SystemExit("%s: unknown tolerance %r (rtol, atol, range, mean)" % (where, key))
    return rtol, atol, range_frac, mean_frac


def read_manifest(path):
    """Rows of the manifest; zoo.tsv has fetch columns the other manifests lack."""
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            columns = ZOO_COLUMNS if len(fields) == len(ZOO_COLUMNS) else SUITE_COLUMNS
            rows.append(Row(fields, columns, "%s:%d" % (path, number)))
    return rows


def option_values(args, flag):
    """The values of every `flag VALUE` and `flag=VALUE` in an argument list."""
    out = []
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            out.append(args[i + 1])
        elif a.startswith(flag + "="):
            out.append(a[len(flag) + 1:])
    return out


def ort_arguments(row, model_path, scratch):
    """ORT's --shape for each --input-shape and --input FILE for each --bind."""
    args = []
    for spec in option_values(row.args, "--input-shape"):
        name, _, dims = spec.partition("=")
        args += ["--shape", "%s=%s" % (name, dims.replace(",", "x"))]
    bound = {}
    binds = option_values(row.args, "--bind")
    if binds:
        graph = onnx.load(model_path, load_external_data=False).graph
        inputs = {i.name: i for i in graph.input}
        os.makedirs(scratch, exist_ok=True)
        for spec in binds:
            name, _, value = spec.partition("=")
            tensor_type = inputs[name].type.tensor_type
            dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor_type.elem_type]
            shape = [d.dim_value for d in tensor_type.shape.dim]
            values = [float(v) for v in value.split(",")]
            array = np.array(values, dtype=dtype).reshape(shape if shape else ())
            path = os.path.join(scratch, name.replace("/", "_") + ".npy")
            np.save(path, array)
            args += ["--input", "%s=%s" % (name, path)]
            bound[name] = path
    return args, bound


def check_refusal(row, emberc, model_path, art):
    text = row.expect[len("error:"):]
    proc = subprocess.run(emberc + ["compile", model_path, "-o", art] + row.args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
    err = proc.stderr.decode("utf-8", "replace").strip()
    if proc.returncode == 0:
        return "emberc compiled it; expected a refusal containing %r" % text
    if proc.returncode < 0 or proc.returncode >= 128:
        return "emberc crashed (exit %d): %s" % (proc.returncode, err[-200:])
    if text not in err or len(err.splitlines()) != 1:
        return "expected one line containing %r, got: %s" % (text, err)
    return None


def check_model(row, ort, emberc, ember_run, model_path, base, result):
    ins, ref, art, out, fixed = (os.path.join(base, d) for d in ("in", "ref", "art", "out", "bound"))
    ort_args, bound = ort_arguments(row, model_path, fixed)
    reference = ort(model_path, "--runs", 1, "--warmup", 0, "--save-inputs", ins,
                    "--dump-outputs", ref, *ort_args)
    start = time.time()
    compare_ort.run(emberc + ["compile", model_path, "-o", art] + row.args,
                    "emberc compile " + row.name)
    result["compile_s"] = round(time.time() - start, 2)
    feed = compare_ort.ember_input_args(
        {"inputs": {k: v for k, v in reference["inputs"].items() if k not in bound}})
    start = time.time()
    compare_ort.run(ember_run + [art] + feed + ["--output-dir", out], "ember-run " + row.name)
    result["run_s"] = round(time.time() - start, 2)
    # What a timing run needs: both sides' commands on the same inputs.
    result["ember_argv"] = ember_run + [art] + feed
    result["ort_args"] = ["--inputs", ins] + ort_args
    return compare_ort.compare_outputs(ref, out, len(reference["outputs"]), row.rtol, row.atol,
                                       row.range_frac, row.mean_frac)


def bench_models(rows, results, ort, opts):
    """Times each model that matched ORT at each of opts.bench's thread counts; prints a table."""
    threads = [int(t) for t in opts.bench.split(",")]
    table = []
    for row, result in zip(rows, results):
        if result.get("check") != "ok" or "ember_argv" not in result:
            continue
        model_path = os.path.join(opts.models, row.name + ".onnx")
        for t in threads:
            try:
                timing = compare_ort.time_alternating(result["ember_argv"], ort, model_path,
                                                      result["ort_args"], t, opts,
                                                      "ember-run --bench " + row.name)
            except compare_ort.ToolError as e:
                print("%-26s threads=%d ERROR %s" % (row.name, t, e))
                continue
            result.setdefault("timing", {})[str(t)] = timing
            table.append((row.name, t, timing))
            print("%-26s threads=%d  ember %.3f ms, ort %.3f ms (cpu/wall %.2f)" % (
                row.name, t, timing["ember_ms"], timing["ort_ms"], timing["ort_cpu_per_wall"]))
            sys.stdout.flush()
    print("")
    print("%s, %s (%d CPUs), %d rounds x %d runs, medians in ms" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), compare_ort.cpu_name(),
        os.cpu_count(), opts.rounds, opts.runs))
    print("| model | threads | Ember ms | ORT ms | Ember / ORT |")
    print("|---|---:|---:|---:|---:|")
    for name, t, timing in table:
        print("| %s | %d | %.3f | %.3f | %.2f |" % (name, t, timing["ember_ms"], timing["ort_ms"],
                                                   timing["ratio"]))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifest")
    ap.add_argument("models", metavar="MODELS_DIR")
    ap.add_argument("--only", action="append", default=[], help="check only this model")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "model-suite"))
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="check this many models at a time (the compile times printed then "
                         "include the wait for a core)")
    ap.add_argument("--bench", metavar="THREADS",
                    help="then time the matching models against ORT at these thread counts "
                         "(comma separated)")
    ap.add_argument("--rounds", type=int, default=3, help="with --bench: alternating rounds")
    ap.add_argument("--runs", type=int, default=10, help="with --bench: timed runs per round")
    ap.add_argument("--warmup", type=int, default=2, help="with --bench: warm-up runs per round")
    opts = ap.parse_args(argv)
    if opts.jobs < 1:
        ap.error("--jobs wants a count >= 1, got %d" % opts.jobs)
    if opts.bench is not None:
        try:
            ok = all(int(t) >= 1 for t in opts.bench.split(","))
        except ValueError:
            ok = False
        if not ok or opts.rounds < 1 or opts.runs < 1 or opts.warmup < 0:
            ap.error("--bench wants comma separated thread counts >= 1, got %r (and --rounds, "
                     "--runs >= 1, --warmup >= 0)" % opts.bench)

    rows = [r for r in read_manifest(opts.manifest) if not opts.only or r.name in opts.only]
    unknown = set(opts.only) - {r.name for r in rows}
    if unknown:
        ap.error("no model named %s in %s" % (", ".join(sorted(unknown)), opts.manifest))
    emberc = compare_ort.tool(os.environ.get("EMBERC")
                              or os.path.join(ROOT, "build", "bin", "emberc"), "emberc")
    ember_run = compare_ort.tool(os.environ.get("EMBER_RUN")
                                 or os.path.join(ROOT, "build", "bin", "ember-run"), "ember-run")
    ort = compare_ort.Ort(os.environ.get("NODE", "node"))
    work = os.path.abspath(opts.work)

    def check(row):
        """The row's result (its "check" is "ok" or why it failed) and why it failed (or None)."""
        model_path = os.path.join(opts.models, row.name + ".onnx")
        base = os.path.join(work, row.name)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        result = {"model": row.name, "expect": row.expect}
        try:
            if not os.path.isfile(model_path):
                why = "%s does not exist" % model_path
            elif row.expect == "ok":
                why = check_model(row, ort, emberc, ember_run, model_path, base, result)
            else:
                why = check_refusal(row, emberc, model_path, os.path.join(base, "art"))
        except compare_ort.ToolError as e:
            why = str(e)
        result["check"] = why or "ok"
        return result, why

    # The checks are processes to wait on (ORT, emberc, ember-run), so threads run them side by
    # side; the lines print in the manifest's order.
    results, failures = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        for row, (result, why) in zip(rows, pool.map(check, rows)):
            results.append(result)
            if why:
                failures.append("%s: %s" % (row.name, why))
                print("%-26s FAIL: %s" % (row.name, why))
            elif "run_s" in result:
                print("%-26s ok   compiled in %5.2f s, ran in %5.2f s" % (
                    row.name, result["compile_s"], result["run_s"]))
            else:
                print("%-26s ok   refused as expected" % row.name)
            sys.stdout.flush()

    if opts.bench is not None:
        bench_models(rows, results, ort, opts)
    for result in results:  # commands, not results
        result.pop("ember_argv", None)
        result.pop("ort_args", None)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"results": results, "failures": failures}, f, indent=1)
            f.write("\n")
    print("%d of %d models as expected" % (len(rows) - len(failures), len(rows)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
