"""tests/fuzz/mutate_models.py against fake tools: it reports a crash, a hang, a message-less
failure and an escaped exception of emberc or ember-run, and accepts refusals with a message."""
import os
import stat
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO

SWEEP = os.path.join(REPO, "tests", "fuzz", "mutate_models.py")


def _corpus(root):
    """One conformance-shaped case: node/test_conv/model.onnx, a Conv with attributes."""
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 5, 5])],
        [numpy_helper.from_array(np.ones((2, 2, 3, 3), np.float32), "w")])
    case = root / "node" / "test_conv"
    case.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              str(case / "model.onnx"))
    return root


def _tool(path, body):
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _sweep(corpus, emberc, ember_run, timeout=20):
    return subprocess.run([sys.executable, SWEEP, str(corpus), "--per-model", "3", "--emberc",
                           emberc, "--ember-run", ember_run, "--timeout", str(timeout)],
                          capture_output=True, text=True, timeout=120)


def test_refusals_with_a_message_are_fine(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    refuse = _tool(tmp_path / "refuse", 'echo "emberc: error: bad model" >&2; exit 1')
    proc = _sweep(corpus, refuse, "")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 mutants of 1 models: 0 findings" in proc.stdout


def test_crashes_hangs_and_silent_failures_are_findings(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    ok = _tool(tmp_path / "ok", 'mkdir -p "$4"; exit 0')
    cases = {
        "killed by signal 11": _tool(tmp_path / "segv", "kill -SEGV $$"),
        "hangs": _tool(tmp_path / "hang", "sleep 30"),
        "exit 3 with no message": _tool(tmp_path / "silent", "exit 3"),
        "escaped error": _tool(tmp_path / "escaped",
                               "echo \"terminate called after throwing 'std::bad_alloc'\" >&2;"
                               " exit 1"),
    }
    for what, tool in cases.items():
        proc = _sweep(corpus, tool, "", timeout=2)
        assert proc.returncode == 1 and what in proc.stdout, (what, proc.stdout, proc.stderr)
    # A compiled mutant goes through ember-run, whose crash is a finding too.
    proc = _sweep(corpus, ok, cases["killed by signal 11"])
    assert proc.returncode == 1 and "segv killed by signal 11" in proc.stdout, proc.stdout


def test_manifest_models_compile_with_their_rows_arguments(tmp_path):
    """With --manifest, CORPUS/NAME.onnx of each ok row is mutated and compiled with the row's
    emberc arguments; error rows are left out."""
    corpus = _corpus(tmp_path / "corpus")
    models = tmp_path / "models"
    models.mkdir()
    os.rename(str(corpus / "node" / "test_conv" / "model.onnx"), str(models / "conv.onnx"))
    (models / "manifest.tsv").write_text(
        "# name, emberc arguments, tolerance, expect, note\n"
        "conv\t--input-shape x=1,2,5,5\t-\tok\ta conv\n"
        "refused\t-\t-\terror:no\tnot mutated\n")
    log = tmp_path / "args.txt"
    emberc = _tool(tmp_path / "emberc", 'echo "$@" >> %s; mkdir -p "$4"; exit 0' % log)
    ok = _tool(tmp_path / "run", "exit 0")
    proc = subprocess.run([sys.executable, SWEEP, str(models), "--manifest",
                           str(models / "manifest.tsv"), "--per-model", "2", "--emberc", emberc,
                           "--ember-run", ok], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 mutants of 1 models: 0 findings" in proc.stdout, proc.stdout
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and all(line.endswith("--input-shape x=1,2,5,5") for line in lines)


def test_float_constants_get_edge_values_in_initializers_and_frozen_inputs(tmp_path):
    """--kind float-constant: one element of the weight, or of the float input made an
    initializer, is NaN, an infinity, 1e30 or one of the other edges; nothing else changes."""
    sys.path.insert(0, os.path.dirname(SWEEP))
    import random
    import mutate_models
    corpus = _corpus(tmp_path / "corpus")
    original = onnx.load(str(corpus / "node" / "test_conv" / "model.onnx"))
    seen = set()
    for k in range(40):
        model = onnx.ModelProto()
        model.CopyFrom(original)
        what = mutate_models.mutate(model, random.Random(k), ["float-constant"])
        assert what.startswith("float constant "), what
        inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        name = what.split()[2]
        seen.add(name)
        changed = inits[name]
        edge_values = np.array(mutate_models.EDGE_FLOATS, changed.dtype)
        edges = [v for v in changed.flat if np.isnan(v) or v in edge_values]
        assert len(edges) >= 1, (what, changed)
        if name == "x":  # the input became a constant of its shape, read by the same node
            assert changed.shape == (1, 2, 5, 5) and not model.graph.input
        assert model.graph.node[0] == original.graph.node[0]
    assert seen == {"w", "x"}


def test_sanitized_tools_get_asans_allocation_bound_and_its_warning_is_not_a_finding(tmp_path):
    """--sanitized: no address-space limit (ASan reserves terabytes of shadow), ASan refuses any
    one allocation past 4 GB instead, and its warning before the tool's own message is fine."""
    corpus = _corpus(tmp_path / "corpus")
    log = tmp_path / "env.txt"
    emberc = _tool(tmp_path / "emberc", 'echo "$ASAN_OPTIONS" >> %s;'
                   ' echo "==1==WARNING: AddressSanitizer failed to allocate 0x200000000 bytes" >&2;'
                   ' echo "emberc: error: out of memory" >&2; exit 1' % log)
    proc = subprocess.run([sys.executable, SWEEP, str(corpus), "--per-model", "2", "--emberc",
                           emberc, "--ember-run", "", "--sanitized"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "0 findings" in proc.stdout, proc.stdout + proc.stderr
    assert all("max_allocation_size_mb=4096" in line for line in log.read_text().splitlines())
