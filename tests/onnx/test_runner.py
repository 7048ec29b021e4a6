"""Tests of the conformance runner itself, driven against fake_ember.py.

Run:  /usr/bin/python3 -m pytest tests/onnx/test_runner.py
"""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "run_conformance.py")
FAKE = "%s %s" % (sys.executable, os.path.join(HERE, "fake_ember.py"))
F32 = TensorProto.FLOAT


def write_case(root, name, nodes, inputs, outputs, feeds, expected, opset=13):
    """A case folder: model.onnx plus test_data_set_0 with the given arrays."""
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    folder = os.path.join(root, "node", name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for prefix, arrays, infos in (("input", feeds, inputs), ("output", expected, outputs)):
        for i, (array, info) in enumerate(zip(arrays, infos)):
            with open(os.path.join(data, "%s_%d.pb" % (prefix, i)), "wb") as f:
                f.write(numpy_helper.from_array(array, info.name).SerializeToString())


def unary(root, name, op, fn, shape=(2, 3)):
    x = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    write_case(root, name, [helper.make_node(op, ["x"], ["y"])],
               [helper.make_tensor_value_info("x", F32, shape)],
               [helper.make_tensor_value_info("y", F32, shape)], [x], [fn(x)])


def binary(root, name, op, fn):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((3,), 0.5, np.float32)
    write_case(root, name, [helper.make_node(op, ["a", "b"], ["y"])],
               [helper.make_tensor_value_info("a", F32, [2, 3]),
                helper.make_tensor_value_info("b", F32, [3])],
               [helper.make_tensor_value_info("y", F32, [2, 3])], [a, b], [fn(a, b)])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("corpus"))
    unary(root, "test_relu_ok", "Relu", lambda x: np.maximum(x, 0))
    unary(root, "test_neg_ok", "Neg", lambda x: -x)
    unary(root, "test_neg_scalar", "Neg", lambda x: -x, shape=())
    binary(root, "test_add_ok", "Add", lambda a, b: a + b)
    binary(root, "test_sub_wrong", "Sub", lambda a, b: a - b)
    binary(root, "test_mul_dtype", "Mul", lambda a, b: a * b)
    unary(root, "test_abs_crash", "Abs", np.abs)
    unary(root, "test_exp_silent", "Exp", np.exp)
    unary(root, "test_floor_nooutput", "Floor", np.floor, shape=(3,))
    unary(root, "test_tanh_unsupported", "Tanh", np.tanh)  # extended? no: Tanh is core
    unary(root, "test_sin_unsupported", "Sin", np.sin)     # Sin is not core -> extended
    x = np.arange(6, dtype=np.float32)
    write_case(root, "test_reshape_shape_input",
               [helper.make_node("Reshape", ["x", "shape"], ["y"])],
               [helper.make_tensor_value_info("x", F32, [6]),
                helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
               [helper.make_tensor_value_info("y", F32, [2, 3])],
               [x, np.array([2, 3], np.int64)], [x.reshape(2, 3)])
    # A sequence-typed graph input/output cannot travel as .npy: SKIP, tools never called.
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F32, [2]))
    graph = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "seq",
                              [helper.make_value_info("s", seq)],
                              [helper.make_value_info("t", seq)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    os.makedirs(os.path.join(root, "node", "test_identity_sequence", "test_data_set_0"))
    onnx.save(model, os.path.join(root, "node", "test_identity_sequence", "model.onnx"))
    return root


def run(corpus, *args, env_extra=None):
    env = dict(os.environ, EMBERC=FAKE, EMBER_RUN=FAKE)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, RUNNER, "--corpus", corpus, "--no-generate"] +
                          list(args), capture_output=True, text=True, env=env, timeout=120)
    return proc


def statuses(stdout):
    found = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("PASS", "FAIL", "UNSUPPORTED", "CRASH", "TIMEOUT",
                                            "SKIP"):
            found[parts[1]] = parts[0]
    return found


def test_every_status_is_reported(corpus, tmp_path):
    report = str(tmp_path / "r.json")
    proc = run(corpus, "-j", "2", "--json", report, "--timeout", "30")
    got = statuses(proc.stdout)
    assert got == {
        "test_relu_ok": "PASS", "test_neg_ok": "PASS", "test_neg_scalar": "PASS",
        "test_add_ok": "PASS",
        "test_sub_wrong": "FAIL", "test_mul_dtype": "FAIL", "test_exp_silent": "FAIL",
        "test_floor_nooutput": "FAIL",
        "test_abs_crash": "CRASH",
        "test_tanh_unsupported": "UNSUPPORTED", "test_sin_unsupported": "UNSUPPORTED",
        "test_reshape_shape_input": "UNSUPPORTED",
        "test_identity_sequence": "SKIP",
    }, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().splitlines()[-1] == "4 passed, 9 failed"
    assert proc.returncode == 1
    data = json.load(open(report))
    assert data["passed"] == 4 and data["failed"] == 9
    reasons = {c["case"]: c["reason"] for c in data["cases"]}
    assert "elements differ" in reasons["test_sub_wrong"]
    assert "dtype float64, expected float32" in reasons["test_mul_dtype"]
    assert "SIGSEGV" in reasons["test_abs_crash"]
    assert "no message on stderr" in reasons["test_exp_silent"]
    assert "output_0.npy not written" in reasons["test_floor_nooutput"]
    assert "Tanh" in reasons["test_tanh_unsupported"]
    tiers = {c["case"]: c["tier"] for c in data["cases"]}
    assert tiers["test_relu_ok"] == "core" and tiers["test_sin_unsupported"] == "extended"
    assert tiers["test_identity_sequence"] == "other"


def test_hang_is_a_timeout(tmp_path):
    """Its own corpus, so only this case waits for the (short) deadline."""
    root = str(tmp_path)
    unary(root, "test_sqrt_hang", "Sqrt", lambda x: np.sqrt(np.abs(x)))
    proc = run(root, "--timeout", "3")
    assert statuses(proc.stdout) == {"test_sqrt_hang": "TIMEOUT"}, proc.stdout
    assert "still running" in proc.stdout
    assert proc.returncode == 1


def test_all_pass_exits_zero(corpus):
    proc = run(corpus, "-k", "_ok")
    assert statuses(proc.stdout) == {"test_relu_ok": "PASS", "test_neg_ok": "PASS",
                                     "test_add_ok": "PASS"}
    assert proc.stdout.rstrip().splitlines()[-1] == "3 passed, 0 failed"
    assert proc.returncode == 0


def test_nothing_selected_fails(corpus):
    proc = run(corpus, "-k", "no_such_case")
    assert proc.stdout.rstrip().splitlines()[-1] == "0 passed, 0 failed"
    assert proc.returncode == 1


def test_filters_combine(corpus):
    proc = run(corpus, "--list", "--op", "NEG", "--op", "relu", "-k", "ok")
    names = [line.split("\t")[0] for line in proc.stdout.splitlines()]
    assert names == ["test_neg_ok", "test_relu_ok"]
    proc = run(corpus, "--list", "--tier", "extended")
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == [
        "test_floor_nooutput", "test_sin_unsupported"]
    proc = run(corpus, "--list", "--tier", "bogus")
    assert proc.returncode != 0 and "unknown tier" in proc.stderr


def test_freeze_int_inputs_makes_shape_constant(corpus):
    proc = run(corpus, "-k", "reshape")
    assert statuses(proc.stdout) == {"test_reshape_shape_input": "UNSUPPORTED"}
    assert "constant shape" in proc.stdout
    proc = run(corpus, "-k", "reshape", "--freeze-int-inputs")
    assert statuses(proc.stdout) == {"test_reshape_shape_input": "PASS"}, proc.stdout
    assert proc.returncode == 0


def test_expect_tolerates_only_unsupported(corpus, tmp_path):
    expect = tmp_path / "expect.txt"
    expect.write_text("# cases that must pass\ntest_relu_ok\ntest_add_ok  # comment\n")
    # Listed cases pass, the rest is UNSUPPORTED or SKIP: success, and a new pass is reported.
    proc = run(corpus, "--expect", str(expect), "-k", "_ok", "-k", "unsupported", "-k",
               "sequence")
    assert proc.returncode == 0, proc.stdout
    assert "+ test_neg_ok" in proc.stdout and "expectations met" in proc.stdout
    # A wrong answer outside the list still fails the run.
    proc = run(corpus, "--expect", str(expect), "-k", "_ok", "-k", "sub_wrong")
    assert proc.returncode == 1
    assert "test_sub_wrong is FAIL" in proc.stdout
    # So do crashes.
    proc = run(corpus, "--expect", str(expect), "-k", "_ok", "-k", "crash")
    assert proc.returncode == 1 and "test_abs_crash is CRASH" in proc.stdout
    # A listed case that is only UNSUPPORTED is a regression.
    expect.write_text("test_relu_ok\ntest_tanh_unsupported\n")
    proc = run(corpus, "--expect", str(expect), "-k", "relu", "-k", "tanh")
    assert proc.returncode == 1
    assert "test_tanh_unsupported is expected to pass but is UNSUPPORTED" in proc.stdout
    # A listed case the corpus does not have means the list is stale.
    expect.write_text("test_relu_ok\ntest_gone\n")
    proc = run(corpus, "--expect", str(expect), "-k", "relu")
    assert proc.returncode == 1 and "no such case" in proc.stdout


def test_write_expect_grows_the_list(corpus, tmp_path):
    expect = tmp_path / "expect.txt"
    expect.write_text("# header kept\ntest_relu_ok\n")
    proc = run(corpus, "-k", "_ok", "--write-expect", str(expect))
    assert proc.returncode == 0
    assert expect.read_text() == "# header kept\ntest_add_ok\ntest_neg_ok\ntest_relu_ok\n"


def test_missing_tool_is_a_clear_error(corpus):
    proc = run(corpus, "-k", "relu", env_extra={"EMBERC": "/nonexistent/emberc"})
    assert proc.returncode != 0
    assert "emberc not found" in proc.stderr


def test_generated_corpus_cases(tmp_path_factory):
    """The runner on real generated cases (Relu, Add incl. broadcast and uint8) with the fake."""
    sys.path.insert(0, HERE)
    import gen_corpus
    corpus = os.environ.get("EMBER_ONNX_CORPUS") or str(tmp_path_factory.mktemp("gen") / "c")
    assert gen_corpus.main([corpus]) == 0
    proc = run(corpus, "-k", "test_relu", "-k", "test_add", "-k", "test_neg", "-j", "2")
    got = statuses(proc.stdout)
    assert got == {"test_relu": "PASS", "test_add": "PASS", "test_add_bcast": "PASS",
                   "test_add_uint8": "PASS", "test_neg": "PASS", "test_neg_example": "PASS"}, \
        proc.stdout
    assert proc.returncode == 0
