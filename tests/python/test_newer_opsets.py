"""Ops of opsets 23, 24 and 26 (RMSNormalization, Swish, TensorScatter, BitCast) against numpy:
the statistics over the normalized axes, epsilon, a scale broadcast from fewer axes, float16 input
widened for its statistics (stash_type 1), Swish's alpha, TensorScatter's rows written per batch
(linear, circular, on any axis but the batch's; a write index out of range refused at run time),
Attention over an external cache (nonpad_kv_seqlen, with is_causal ending at each batch's last key),
and BitCast's bits kept between every pair of types as wide (numpy's view), NaN and infinity
patterns included."""
import numpy as np
import pytest
from onnx import TensorProto, helper, mapping

import ember

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


def _tensor_scatter_reference(cache, update, write, axis, circular):
    """ONNX's definition: row s of each prefix (the axes before `axis`, batch first) goes to
    write[batch] + s along the axis, wrapped in circular mode."""
    out = cache.copy()
    length = cache.shape[axis]
    for prefix in np.ndindex(*cache.shape[:axis]):
        for s in range(update.shape[axis]):
            pos = write[prefix[0]] + s
            out[prefix + ((pos % length if circular else pos),)] = update[prefix + (s,)]
    return out


def _tensor_scatter_graph(cache_shape, update_shape, attrs, with_write=True):
    inputs = [helper.make_tensor_value_info("cache", TensorProto.FLOAT, cache_shape),
              helper.make_tensor_value_info("update", TensorProto.FLOAT, update_shape)]
    if with_write:
        inputs.append(helper.make_tensor_value_info("write", TensorProto.INT64, cache_shape[:1]))
    node = helper.make_node("TensorScatter", [i.name for i in inputs], ["y"], **attrs)
    return helper.make_graph([node], "tensor_scatter", inputs, [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, cache_shape)])


@pytest.mark.parametrize("cache_shape,rows,axis,mode,write", [
    ([2, 3, 8, 4], 3, None, "linear", [5, 0]),  # axis -2 by default: (batch, heads, seq, dim)
    ([2, 3, 8, 4], 3, None, "circular", [6, 13]),  # wraps; an index past the length too
    ([3, 16, 5], 4, 1, "circular", [0, 15, 2]),
    ([2, 2, 7], 7, 2, "linear", [0, 0]),  # the whole cache replaced
    ([2, 5, 6], 0, 1, "linear", [5, 0]),  # nothing written
])
def test_tensor_scatter_writes_each_batch_from_its_index(tmp_path, cache_shape, rows, axis, mode,
                                                         write):
    ax = -2 if axis is None else axis
    update_shape = list(cache_shape)
    update_shape[ax] = rows
    cache = RNG.standard_normal(cache_shape).astype(np.float32)
    update = RNG.standard_normal(update_shape).astype(np.float32)
    write = np.array(write, np.int64)
    attrs = {"mode": mode} if axis is None else {"mode": mode, "axis": axis}
    (y,) = _run_graph(tmp_path, _tensor_scatter_graph(cache_shape, update_shape, attrs), opset=24,
                      cache=cache, update=update, write=write)
    want = _tensor_scatter_reference(cache, update, write, ax % len(cache_shape),
                                     mode == "circular")
    np.testing.assert_array_equal(y, want)


def test_tensor_scatter_without_write_indices_writes_from_the_start(tmp_path):
    cache = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    update = RNG.standard_normal((2, 2, 3)).astype(np.float32)
    graph = _tensor_scatter_graph([2, 6, 3], [2, 2, 3], {"axis": 1}, with_write=False)
    (y,) = _run_graph(tmp_path, graph, opset=24, cache=cache, update=update)
    np.testing.assert_array_equal(y, _tensor_scatter_reference(cache, update, [0, 0], 1, False))


@pytest.mark.parametrize("mode,write,message", [
    ("linear", [6, 0], "write_indices 'write' hold a write index outside 0..5 .*: 6"),
    ("circular", [0, -1], "write_indices 'write' hold a negative write index: -1"),
])
def test_tensor_scatter_refuses_a_write_index_out_of_range(tmp_path, mode, write, message):
    graph = _tensor_scatter_graph([2, 8, 3], [2, 3, 3], {"axis": 1, "mode": mode})
    cache = np.zeros((2, 8, 3), np.float32)
    update = np.ones((2, 3, 3), np.float32)
    with pytest.raises(ember.EmberError, match=message):
        _run_graph(tmp_path, graph, opset=24, cache=cache, update=update,
                   write=np.array(write, np.int64))


def _attention_over_cache_reference(q, k, v, lens, causal):
    """ONNX's Attention (opset 24 with its errata) over a cache whose first lens[b] keys hold
    batch b's tokens, the queries being the last of them: query i sees key j < lens[b], and with
    is_causal j <= i + lens[b] - q_seq; a row that sees no key is zeros."""
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    q_seq, total = scores.shape[2:]
    i, j = np.arange(q_seq)[:, None], np.arange(total)[None, :]
    out = np.zeros(q.shape[:3] + (v.shape[-1],), np.float64)
    for b, n in enumerate(lens):
        seen = (j < n) & ((j <= i + n - q_seq) if causal else True)
        row = np.where(seen, scores[b], -np.inf)
        top = np.where(seen.any(-1, keepdims=True), row.max(-1, keepdims=True), 0)
        p = np.where(seen, np.exp(row - top), 0)
        total_p = p.sum(-1, keepdims=True)
        probs = np.divide(p, total_p, out=np.zeros_like(p), where=total_p > 0)
        out[b] = np.einsum("hqk,hkd->hqd", probs, v[b])
    return out


@pytest.mark.parametrize("causal", [0, 1])
def test_attention_over_an_external_cache(tmp_path, causal):
    q = RNG.standard_normal((3, 2, 4, 8)).astype(np.float32)
    k, v = (RNG.standard_normal((3, 2, 10, 8)).astype(np.float32) for _ in range(2))
    lens = np.array([10, 6, 2], np.int64)  # the last: fewer keys than queries (rows of zeros)
    node = helper.make_node("Attention", ["q", "k", "v", "", "", "", "lens"], ["y"],
                            is_causal=causal)
    graph = helper.make_graph([node], "attention_cache", [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
        for n, a in (("q", q), ("k", k), ("v", v))] + [
        helper.make_tensor_value_info("lens", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, q.shape)])
    (y,) = _run_graph(tmp_path, graph, opset=24, q=q, k=k, v=v, lens=lens)
    np.testing.assert_allclose(y, _attention_over_cache_reference(q, k, v, lens, causal),
                               rtol=1e-4, atol=1e-5)
