"""Float max and min reductions combine with IEEE 754-2019 maximum / minimum (te::ReduceMaximum):
a NaN anywhere in the reduced elements makes the result NaN, as numpy's max and min do (the
compare and select of an elementwise Max dropped a NaN met after the first element), and LLVM
vectorises the reduction, which it did not for the compare and select (Softmax's row maximum ran
one element per compare)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from test_compile import _dump_ir, _model, _run_graph


def _graph(op, shape):
    node = helper.make_node(op, ["x"], ["y"], axes=[-1], keepdims=0)
    return helper.make_graph([node], op.lower(),
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape[:-1])])


@pytest.mark.parametrize("op,reference", [("ReduceMax", np.max), ("ReduceMin", np.min)])
def test_a_nan_anywhere_in_a_row_makes_its_result_nan(tmp_path, op, reference):
    x = np.random.default_rng(5).standard_normal((6, 1000)).astype(np.float32)
    x[1, 0] = np.nan  # first element
    x[2, 517] = np.nan  # inside a vector, past the first
    x[3, 999] = np.nan  # last element
    x[4, :] = -np.inf if op == "ReduceMax" else np.inf
    (y,) = _run_graph(tmp_path, _graph(op, x.shape), opset=13, x=x)
    np.testing.assert_array_equal(y, reference(x, axis=-1))


def test_the_reduction_is_vectorised(tmp_path):
    optimised = (_dump_ir(tmp_path, _model(_graph("ReduceMax", (4, 1000)))) /
                 "kernels.opt.ll").read_text()
    assert "@llvm.maximum.v" in optimised, "no vector maximum in the reduction"
