#!/usr/bin/python3
"""Achieved GFLOP/s of a model's heaviest convolutions, against this machine's peak.

Usage:
  bench/conv_gflops.py resnet18 [--threads 1] [--top 3]     # a model of tests/models/gen_models.py
  bench/conv_gflops.py MODEL.onnx                           # any ONNX file, compiled here
  bench/conv_gflops.py ART_DIR --onnx MODEL.onnx            # an artifact emberc already wrote
  ... [--peak-gflops X] [--rounds R] [--json FILE|-]

Steps:
 1. NAME: gen_models.py writes WORK/models/NAME.onnx; NAME or MODEL.onnx:
    `emberc compile MODEL -o WORK/NAME/art`;
 2. `ember-run ART --profile --json --threads T`, R rounds (default 3); a
    kernel's time is the fastest round's (each round is ember-run's mean of
    3 repeats), since a shared machine only ever makes a kernel slower; the
    CPU/wall ratio of the ember-run processes is reported beside (well below T:
    the machine was busy and the wall-clock times include waits for a CPU);
 3. each Conv of the ONNX model (after onnx.shape_inference) is found through
    the `anchor` attr that emberc writes on every tvm_op node of graph.json:
    the name of the node that heads the fused kernel (for a conv group, the
    Conv; unnamed ONNX nodes are called OPTYPE_K as emberc's importer does,
    K counting the unnamed nodes in graph order); a kernel that computes a
    1x1 conv and the depthwise conv it feeds names the latter `fused_anchor`,
    and its row counts both (algorithm "1x1 + depthwise").  FLOPs of a Conv:
        2 * N * OC * OH * OW * (IC / group) * KH * KW
    (bias and fused epilogues are not counted);
 4. the peak: the fastest threads:1 line of `bench_peak --benchmark_format=json`
    (best of 3 repetitions; CPU time, so waits for a busy CPU do not count),
    times min(T, CPUs) for T threads; or --peak-gflops X (the whole figure
    for the run's thread count).

Prints the top K convolutions by time with their algorithm (direct, or Winograd
F(mxm) as graph.json's `winograd_tile` attr says: its GFLOP/s are effective
figures, direct FLOPs over time), FLOPs, time, GFLOP/s and share of the peak;
--json FILE writes the same as JSON ("-": to stdout, no table).

Tools: build/bin/emberc, build/bin/ember-run and build/bin/bench_peak under the
project root; $EMBERC / $EMBER_RUN / $BENCH_PEAK or --emberc / --ember-run /
--bench-peak override them (split like a shell command line).
Exit status: 0 on success, 1 when a tool fails or the graph cannot be matched
with the model, 2 on a bad command line.
"""

import argparse
import contextlib
import datetime
import json
import os
import resource
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare_ort import ToolError, cpu_name, last_json, run, tool  # noqa: E402


def find_tool(spec, what):
    """compare_ort.tool, with this script's name in its exit message."""
    try:
        return tool(spec, what)
    except SystemExit as e:
        sys.exit(str(e.code).replace("compare_ort.py:", "conv_gflops.py:", 1))


class MatchError(Exception):
    """The artifact and the ONNX model do not fit together."""


# ONNX side ----------------------------------------------------------------------------------

def emberc_node_names(graph):
    """Node names as emberc's importer gives them: an unnamed node becomes OPTYPE_K."""
    names, unnamed = [], 0
    for node in graph.node:
        if node.name:
            names.append(node.name)
        else:
            names.append("%s_%d" % (node.op_type, unnamed))
            unnamed += 1
    return names


def _static_shape(type_proto):
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value") or d.dim_value <= 0:
            return None
        dims.append(int(d.dim_value))
    return dims


def conv_layers(model):
    """{emberc node name: info} for every Conv of an ONNX model (a ModelProto or a path).

    info holds the Conv's shapes and attributes and "flops" = 2 * N * OC * OH * OW *
    (IC / group) * prod(kernel). Shapes come from onnx.shape_inference; output dims it
    cannot infer are None (and then flops too: the caller takes them from graph.json).
    """
    import onnx
    from onnx import shape_inference
    if isinstance(model, str):
        try:
            model = onnx.load(model)
        except Exception as e:  # protobuf's DecodeError and friends: name the file instead
            raise MatchError("cannot read the ONNX model %s: %s" % (model, e))
    try:
        inferred = shape_inference.infer_shapes(model)
    except Exception as e:
        raise MatchError("ONNX shape inference failed on the model: %s" % e)
    g = inferred.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        s = _static_shape(vi.type)
        if s is not None:
            shapes[vi.name] = s
    for init in g.initializer:
        shapes[init.name] = [int(d) for d in init.dims]
    layers = {}
    nodes, names = list(g.node), emberc_node_names(g)
    producer = {out: i for i, node in enumerate(nodes) for out in node.output}
    constants = {init.name for init in g.initializer} | {
        out for node in g.node if node.op_type == "Constant" for out in node.output}
    for name, node in zip(emberc_node_names(g), g.node):
        if node.op_type != "Conv":
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        group = int(attrs.get("group", 1))
        x = shapes.get(node.input[0])
        w = shapes.get(node.input[1])
        y = shapes.get(node.output[0])
        if w is None or len(w) < 3:
            raise MatchError("Conv '%s': the weight '%s' has no known static shape"
                             % (name, node.input[1]))
        if x is not None and x[1] != w[1] * group:
            raise MatchError("Conv '%s': input has %d channels, weight %s with group %d wants %d"
                             % (name, x[1], w, group, w[1] * group))
        kernel = w[2:]
        info = {"node": name, "input_shape": x, "weight_shape": w, "output_shape": y,
                "group": group, "kernel": kernel,
                "strides": list(attrs.get("strides", [1] * len(kernel))),
                "macs_per_output": int(w[1] * int(np.prod(kernel)))}
        info["flops"] = conv_flops(y, w) if y is not None else None
        info["fed_by"] = feeding_conv(node.input[0], nodes, producer, constants, names)
        layers[name] = info
    return layers


def feeding_conv(value, nodes, producer, constants, names, depth=8):
    """The emberc name of the Conv whose output alone reaches `value` through at most `depth`
    elementwise-like nodes (an activation between a 1x1 conv and the depthwise conv emberc may
    fuse with it, a hard-swish x * HardSigmoid(x) diamond included), or None. `producer` maps a
    value to the index of its node in `nodes` and `names`."""
    i = producer.get(value)
    if i is None or depth < 0 or len(nodes[i].output) != 1:
        return None
    if nodes[i].op_type == "Conv":
        return names[i]
    computed = [v for v in nodes[i].input if v and v not in constants and v in producer]
    found = {feeding_conv(v, nodes, producer, constants, names, depth - 1) for v in computed}
    return found.pop() if len(found) == 1 else None


def conv_flops(out_shape, weight_shape):
    """2 * N * OC * OH * OW * (IC / group) * KH * KW from Y = [N, OC, OH, OW] and
    W = [OC, IC / group, KH, KW] (any number of spatial dims)."""
    return 2 * int(np.prod(out_shape, dtype=np.int64)) * int(weight_shape[1]) * int(
        np.prod(weight_shape[2:], dtype=np.int64))


# Artifact side ------------------------------------------------------------------------------

def read_graph(art):
    path = os.path.join(art, "graph.json")
    try:
        with open(path) as f:
            graph = json.load(f)
    except (OSError, ValueError) as e:
        raise MatchError("cannot read %s: %s" % (path, e))
    try:
        nodes, row_ptr = graph["nodes"], graph["node_row_ptr"]
        shapes = graph["attrs"]["shape"][1]
    except (KeyError, IndexError, TypeError):
        raise MatchError("%s: no nodes / node_row_ptr / attrs.shape" % path)
    kernels = {}
    anchored = 0
    for nid, node in enumerate(nodes):
        if node.get("op") != "tvm_op":
            continue
        attrs = node.get("attrs") or {}
        anchored += "anchor" in attrs
        kernels[nid] = {"name": node.get("name"), "anchor": attrs.get("anchor"),
                        "fused_anchor": attrs.get("fused_anchor"),
                        "winograd_tile": int(attrs.get("winograd_tile", 0)),
                        "output_shape": shapes[row_ptr[nid]]}
    if kernels and not anchored:
        raise MatchError("%s has no 'anchor' attrs on its tvm_op nodes, so its kernels cannot "
                         "be matched with the model's Convs; recompile it with this tree's emberc"
                         % path)
    return kernels


# Measurements -------------------------------------------------------------------------------

def child_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def profile(ember_run, art, threads, rounds):
    """{node_id: fastest time_us over the rounds}, {node_id: profile row}, total_us (median),
    and the median CPU/wall ratio of the ember-run processes (well below the thread count:
    other processes held the CPUs, and the wall-clock kernel times include that wait)."""
    best, rows, totals, cpu_per_wall = {}, {}, [], []
    for _ in range(rounds):
        cpu0, wall0 = child_cpu_s(), time.monotonic()
        # The model's outputs go to a scratch folder, not into the caller's directory.
        with tempfile.TemporaryDirectory(prefix="conv_gflops_out_") as scratch:
            out = run(ember_run + [art, "--profile", "--json", "--threads", str(threads),
                                   "--output-dir", scratch], "ember-run --profile")
        cpu_per_wall.append((child_cpu_s() - cpu0) / max(time.monotonic() - wall0, 1e-9))
        rep = last_json(out, "ember-run")
        prof = rep.get("profile")
        if not isinstance(prof, dict) or "nodes" not in prof:
            raise ToolError("ember-run --profile --json printed no profile: %r" % sorted(rep))
        totals.append(float(prof["total_us"]))
        for row in prof["nodes"]:
            nid = int(row["node_id"])
            t = float(row["time_us"])
            rows[nid] = row
            best[nid] = min(t, best.get(nid, t))
    return best, rows, float(np.median(totals)), float(np.median(cpu_per_wall))


def measure_peak(bench_peak, repetitions=3):
    """(GFLOP/s, ISA) of the fastest single-thread kernel of bench_peak."""
    out = run(bench_peak + ["--benchmark_format=json", "--benchmark_filter=/threads:1$",
                            "--benchmark_repetitions=%d" % repetitions],
              "bench_peak", timeout=600)
    try:
        report = json.loads(out)
    except ValueError:
        raise ToolError("bench_peak printed no JSON: %r" % out[-300:])
    best = None
    for b in report.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("threads", 1) != 1:
            continue
        if b.get("error_occurred") or "GFLOP/s" not in b:
            continue
        if best is None or b["GFLOP/s"] > best[0]:
            best = (float(b["GFLOP/s"]), b.get("label", b.get("name")))
    if best is None:
        raise ToolError("bench_peak reported no single-thread GFLOP/s line")
    return best


# Report -------------------------------------------------------------------------------------

def conv_rows(kernels, layers, best_us, rows, peak):
    """One row per profiled kernel anchored on a Conv, heaviest first."""
    out = []
    for nid, k in kernels.items():
        anchor = k["anchor"]
        if anchor is None or anchor not in layers:
            continue
        if nid not in best_us:
            raise MatchError("kernel %s (node %d) of graph.json is missing from the profile"
                             % (k["name"], nid))
        info = layers[anchor]
        y = info["output_shape"]
        if y is None:  # dynamic in the model: the compiled graph knows it
            y = k["output_shape"]
        flops = conv_flops(y, info["weight_shape"])
        # A 1x1 conv fused with the depthwise conv it feeds: the kernel writes the latter's output.
        fused_with = k["fused_anchor"]
        if fused_with is not None:
            if fused_with not in layers or layers[fused_with]["fed_by"] != anchor:
                raise MatchError("kernel %s: its second conv '%s' is no Conv of the model fed by "
                                 "'%s'" % (k["name"], fused_with, anchor))
            flops += layers[fused_with]["flops"]
            y = layers[fused_with]["output_shape"] or k["output_shape"]
        if int(np.prod(k["output_shape"])) != int(np.prod(y)):
            raise MatchError("kernel %s: output %s in graph.json, but Conv '%s' gives %s"
                             % (k["name"], k["output_shape"], anchor, y))
        t = best_us[nid]
        gflops = flops / (t * 1e3) if t > 0 else float("inf")
        out.append({"node_id": nid, "kernel": k["name"],
                    "conv": anchor + ("+" + fused_with if fused_with else ""),
                    "fused_with": fused_with,
                    "input_shape": info["input_shape"], "weight_shape": info["weight_shape"],
                    "output_shape": y, "group": info["group"], "strides": info["strides"],
                    "winograd_tile": k["winograd_tile"],
                    "flops": flops, "time_us": t, "profile_percent": rows[nid].get("percent"),
                    "gflops": gflops, "percent_of_peak": 100.0 * gflops / peak})
    out.sort(key=lambda r: -r["time_us"])
    return out


def dims(shape):
    return "x".join(str(d) for d in shape) if shape else "?"


def print_table(result):
    print("%s, %s (%d CPUs), %d thread%s, peak %.1f GFLOP/s (%s)" % (
        result["date"], result["cpu"], result["cpus"], result["threads"],
        "" if result["threads"] == 1 else "s", result["peak_gflops"], result["peak_source"]))
    print("%s: %d convs, %.1f MFLOP, %.1f us in conv kernels (%.1f GFLOP/s), model total %.1f us"
          % (result["model"], result["conv_count"], result["conv_flops"] / 1e6,
             result["conv_time_us"], result["conv_gflops"], result["total_us"]))
    share = result["ember_run_cpu_per_wall"]
    if share < 0.9 * result["threads"]:
        print("note: ember-run got %.2f CPUs of %d (CPU/wall): other processes held the CPUs and "
              "the kernel times (wall clock) include that wait; scaled by it (an estimate), the "
              "GFLOP/s below would be %s" % (share, result["threads"], ", ".join(
                  "%.1f" % (r["gflops"] * result["threads"] / share) for r in result["top"])))
    if any(r["winograd_tile"] for r in result["top"]):
        print("note: Winograd F(mxm) convs do fewer multiplications than the direct FLOPs counted "
              "here, so their GFLOP/s are effective figures and may exceed the peak")
    print("| # | conv | kernel | algorithm | input | weight | stride | MFLOP | us | GFLOP/s "
          "| % peak |")
    print("|---:|---|---|---|---|---|---:|---:|---:|---:|---:|")
    for i, r in enumerate(result["top"]):
        algo = ("Winograd F(%dx%d)" % (r["winograd_tile"], r["winograd_tile"])
                if r["winograd_tile"] else "1x1 + depthwise" if r["fused_with"] else "direct")
        print("| %d | %s | %s | %s | %s | %s%s | %s | %.1f | %.1f | %.1f | %.1f |" % (
            i + 1, r["conv"], r["kernel"], algo, dims(r["input_shape"]), dims(r["weight_shape"]),
            " g%d" % r["group"] if r["group"] != 1 else "", dims(r["strides"]),
            r["flops"] / 1e6, r["time_us"], r["gflops"], r["percent_of_peak"]))


def prepare(opts, work, emberc):
    """(artifact dir, onnx path, model label), compiling when needed."""
    target = opts.target
    if os.path.isdir(target):
        if not opts.onnx:
            raise MatchError("%s is an artifact directory: pass --onnx MODEL.onnx (the model "
                             "it was compiled from), since graph.json keeps no Conv attributes"
                             % target)
        if not os.path.isfile(opts.onnx):
            raise MatchError("no such model file: %s" % opts.onnx)
        return os.path.abspath(target), opts.onnx, os.path.basename(os.path.normpath(target))
    if target.endswith(".onnx"):
        if not os.path.isfile(target):
            raise MatchError("no such model file: %s" % target)
        model, name = os.path.abspath(target), os.path.splitext(os.path.basename(target))[0]
    else:
        sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
        import gen_models
        if target not in gen_models.MODELS:
            raise MatchError("%r is neither an artifact directory, an .onnx file nor one of the "
                             "models of gen_models.py (%s)"
                             % (target, ", ".join(sorted(gen_models.MODELS))))
        folder = os.path.join(work, "models")
        with contextlib.redirect_stdout(sys.stderr):  # keep stdout for the table or JSON
            gen_models.main([folder, "--only", target])
        model, name = os.path.join(folder, target + ".onnx"), target
    if opts.onnx and os.path.abspath(opts.onnx) != model:
        raise MatchError("--onnx is only for an artifact directory")
    art = os.path.join(work, name, "art")
    start = time.time()
    run(emberc + ["compile", model, "-o", art], "emberc compile " + name)
    print("%s compiled in %.1f s" % (name, time.time() - start), file=sys.stderr)
    return art, model, name


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", help="artifact directory, MODEL.onnx, or a gen_models.py name")
    ap.add_argument("--onnx", help="the model an artifact directory was compiled from")
    ap.add_argument("--threads", type=int, default=1, help="ember-run threads (default 1)")
    ap.add_argument("--top", type=int, default=3, help="convolutions to list (default 3)")
    ap.add_argument("--rounds", type=int, default=3, help="ember-run --profile runs (default 3)")
    ap.add_argument("--peak-gflops", type=float,
                    help="peak GFLOP/s for this thread count instead of running bench_peak")
    ap.add_argument("--emberc", help="default $EMBERC or build/bin/emberc")
    ap.add_argument("--ember-run", help="default $EMBER_RUN or build/bin/ember-run")
    ap.add_argument("--bench-peak", help="default $BENCH_PEAK or build/bin/bench_peak")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "conv-gflops"),
                    help="scratch folder for generated models and artifacts "
                         "(default build/conv-gflops)")
    ap.add_argument("--json", metavar="FILE", help="write the result as JSON ('-': stdout)")
    opts = ap.parse_args(argv)
    if opts.threads < 1 or opts.top < 1 or opts.rounds < 1:
        ap.error("--threads, --top and --rounds must be >= 1")
    if opts.peak_gflops is not None and not opts.peak_gflops > 0:
        ap.error("--peak-gflops must be > 0")

    ember_run = find_tool(opts.ember_run or os.environ.get("EMBER_RUN")
                     or os.path.join(ROOT, "build", "bin", "ember-run"), "ember-run")
    needs_compile = not os.path.isdir(opts.target)
    emberc = find_tool(opts.emberc or os.environ.get("EMBERC")
                  or os.path.join(ROOT, "build", "bin", "emberc"), "emberc") if needs_compile \
        else None
    bench_peak = find_tool(opts.bench_peak or os.environ.get("BENCH_PEAK")
                      or os.path.join(ROOT, "build", "bin", "bench_peak"), "bench-peak") \
        if opts.peak_gflops is None else None
    work = os.path.abspath(opts.work)
    try:
        art, model, name = prepare(opts, work, emberc)
        layers = conv_layers(model)
        kernels = read_graph(art)
        best_us, rows, total_us, cpu_per_wall = profile(ember_run, art, opts.threads,
                                                        opts.rounds)
        if opts.peak_gflops is not None:
            peak, source = opts.peak_gflops, "--peak-gflops"
        else:
            core, isa = measure_peak(bench_peak)
            scale = min(opts.threads, os.cpu_count() or 1)
            peak = core * scale
            source = "bench_peak %s, %.1f per core%s" % (
                isa, core, " x %d" % scale if scale > 1 else "")
        convs = conv_rows(kernels, layers, best_us, rows, peak)
    except (ToolError, MatchError) as e:
        print("conv_gflops.py: %s" % e, file=sys.stderr)
        return 1
    if not convs:
        print("conv_gflops.py: no kernel of %s is anchored on a Conv of %s" % (art, model),
              file=sys.stderr)
        return 1
    matched = set(r["conv"].split("+")[0] for r in convs) | set(
        r["fused_with"] for r in convs if r["fused_with"])
    unmatched = [name for name in layers if name not in matched]
    if unmatched:  # their FLOPs would be missing from the totals: say so
        print("conv_gflops.py: warning: %d of the model's %d Convs head no kernel of graph.json "
              "(fused into another kernel, or renamed by emberc): %s"
              % (len(unmatched), len(layers), ", ".join(unmatched[:10])), file=sys.stderr)
    flops = sum(r["flops"] for r in convs)
    conv_us = sum(r["time_us"] for r in convs)
    result = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
              "cpu": cpu_name(), "cpus": os.cpu_count(), "model": name, "onnx": model,
              "artifact": art, "threads": opts.threads, "rounds": opts.rounds,
              "peak_gflops": peak, "peak_source": source, "total_us": total_us,
              "ember_run_cpu_per_wall": cpu_per_wall,
              "conv_count": len(convs), "conv_flops": flops, "conv_time_us": conv_us,
              "conv_gflops": flops / (conv_us * 1e3) if conv_us > 0 else None,
              "unmatched_convs": unmatched, "top": convs[:opts.top], "convs": convs}
    if opts.json != "-":
        print_table(result)
    if opts.json:
        text = json.dumps(result, indent=1) + "\n"
        if opts.json == "-":
            sys.stdout.write(text)
        else:
            with open(opts.json, "w") as f:
                f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
