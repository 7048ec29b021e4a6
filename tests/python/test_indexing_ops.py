"""Indexing, scan, selection, scatter and Einsum ops against numpy on shapes the ONNX node tests
do not reach: middle axes, batch_dims, ties, duplicate updates, ellipses that broadcast and
three-operand contractions (compiler/ops/indexing.cc, compiler/ops/loop_kernels.cc,
compiler/transform/canonical_einsum.cc)."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from test_compile import _run_graph

RNG = np.random.default_rng(7)
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def _graph(name, node, inputs, outputs, inits=()):
    return helper.make_graph([node], name, inputs, outputs, list(inits))


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


@pytest.mark.parametrize("equation,shapes,const_last", [
    ("ij,jk->ik", [(5, 7), (7, 3)], True),  # a constant 2-D weight: the dense kernel
    ("bij,bjk->bik", [(2, 4, 6), (2, 6, 5)], False),
    ("bhqd,bhkd->bhqk", [(1, 2, 5, 8), (1, 2, 6, 8)], False),  # attention scores
    ("i,i->", [(9,), (9,)], False),
    ("ij->ji", [(3, 4)], False),
    ("ij->", [(3, 4)], False),
    ("...ij,...jk->...ik", [(1, 3, 4), (3, 4, 2)], False),  # the ellipsis broadcasts 1 to 3
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)], True),  # a bilinear layer
    ("abc,cd", [(2, 3, 4), (4, 5)], False),  # implicit output: abd
    ("b i d, b j d -> b i j", [(2, 3, 4), (2, 5, 4)], False),  # spaces
    # Upper-case labels of an implicit output sort before lower-case ones (ASCII): AB, then aB.
    # libonnx's inference corrupted its heap on these, and emberc aborted.
    ("Bj,jA", [(2, 3), (3, 6)], True),
    ("aj,jB", [(2, 3), (3, 6)], False),
    # Diagonals: a label twice (or three times) in one term.
    ("ii->i", [(4, 4)], False),
    ("ii", [(5, 5)], False),  # implicit: the trace
    ("...ii->...i", [(2, 3, 4, 4)], False),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)], False),
    ("iii->i", [(3, 3, 3)], False),
])
def test_einsum_matches_numpy(tmp_path, equation, shapes, const_last):
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    names = ["x%d" % i for i in range(len(shapes))]
    want = np.einsum(equation.replace(" ", ""), *[a.astype(np.float64) for a in arrays])
    inits = [numpy_helper.from_array(arrays[-1], names[-1])] if const_last else []
    feeds = {n: a for n, a in zip(names, arrays)}
    if const_last:
        del feeds[names[-1]]
    graph = _graph("einsum", helper.make_node("Einsum", names, ["y"], equation=equation),
                   [_vi(n, F, a.shape) for n, a in feeds.items()], [_vi("y", F, want.shape)], inits)
    (y,) = _run_graph(tmp_path, graph, opset=13, **feeds)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("op,scan,identity,opset", [("CumSum", np.cumsum, 0, 14),
                                                   ("CumProd", np.cumprod, 1, 26)])
def test_cumulative_ops_over_a_middle_axis(tmp_path, exclusive, reverse, op, scan, identity, opset):
    # Factors near 1 keep a product of 50 of them in range.
    x = RNG.uniform(0.8, 1.25, (3, 50, 17)).astype(np.float32) * RNG.choice([-1, 1], (3, 50, 17))
    node = helper.make_node(op, ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    graph = _graph("cumulative", node, [_vi("x", F, x.shape)], [_vi("y", F, x.shape)],
                   [numpy_helper.from_array(np.array(1, np.int64), "axis")])
    (y,) = _run_graph(tmp_path, graph, opset=opset, x=x.astype(np.float32))
    v = x[:, ::-1] if reverse else x
    want = scan(v.astype(np.float64), axis=1)
    if exclusive:
        want = np.concatenate([np.full_like(want[:, :1], identity), want[:, :-1]], axis=1)
    np.testing.assert_allclose(y, want[:, ::-1] if reverse else want, rtol=1e-4, atol=1e-5)


def test_int64_cumprod_from_the_end(tmp_path):
    x = RNG.integers(-3, 4, (4, 9)).astype(np.int64)
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], reverse=1)
    graph = _graph("cumprod", node, [_vi("x", I64, x.shape)], [_vi("y", I64, x.shape)],
                   [numpy_helper.from_array(np.array(-1, np.int64), "axis")])
    (y,) = _run_graph(tmp_path, graph, opset=26, x=x)
    np.testing.assert_array_equal(y, np.cumprod(x[:, ::-1], axis=1)[:, ::-1])


@pytest.mark.parametrize("axis,largest", [(1, 1), (0, 0)])
def test_topk_matches_a_stable_sort(tmp_path, axis, largest):
    # Few distinct values: many ties, which must keep the lower index first.
    x = RNG.integers(0, 20, (6, 300)).astype(np.float32)
    k = 7 if axis == 1 else 4
    shape = list(x.shape)
    shape[axis] = k
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    graph = _graph("topk", node, [_vi("x", F, x.shape)], [_vi("v", F, shape), _vi("i", I64, shape)],
                   [numpy_helper.from_array(np.array([k], np.int64), "k")])
    v, i = _run_graph(tmp_path, graph, opset=11, x=x)
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    want_i = np.take(order, np.arange(k), axis=axis)
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(v, np.take_along_axis(x, want_i, axis=axis))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements_reduces_duplicates_in_order(tmp_path, reduction):
    data = RNG.standard_normal((4, 6)).astype(np.float32)
    indices = np.array([[0, 3, 3], [1, 1, 3], [5, 0, -1], [2, 2, 2]], np.int64)
    updates = RNG.standard_normal(indices.shape).astype(np.float32)
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1, reduction=reduction)
    graph = _graph("scatter", node, [_vi("d", F, data.shape), _vi("i", I64, indices.shape),
                                     _vi("u", F, updates.shape)], [_vi("y", F, data.shape)])
    (y,) = _run_graph(tmp_path, graph, opset=18, d=data, i=indices, u=updates)
    want = data.astype(np.float64).copy()
    for r in range(indices.shape[0]):
        for c in range(indices.shape[1]):
            j = indices[r, c] % data.shape[1]
            old, u = want[r, j], updates[r, c]
            want[r, j] = {"none": u, "add": old + u, "mul": old * u, "max": max(old, u),
                          "min": min(old, u)}[reduction]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_gather_nd_with_batch_dims_and_gather_elements(tmp_path):
    data = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    at = np.array([[[0, 1], [2, -1]], [[1, 3], [0, 0]]], np.int64)  # [batch 2][2 tuples][2]
    node = helper.make_node("GatherND", ["d", "at"], ["y"], batch_dims=1)
    graph = _graph("gathernd", node, [_vi("d", F, data.shape), _vi("at", I64, at.shape)],
                   [_vi("y", F, (2, 2, 5))])
    (y,) = _run_graph(tmp_path, graph, opset=13, d=data, at=at)
    want = np.stack([np.stack([data[b][tuple(t)] for t in at[b]]) for b in range(2)])
    np.testing.assert_allclose(y, want)

    idx = RNG.integers(-3, 3, (2, 5, 4, 5)).astype(np.int64)
    node = helper.make_node("GatherElements", ["d", "i"], ["y"], axis=1)
    graph = _graph("gatherel", node, [_vi("d", F, data.shape), _vi("i", I64, idx.shape)],
                   [_vi("y", F, idx.shape)])
    (y,) = _run_graph(tmp_path, graph, opset=13, d=data, i=idx)
    np.testing.assert_allclose(y, np.take_along_axis(data, idx % 3, axis=1))


@pytest.mark.parametrize("upper,k", [(1, 0), (1, -2), (0, 1), (0, -1)])
def test_trilu_over_a_batch_of_matrices(tmp_path, upper, k):
    x = RNG.standard_normal((2, 5, 7)).astype(np.float32)
    node = helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)
    graph = _graph("trilu", node, [_vi("x", F, x.shape)], [_vi("y", F, x.shape)],
                   [numpy_helper.from_array(np.array(k, np.int64), "k")])
    (y,) = _run_graph(tmp_path, graph, opset=14, x=x)
    np.testing.assert_array_equal(y, np.triu(x, k) if upper else np.tril(x, k))


@pytest.mark.parametrize("op,data_shape,index_shape,attrs,bad", [
    ("Gather", (3, 4), (2,), {"axis": 1}, 4),
    ("GatherElements", (3, 4), (3, 2), {"axis": 1}, 9),
    ("GatherND", (3, 4), (2, 2), {}, -5),
])
def test_indices_computed_in_the_graph_are_checked_before_the_gather_runs(
        tmp_path, op, data_shape, index_shape, attrs, bad):
    # The indices are a sum of two inputs. Fused into the gather's kernel, the sum escaped the
    # check that reads the kernel's index argument, and the clamp in the gather's loops turned
    # a bad index into a wrong answer (GatherElements picked column 3 for 9).
    nodes = [helper.make_node("Add", ["a", "b"], ["at"]),
             helper.make_node(op, ["d", "at"], ["y"], **attrs)]
    out_shape = {"Gather": (3, 2), "GatherElements": index_shape, "GatherND": (2,)}[op]
    graph = helper.make_graph(nodes, "computed_" + op.lower(),
                              [_vi("d", F, data_shape), _vi("a", I64, index_shape),
                               _vi("b", I64, index_shape)], [_vi("y", F, out_shape)])
    data = RNG.standard_normal(data_shape).astype(np.float32)
    good = np.zeros(index_shape, np.int64)
    (y,) = _run_graph(tmp_path, graph, opset=13, d=data, a=good, b=good)
    want = {"Gather": data[:, [0, 0]], "GatherElements": data[:, [0, 0]],
            "GatherND": data[[0, 0], [0, 0]]}[op]
    np.testing.assert_allclose(y, want)
    wrong = good.copy()
    wrong.flat[-1] = bad
    (tmp_path / "bad").mkdir()
    with pytest.raises(ember.EmberError, match="indices 'at' hold an index outside .*: %d" % bad):
        _run_graph(tmp_path / "bad", graph, opset=13, d=data, a=wrong, b=good)
