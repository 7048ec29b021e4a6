"""Ops of opsets 23 and 24 (RMSNormalization, Swish) against numpy: the statistics over the
normalized axes, epsilon, a scale broadcast from fewer axes, float16 input widened for its
statistics (stash_type 1), and Swish's alpha."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from test_compile import _run_graph

RNG = np.random.default_rng(23)


def _rms_reference(x, scale, axis, epsilon):
    axes = tuple(range(axis % x.ndim, x.ndim))
    wide = x.astype(np.float32)
    rms = np.sqrt(np.mean(wide * wide, axis=axes, keepdims=True) + epsilon)
    return (wide / rms).astype(x.dtype) * scale


@pytest.mark.parametrize("shape,axis,scale_shape", [([2, 5, 16], -1, [16]),
                                                     ([2, 3, 4, 5], 1, [1, 4, 5]),
                                                     ([3, 8], 0, [1])])
def test_rms_normalization_over_the_trailing_axes(tmp_path, shape, axis, scale_shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    scale = RNG.standard_normal(scale_shape).astype(np.float32)
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=axis, epsilon=1e-3)
    graph = helper.make_graph([node], "rms", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT, scale_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    (y,) = _run_graph(tmp_path, graph, opset=23, x=x, scale=scale)
    np.testing.assert_allclose(y, _rms_reference(x, scale, axis, 1e-3), rtol=1e-5, atol=1e-6)


def test_rms_normalization_of_float16_takes_its_statistics_in_float32(tmp_path):
    # Values whose squares overflow float16 (300^2 > 65504): statistics taken in float16 give inf.
    x = (RNG.standard_normal((2, 8)) * 300).astype(np.float16)
    scale = RNG.standard_normal(8).astype(np.float16)
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"])
    graph = helper.make_graph([node], "rms16", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 8]),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT16, [8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 8])])
    (y,) = _run_graph(tmp_path, graph, opset=23, x=x, scale=scale)
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y.astype(np.float32),
                               _rms_reference(x, scale, -1, 1e-5).astype(np.float32),
                               rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_swish(tmp_path, alpha):
    x = (RNG.standard_normal((3, 7)) * 4).astype(np.float32)
    node = helper.make_node("Swish", ["x"], ["y"], alpha=alpha)
    graph = helper.make_graph([node], "swish", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7])])
    (y,) = _run_graph(tmp_path, graph, opset=24, x=x)
    np.testing.assert_allclose(y, x / (1 + np.exp(-alpha * x)), rtol=1e-5, atol=1e-6)
