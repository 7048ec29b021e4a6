"""A recurrence unrolled over its sequence compiles each kind of step kernel once, whatever the
sequence's length: the steps differ only in which time step they read, and that is an argument
of the kernel, not code. (A 256-step GRU compiled 1290 distinct kernels in 30 s; now 16 in
about a second.) Only the output's Concat depends on the length: it copies the steps' outputs
in one kernel up to FuseOps' 64-node cap, and in two or three past it."""
import os
import re
import subprocess
import sys

import pytest

from ember import compiler

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tests", "models"))
import gen_exported  # noqa: E402

DISTINCT = re.compile(r"\((\d+) functions, (\d+) distinct")


def _kernels(model, tmp_path):
    """(functions, distinct functions) of `model` compiled by emberc -v."""
    emberc = compiler.find_emberc()
    if emberc is None:
        pytest.skip("emberc not built")
    model.save(str(tmp_path))
    path = str(tmp_path / (model.name + ".onnx"))
    proc = subprocess.run([emberc, "compile", path, "-o", str(tmp_path / model.name), "-v"],
                          capture_output=True, text=True, check=True)
    m = DISTINCT.search(proc.stderr)
    assert m, proc.stderr
    return int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("op,attrs", [
    ("GRU", {"linear_before_reset": 1}),
    ("LSTM", {}),
    ("RNN", {}),
])
def test_distinct_kernels_do_not_grow_with_the_sequence(op, attrs, tmp_path):
    short = _kernels(gen_exported.recurrent("%s_seq8" % op.lower(), 600, op, "8 steps", seq=8,
                                            **attrs), tmp_path)
    long = _kernels(gen_exported.recurrent("%s_seq48" % op.lower(), 600, op, "48 steps", seq=48,
                                           **attrs), tmp_path)
    assert long[0] > short[0]  # the steps are unrolled: more kernels are called ...
    assert long[1] <= short[1] + 2, (short, long)  # ... but they are the same few kernels


def test_reverse_and_bidirectional_steps_share_kernels_too(tmp_path):
    short = _kernels(gen_exported.recurrent("gru_bi_seq8", 601, "GRU", "8 steps", seq=8,
                                            direction="bidirectional"), tmp_path)
    long = _kernels(gen_exported.recurrent("gru_bi_seq40", 601, "GRU", "40 steps", seq=40,
                                           direction="bidirectional"), tmp_path)
    assert long[1] <= short[1] + 2, (short, long)


def test_a_sequence_too_long_to_unroll_is_refused_naming_the_node(tmp_path):
    emberc = compiler.find_emberc()
    if emberc is None:
        pytest.skip("emberc not built")
    model = gen_exported.recurrent("gru_seq5000", 602, "GRU", "5000 steps", seq=5000, batch=1)
    model.save(str(tmp_path))
    proc = subprocess.run([emberc, "compile", str(tmp_path / "gru_seq5000.onnx"), "-o",
                           str(tmp_path / "art")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert re.search(r"\(GRU\): unrolling its 5000 time steps takes more than 65536 nodes "
                     r"\(\d+ per step\)", proc.stderr), proc.stderr


def test_a_loop_of_two_billion_trips_is_refused_naming_it(tmp_path):
    """A Loop whose body is one Add: the refusal comes after 65536 / 2 unrolled iterations (each
    asking for the same fresh names, which once took quadratic time: a hang)."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    emberc = compiler.find_emberc()
    if emberc is None:
        pytest.skip("emberc not built")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "cond", "x"], ["y"], name="long_loop", body=body)],
        "long_loop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(np.array(1 << 31, np.int64), "trips"),
         numpy_helper.from_array(np.array(True), "cond")])
    path = tmp_path / "long_loop.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
                     .SerializeToString())
    proc = subprocess.run([emberc, "compile", str(path), "-o", str(tmp_path / "art")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "node 'long_loop' (Loop): unrolling it takes more than 65536 nodes" in proc.stderr, \
        proc.stderr
