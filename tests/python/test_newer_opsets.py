"""Ops of opsets 23, 24 and 26 (RMSNormalization, Swish, BitCast) against numpy: the statistics
over the normalized axes, epsilon, a scale broadcast from fewer axes, float16 input widened for its
statistics (stash_type 1), Swish's alpha, and BitCast's bits kept between every pair of types as
wide (numpy's view), NaN and infinity patterns included."""
import numpy as np
import pytest
from onnx import TensorProto, helper, mapping

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


# Each pair once each way; 3 x 37 elements: whole vectors and a tail.
BITCAST_PAIRS = [(np.float32, np.int32), (np.float32, np.uint32), (np.float64, np.int64),
                 (np.float16, np.int16), (np.float16, np.uint16), (np.int8, np.uint8),
                 (np.uint64, np.int64), (np.int32, np.uint32)]


def _random_bits(dtype, shape):
    """Every bit pattern of dtype equally likely (signaling NaNs among them); floats get NaN,
    infinities and -0 besides."""
    raw = RNG.integers(0, 256, (int(np.prod(shape)) * np.dtype(dtype).itemsize,), dtype=np.uint8)
    x = raw.view(dtype).reshape(shape).copy()
    if np.dtype(dtype).kind == "f":
        x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return x


@pytest.mark.parametrize("a,b", BITCAST_PAIRS + [(b, a) for a, b in BITCAST_PAIRS])
def test_bitcast_keeps_every_bit(tmp_path, a, b):
    x = _random_bits(a, (3, 37))
    to = mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(b)]
    node = helper.make_node("BitCast", ["x"], ["y"], to=to)
    graph = helper.make_graph([node], "bitcast", [
        helper.make_tensor_value_info("x", mapping.NP_TYPE_TO_TENSOR_TYPE[x.dtype], x.shape)],
        [helper.make_tensor_value_info("y", to, x.shape)])
    (y,) = _run_graph(tmp_path, graph, opset=26, x=x)
    assert y.dtype == np.dtype(b)
    np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))


def test_bitcast_between_bool_and_bytes(tmp_path):
    x = np.array([[0, 1, 0, 1, 1]], np.uint8)
    node = helper.make_node("BitCast", ["x"], ["b"], to=TensorProto.BOOL)
    back = helper.make_node("BitCast", ["b"], ["y"], to=TensorProto.INT8)
    graph = helper.make_graph([node, back], "bitcast_bool", [
        helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("b", TensorProto.BOOL, x.shape),
         helper.make_tensor_value_info("y", TensorProto.INT8, x.shape)])
    b, y = _run_graph(tmp_path, graph, opset=26, x=x)
    np.testing.assert_array_equal(b, x.astype(bool))
    np.testing.assert_array_equal(y, x.astype(np.int8))
