"""Softmax computes each exponential once: over its last axis a row at a time
(compiler/schedule/softmax.cc: each exponential written to the output, summed as it goes, then
scaled by the sum's reciprocal), over another axis as compiler/ops/reduce.cc defines it (a stage
of exponentials the sum and the output both read). Checked against numpy over the last, a middle
and (opset 11's flattening) several axes, and in the loop IR."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from test_compile import _dump_ir, _model, _run_graph


def _softmax(x, axes):
    e = np.exp(x - x.max(axis=axes, keepdims=True))
    return e / e.sum(axis=axes, keepdims=True)


def _graph(name, shape, axis):
    node = helper.make_node("Softmax", ["x"], ["y"], axis=axis)
    return helper.make_graph([node], name,
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])


@pytest.mark.parametrize("shape,axis,opset,axes", [
    ((1, 40, 6625), -1, 13, (2,)),  # a recognizer's per-column class scores
    ((2, 7, 5), 1, 13, (1,)),
    ((3, 4, 5), 1, 11, (1, 2)),  # opset 11: the dims from axis on, flattened
    ((2, 2049, 1024), -1, 13, (2,)),  # past 16 MB of exponentials: recomputed, not kept
])
def test_softmax_matches_numpy(tmp_path, shape, axis, opset, axes):
    x = (np.random.default_rng(3).standard_normal(shape) * 4).astype(np.float32)
    (y,) = _run_graph(tmp_path, _graph("softmax_%d_%d" % (len(shape), axis), shape, axis),
                      opset=opset, x=x)
    np.testing.assert_allclose(y, _softmax(x.astype(np.float64), axes), rtol=1e-5, atol=1e-7)


def test_softmax_computes_each_exponential_once(tmp_path):
    loops = (_dump_ir(tmp_path, _model(_graph("softmax", (4, 100), -1))) /
             "kernels.loop.txt").read_text()
    # One exponential per element (in the row's vector loop or its tail), none kept in a
    # workspace, one division per row (the reciprocal).
    assert "workspace" not in loops, loops
    assert loops.count("exp(") == 2 and loops.count(" / ") == 1, loops
