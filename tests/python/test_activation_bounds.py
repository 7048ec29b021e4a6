"""Activations bounded by constants (HardSigmoid, HardSwish, Celu) take the bound as the second
operand of their Max and Min: a NaN input then stays NaN, as in ONNX's reference and ONNX Runtime
(with the constant first, the select returned the constant: HardSigmoid(NaN) was 0), and on
AArch64 each bound is one fmax / fmin where a zero first took a compare and a mask (fcmge + and),
which kept MobileNetV3's depthwise hard-swish loops below 60% multiply-adds."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from test_compile import _dump_ir, _model, _run_graph

X = np.array([np.nan, -0.0, 0.0, 1.0, -1.0, -3.0, 3.0, 2.5, -2.5, np.inf, -np.inf, 0.4],
             np.float32)


def _hard_sigmoid(x, alpha=0.2, beta=0.5):
    return np.clip(alpha * x + beta, 0, 1)


def _celu(x, alpha=1.0):
    return np.maximum(x, 0) + np.minimum(alpha * (np.exp(x / alpha) - 1), 0)


REFERENCES = {
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": lambda x: x * _hard_sigmoid(x, 1 / 6, 0.5),
    "Celu": _celu,
}


def _graph(op, n):
    return helper.make_graph([helper.make_node(op, ["x"], ["y"])], op.lower(),
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])])


@pytest.mark.parametrize("op", sorted(REFERENCES))
def test_nan_stays_nan_and_the_bounds_hold(tmp_path, op):
    with np.errstate(over="ignore", invalid="ignore"):
        expected = REFERENCES[op](X.astype(np.float64)).astype(np.float32)
    (y,) = _run_graph(tmp_path, _graph(op, X.size), opset=14, x=X)
    assert np.isnan(y[0]), "%s(NaN) gave %r" % (op, y[0])
    np.testing.assert_allclose(y[1:], expected[1:], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op", ["HardSigmoid", "HardSwish"])
def test_aarch64_bounds_are_single_max_and_min(tmp_path, op):
    ir_dir = _dump_ir(tmp_path, _model(_graph(op, 4096), opset=14),
                      target="llvm -mtriple=aarch64-linux-gnu")
    ir = (ir_dir / "kernels.opt.ll").read_text()
    assert "@llvm.maximum." in ir and "@llvm.minimum." in ir, "bounds not max / min"
    assert "fcmp" not in ir, "a bound still compares and selects"
