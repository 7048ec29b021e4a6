"""float16 models keep float16 in memory and compute in float32, as ONNX Runtime's CPU provider
does, rounding each node's result to float16. Computing in float16 arithmetic (as emberc did
until 2026-11-25) sums a conv's products with float16 rounding at every step: 0.14 off here."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from test_compile import _run_graph


def _half(a):
    return a.astype(np.float16).astype(np.float32)


def _conv3x3(x, w):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((x.shape[0], w.shape[0]) + x.shape[2:], np.float32)
    for i in range(3):
        for j in range(3):
            out += np.einsum("oc,nchw->nohw", w[:, :, i, j], xp[:, :, i:i + x.shape[2],
                                                               j:j + x.shape[3]])
    return out


def test_float16_nodes_compute_in_float32_and_round_their_results(tmp_path):
    rs = np.random.RandomState(0)
    x = (rs.standard_normal((1, 64, 16, 16)) * 2).astype(np.float16)
    w = (rs.standard_normal((32, 64, 3, 3)) * 0.1).astype(np.float16)
    half = TensorProto.FLOAT16
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["conv"], pads=[1, 1, 1, 1]),
         helper.make_node("Sigmoid", ["x"], ["gate"])], "fp16",
        [helper.make_tensor_value_info("x", half, [1, 64, 16, 16])],
        [helper.make_tensor_value_info("conv", half, [1, 32, 16, 16]),
         helper.make_tensor_value_info("gate", half, [1, 64, 16, 16])],
        [numpy_helper.from_array(w, "w")])
    conv, gate = _run_graph(tmp_path, graph, x=x)
    assert conv.dtype == np.float16 and gate.dtype == np.float16
    xf = x.astype(np.float32)
    # One rounding of a float32 sum; the order of its terms may move it by one float16 step.
    expected = _half(_conv3x3(xf, w.astype(np.float32)))
    np.testing.assert_allclose(conv.astype(np.float32), expected, rtol=2.0 ** -10, atol=2.0 ** -12)
    np.testing.assert_array_equal(gate.astype(np.float32), _half(1 / (1 + np.exp(-xf))))
