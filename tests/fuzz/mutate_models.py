#!/usr/bin/python3
"""Structured fuzzing of emberc: valid ONNX models with one field made hostile.

Usage:
  tests/fuzz/mutate_models.py CORPUS [--per-model N] [--seed S] [--only SUBSTRING]...
                              [--emberc PATH] [--ember-run PATH] [--timeout SECONDS] [--keep DIR]
                              [-j JOBS] [--manifest MANIFEST] [--kind KIND]... [--sanitized]

libFuzzer (tests/fuzz) mutates bytes, so almost every input it makes fails to parse; the
compiler's passes behind the parser (shape inference, canonicalization, scheduling, codegen) see
well-formed models only. Here every model.onnx under CORPUS (the conformance corpus that
tests/onnx/gen_corpus.py writes) or, with --manifest, every whole model of a model-suite manifest
(whose fusion, layout and scheduling passes single-node cases never reach) is mutated N times,
one field each: an integer or float attribute set to an edge value (0, -1, huge, NaN), one
element of a list attribute changed, dropped or repeated, an element of a small integer
initializer (a shape, pads, starts, repeats) set to such a value, an initializer one element
longer or shorter along a dim, one element of a float constant (an initializer, or a float input
made one) set to NaN, an infinity or 1e30, an input's dimension set to 0, -3 or 2^40, its
element type changed, a node input dropped or repeated, or the opset import moved (--kind picks
some of these). Each mutant goes through
`emberc compile` with a time and address-space limit, and each one it compiles through
`ember-run` on seeded random inputs. Either may refuse (exit 1 with a message); neither may crash
(a signal, an uncaught exception, a sanitizer report), hang, allocate without bound, or fail
without a message. Findings are printed and, with --keep, the mutant is saved; the exit status is
1 when there is any.
"""

import argparse
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
from run_conformance import freeze_int_inputs  # noqa: E402
EDGE_INTS = [0, -1, 1, 2, -2, 7, 1 << 31, -(1 << 31), 1 << 40, -(1 << 62)]
EDGE_FLOATS = [0.0, -1.0, float("nan"), float("inf"), -float("inf"), 1e30, -1e-30]
EDGE_DIMS = [0, 1, -3, 1 << 20, 1 << 40]
ELEM_TYPES = [TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT8, TensorProto.BOOL,
              TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.STRING, TensorProto.UINT8]
# Messages that mean an error escaped instead of being reported as the model's fault.
ESCAPED = re.compile(r"terminate called|std::|bad_alloc|AddressSanitizer|UndefinedBehavior|"
                     r"runtime error:|Assertion .* failed|LLVM ERROR|PLEASE submit")


def mutate_attribute(node, rng):
    if not node.attribute:
        return None
    a = rng.choice(node.attribute)
    if a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(EDGE_INTS)
        return "%s.%s = %d" % (node.op_type, a.name, a.i)
    if a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice(EDGE_FLOATS)
        return "%s.%s = %r" % (node.op_type, a.name, a.f)
    if a.type == onnx.AttributeProto.INTS:
        values = list(a.ints)
        how = rng.choice(["set", "drop", "repeat", "empty"]) if values else "repeat"
        if how == "set":
            values[rng.randrange(len(values))] = rng.choice(EDGE_INTS)
        elif how == "drop":
            values.pop(rng.randrange(len(values)))
        elif how == "repeat":
            values.append(values[-1] if values else rng.choice(EDGE_INTS))
        else:
            values = []
        del a.ints[:]
        a.ints.extend(values)
        return "%s.%s = %s" % (node.op_type, a.name, values)
    if a.type == onnx.AttributeProto.FLOATS and a.floats:
        a.floats[rng.randrange(len(a.floats))] = rng.choice(EDGE_FLOATS)
        return "%s.%s = %s" % (node.op_type, a.name, list(a.floats))
    if a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"BOGUS", a.s.upper()])
        return "%s.%s = %r" % (node.op_type, a.name, a.s)
    return None


def mutate_input_dim(graph, rng):
    inputs = [i for i in graph.input if i.type.tensor_type.shape.dim]
    if not inputs:
        return None
    i = rng.choice(inputs)
    dims = i.type.tensor_type.shape.dim
    d = dims[rng.randrange(len(dims))]
    d.dim_value = rng.choice(EDGE_DIMS)
    return "input %s dim = %d" % (i.name, d.dim_value)


def mutate_input_rank(graph, rng):
    if not graph.input:
        return None
    i = rng.choice(graph.input)
    shape = i.type.tensor_type.shape
    if rng.random() < 0.5 and shape.dim:
        shape.dim.pop()
        return "input %s loses its last dim" % i.name
    shape.dim.add().dim_value = rng.choice([1, 2, 3])
    return "input %s gains a dim" % i.name


def mutate_elem_type(graph, rng):
    if not graph.input:
        return None
    i = rng.choice(graph.input)
    i.type.tensor_type.elem_type = rng.choice(ELEM_TYPES)
    return "input %s elem_type = %d" % (i.name, i.type.tensor_type.elem_type)


def mutate_node_inputs(node, rng):
    if not node.input:
        return None
    if rng.random() < 0.5:
        node.input.pop()
        return "%s loses its last input" % node.op_type
    node.input.append(node.input[rng.randrange(len(node.input))])
    return "%s gains an input" % node.op_type


def mutate_initializer(graph, rng):
    """One element of a small integer initializer (a shape, pads, axes, starts, repeats, k: the
    values exporters compute and emberc reads at compile time) set to an edge value."""
    small = [t for t in graph.initializer
             if t.data_type in (TensorProto.INT64, TensorProto.INT32)
             and 0 < numpy_helper.to_array(t).size <= 16]
    if not small:
        return None
    t = rng.choice(small)
    values = numpy_helper.to_array(t).copy()
    edges = [v for v in EDGE_INTS if np.iinfo(values.dtype).min <= v <= np.iinfo(values.dtype).max]
    values.flat[rng.randrange(values.size)] = rng.choice(edges)
    t.CopyFrom(numpy_helper.from_array(values, t.name))
    return "initializer %s = %s" % (t.name, values.tolist())


def mutate_initializer_shape(graph, rng):
    """An initializer (a weight, a bias, a scale) one element longer or shorter along one dim, or
    with a leading dim more: a wrong export or a hand edit, which emberc must refuse by its shape
    rather than have a kernel read past it."""
    small = [t for t in graph.initializer
             if numpy_helper.to_array(t).size <= (1 << 20) and t.data_type != TensorProto.STRING]
    if not small:
        return None
    t = rng.choice(small)
    values = numpy_helper.to_array(t)
    how = rng.choice(["grow", "shrink", "lead"]) if values.ndim else "lead"
    if how == "lead":
        values = np.stack([values, values])
    else:
        axis = rng.randrange(values.ndim)
        n = values.shape[axis]
        if how == "grow" and n > 0:
            values = np.concatenate([values, values.take([n - 1], axis=axis)], axis=axis)
        elif n > 0:
            values = values.take(range(n - 1), axis=axis)
    t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(values), t.name))
    return "initializer %s shape = %s" % (t.name, list(values.shape))


def mutate_float_constant(graph, rng):
    """One element of a float constant set to NaN, an infinity or 1e30: a float initializer, or a
    float input made one (seeded values of its shape), so that emberc folds the nodes reading it
    at compile time, where converting such a value (to an integer, a narrower float, an index) is
    what C++ and libonnx leave undefined."""
    floats = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)
    inits = [t for t in graph.initializer
             if t.data_type in floats and 0 < numpy_helper.to_array(t).size <= (1 << 20)]
    initialized = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input
              if i.name not in initialized and i.type.tensor_type.elem_type in floats
              and i.type.tensor_type.shape.dim
              and all(d.HasField("dim_value") for d in i.type.tensor_type.shape.dim)
              and 0 < np.prod([d.dim_value for d in i.type.tensor_type.shape.dim]) <= 4096]
    if not inits and not inputs:
        return None
    if inits and (not inputs or rng.random() < 0.5):
        t = rng.choice(inits)
        values, name = numpy_helper.to_array(t).copy(), t.name
        graph.initializer.remove(t)
    else:
        i = rng.choice(inputs)
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[i.type.tensor_type.elem_type]
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        values = np.random.RandomState(rng.randrange(1 << 30)).standard_normal(shape).astype(dtype)
        name = i.name
        graph.input.remove(i)
    with np.errstate(over="ignore"):  # 1e30 in float16 is inf
        values.flat[rng.randrange(values.size)] = rng.choice(EDGE_FLOATS)
    graph.initializer.append(numpy_helper.from_array(values, name))
    return "float constant %s holds %s" % (name, values.flat[:8].tolist())


def mutate_opset(model, rng):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = rng.choice([1, 6, 9, 11, 99])
            return "opset = %d" % o.version
    return None


def mutate(model, rng, kinds=()):
    """One hostile change to `model` (in place), of one of `kinds` (all when empty); its
    description, or None when none applied."""
    graph = model.graph
    node = rng.choice(graph.node) if graph.node else None
    choices = [
        ("attribute", 4, lambda: mutate_attribute(node, rng) if node else None),
        ("input-dim", 2, lambda: mutate_input_dim(graph, rng)),
        ("input-rank", 1, lambda: mutate_input_rank(graph, rng)),
        ("elem-type", 1, lambda: mutate_elem_type(graph, rng)),
        ("node-inputs", 1, lambda: mutate_node_inputs(node, rng) if node else None),
        ("opset", 1, lambda: mutate_opset(model, rng)),
        ("initializer", 2, lambda: mutate_initializer(graph, rng)),
        ("initializer-shape", 2, lambda: mutate_initializer_shape(graph, rng)),
        ("float-constant", 2, lambda: mutate_float_constant(graph, rng)),
    ]
    choices = [c for c in choices if not kinds or c[0] in kinds]
    weights = [w for _, w, _ in choices]
    for _ in range(8):
        what = rng.choices(choices, weights)[0][2]()
        if what:
            return what
    return None


def freeze(model, case_dir):
    """The case's int32/int64 inputs as initializers holding its test values, as the conformance
    runner freezes them: shapes, pads and indices become the constants exporters write, and
    mutate_initializer finds them."""
    data_set = os.path.join(case_dir, "test_data_set_0")
    if not os.path.isdir(data_set):
        return
    initialized = {t.name for t in model.graph.initializer}
    freeze_int_inputs(model, [v for v in model.graph.input if v.name not in initialized], data_set)


def suite_models(manifest, models_dir):
    """(path, name, emberc arguments) of each "ok" row of a model-suite manifest."""
    from check_suite import read_manifest
    return [(os.path.join(models_dir, row.name + ".onnx"), row.name, row.args)
            for row in read_manifest(manifest) if row.expect == "ok"]


ADDRESS_SPACE_LIMIT = [4 << 30]  # --sanitized lifts it: ASan reserves terabytes of shadow memory
# What bounds a sanitized tool's memory instead: ASan's allocator refuses (returns null for) any
# one allocation past 4 GB, as the address-space limit makes malloc do.
SANITIZED_ENV = {"ASAN_OPTIONS": "allocator_may_return_null=1:max_allocation_size_mb=4096"}


def limit_resources():
    if ADDRESS_SPACE_LIMIT[0]:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT[0], ADDRESS_SPACE_LIMIT[0]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_tool(argv, timeout):
    """(None, exit status) of a run that ended as it should (done, or refused with a message);
    (what went wrong, None) otherwise."""
    name = os.path.basename(argv[0])
    try:
        env = None if ADDRESS_SPACE_LIMIT[0] else dict(os.environ, **SANITIZED_ENV)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           preexec_fn=limit_resources, env=env)
    except subprocess.TimeoutExpired:
        return "%s hangs: still running after %ds" % (name, timeout), None
    # ASan's note that it refused an allocation (SANITIZED_ENV) comes before the tool's own message.
    err = "\n".join(line for line in p.stderr.strip().splitlines()
                    if "WARNING: AddressSanitizer failed to allocate" not in line)
    if p.returncode < 0:
        return "%s killed by signal %d: %s" % (name, -p.returncode, err[-300:]), None
    if ESCAPED.search(err):
        return "%s: escaped error (exit %d): %s" % (name, p.returncode, err[-300:]), None
    if p.returncode != 0 and not err:
        return "%s exit %d with no message" % (name, p.returncode), None
    return None, p.returncode


def check(emberc, ember_run, path, timeout, emberc_args=()):
    """None when emberc compiled or refused the model as it should and, when it compiled,
    ember-run ran it on seeded random inputs or refused them; else what went wrong."""
    out = tempfile.mkdtemp(prefix="ember-mutant-")
    try:
        art = os.path.join(out, "art")
        problem, status = run_tool([emberc, "compile", path, "-o", art] + list(emberc_args),
                                   timeout)
        if problem or status != 0 or not ember_run:
            return problem
        problem, _ = run_tool([ember_run, art, "--output-dir", os.path.join(out, "outputs")],
                              timeout)
        return problem
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--per-model", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--emberc", default=os.environ.get("EMBERC",
                                                         os.path.join(ROOT, "build/bin/emberc")))
    ap.add_argument("--ember-run", default=os.environ.get(
        "EMBER_RUN", os.path.join(ROOT, "build/bin/ember-run")),
        help="runs each mutant that compiles ('' to only compile)")
    ap.add_argument("--kind", action="append", default=[],
                    help="only this kind of mutation (attribute, input-dim, input-rank, "
                         "elem-type, node-inputs, opset, initializer, initializer-shape, "
                         "float-constant); repeatable")
    ap.add_argument("--sanitized", action="store_true",
                    help="the tools are an ASan/UBSan build: no address-space limit (a huge "
                         "allocation then shows as an ASan report instead)")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--keep", default=None)
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--manifest", default=None,
                    help="a model-suite manifest (tests/models/zoo.tsv, gen_exported.py's "
                         "manifest.tsv): mutate CORPUS/NAME.onnx of its ok rows, each compiled "
                         "with its row's emberc arguments (input shapes, bound inputs)")
    args = ap.parse_args()
    if args.sanitized:
        ADDRESS_SPACE_LIMIT[0] = 0
    models = suite_models(args.manifest, args.corpus) if args.manifest else [
        (os.path.join(d, f), os.path.basename(d), [])
        for d, _, fs in sorted(os.walk(args.corpus)) for f in fs if f == "model.onnx"]
    if args.only:
        models = [m for m in models if any(s in m[0] for s in args.only)]
    work = tempfile.mkdtemp(prefix="ember-mutants-")
    jobs = []
    for m, case, emberc_args in models:
        for k in range(args.per_model):
            rng = random.Random("%d/%s/%d" % (args.seed, case, k))
            model = onnx.load(m)
            freeze(model, os.path.dirname(m))
            what = mutate(model, rng, args.kind)
            if what is None:
                continue
            path = os.path.join(work, "%s_%d.onnx" % (case, k))
            onnx.save(model, path)
            jobs.append((case, k, what, path, emberc_args))

    def run(job):
        case, k, what, path, emberc_args = job
        return job, check(args.emberc, args.ember_run, path, args.timeout, emberc_args)

    findings = 0
    with ThreadPoolExecutor(args.j) as pool:
        for (case, k, what, path, _), problem in pool.map(run, jobs):
            if problem:
                findings += 1
                print("FINDING %s #%d (%s): %s" % (case, k, what, problem), flush=True)
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    shutil.copy(path, os.path.join(args.keep, "%s_%d.onnx" % (case, k)))
    shutil.rmtree(work, ignore_errors=True)
    print("%d mutants of %d models: %d findings" % (len(jobs), len(models), findings))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
