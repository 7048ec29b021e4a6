"""Opset 18's BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot against numpy on every integer type
(signed values with the top bit set, broadcasting, a tail past the vectors), folded on constant
inputs, and refused on floats naming the node."""
import numpy as np
import pytest
from onnx import TensorProto, helper, mapping, numpy_helper

import ember
from test_compile import _run_graph

RNG = np.random.default_rng(18)
BINARY = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}
TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)],
                                         shape)


def _every_bit(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_bitwise_binary_ops_broadcast(tmp_path, op, dtype):
    a, b = _every_bit(dtype, (3, 37)), _every_bit(dtype, (37,))
    graph = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"])], op.lower(),
                              [_vi("a", dtype, a.shape), _vi("b", dtype, b.shape)],
                              [_vi("y", dtype, a.shape)])
    (y,) = _run_graph(tmp_path, graph, opset=18, a=a, b=b)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y, BINARY[op](a, b))


@pytest.mark.parametrize("dtype", TYPES)
def test_bitwise_not_flips_every_bit(tmp_path, dtype):
    x = _every_bit(dtype, (2, 21))
    graph = helper.make_graph([helper.make_node("BitwiseNot", ["x"], ["y"])], "bitwise_not",
                              [_vi("x", dtype, x.shape)], [_vi("y", dtype, x.shape)])
    (y,) = _run_graph(tmp_path, graph, opset=18, x=x)
    np.testing.assert_array_equal(y, np.invert(x))


def test_bitwise_ops_on_constants_fold(tmp_path):
    # Masks computed from constants, as exporters write them, then applied to the input.
    k1 = np.array([0x0F0F, -1, 0x7000], np.int32)
    k2 = np.array([0x00FF, 0x1234, 0x0F00], np.int32)
    nodes = [helper.make_node("BitwiseAnd", ["k1", "k2"], ["m1"]),
             helper.make_node("BitwiseXor", ["m1", "k2"], ["m2"]),
             helper.make_node("BitwiseOr", ["x", "m2"], ["y"])]
    x = _every_bit(np.int32, (4, 3))
    graph = helper.make_graph(nodes, "folded", [_vi("x", np.int32, x.shape)],
                              [_vi("y", np.int32, x.shape)],
                              [numpy_helper.from_array(k, name) for k, name in ((k1, "k1"),
                                                                                (k2, "k2"))])
    (y,) = _run_graph(tmp_path, graph, opset=18, x=x)
    np.testing.assert_array_equal(y, x | ((k1 & k2) ^ k2))


def test_bitwise_ops_refuse_floats(tmp_path):
    graph = helper.make_graph([helper.make_node("BitwiseAnd", ["a", "b"], ["y"], name="mask")],
                              "floats", [_vi("a", np.float32, [2]), _vi("b", np.float32, [2])],
                              [_vi("y", np.float32, [2])])
    with pytest.raises(ember.EmberError, match="node 'mask' \\(BitwiseAnd\\): only integer inputs"):
        _run_graph(tmp_path, graph, opset=18, a=np.zeros(2, np.float32), b=np.zeros(2, np.float32))
