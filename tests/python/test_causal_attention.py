"""Attention masked past a diagonal (a constant causal mask added to the scores) against numpy:
Ember stores -inf for the score tiles wholly past their rows' last keys, runs each softmax row up
to its last key and sums P V over the keys each row keeps (compiler/transform/causal_masks.cc).
Rows and keys off the kernels' tile sizes, a cache of past keys, a scale before the mask, float32's
lowest as the mask value, one head (2-D products) and several, the mask added or chosen by a Where
(PyTorch's masked_fill); masks that must not be taken for causal ones still give the right answer,
and so does a boolean mask given at run time."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_compile import _dump_ir, _model, _run_graph

RNG = np.random.default_rng(23)


def _attention_graph(lead, rows, keys, depth, mask, scale=None, where=None):
    """Q [lead..., rows, depth] times K^T [lead..., depth, keys] (times `scale`), plus `mask`
    [rows, keys], softmax over the keys, times V [lead..., keys, depth]. With `where` the scores
    are not added to but replaced by the mask's lowest value where it is not 0: "fill" as
    Where(hidden, value, scores), "keep" as Where(kept, scores, value)."""
    shape = lambda *tail: list(lead) + list(tail)  # noqa: E731
    nodes = [helper.make_node("MatMul", ["q", "kt"], ["scores"])]
    inits = [numpy_helper.from_array(mask.astype(np.float32), "mask")]
    scores = "scores"
    if scale is not None:
        inits.append(numpy_helper.from_array(np.array(scale, np.float32), "scale"))
        nodes.append(helper.make_node("Mul", ["scores", "scale"], ["scaled"]))
        scores = "scaled"
    if where is None:
        nodes.append(helper.make_node("Add", [scores, "mask"], ["masked"]))
    else:
        hidden = (mask != 0) if where == "fill" else (mask == 0)
        inits = [numpy_helper.from_array(hidden[None], "cond"),
                 numpy_helper.from_array(np.array(mask.min(), np.float32), "value")] + inits[1:]
        branches = ["value", scores] if where == "fill" else [scores, "value"]
        nodes.append(helper.make_node("Where", ["cond"] + branches, ["masked"]))
    nodes += [helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
              helper.make_node("MatMul", ["probs", "v"], ["y"])]
    inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, shape(rows, depth)),
              helper.make_tensor_value_info("kt", TensorProto.FLOAT, shape(depth, keys)),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, shape(keys, depth))]
    out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape(rows, depth))]
    return helper.make_graph(nodes, "causal_attention", inputs, out, inits)


def _reference(q, kt, v, mask, scale, where=None):
    s = np.matmul(q.astype(np.float64), kt) * (1.0 if scale is None else scale)
    s = s + mask if where is None else np.where(mask != 0, mask.min(), s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.matmul(e / e.sum(axis=-1, keepdims=True), v)


def _causal(rows, keys, past, value=-np.inf):
    """Row m keeps keys 0 .. m + past."""
    return np.where(np.arange(keys)[None, :] > np.arange(rows)[:, None] + past, value, 0.0)


CASES = [
    # lead, rows, keys, depth, mask, scale[, where]
    ((2, 3), 37, 37, 24, _causal(37, 37, 0), None),
    ((2, 2), 37, 40, 16, _causal(37, 40, 3), 0.5, "fill"),
    ((3,), 70, 70, 16, _causal(70, 70, 0, np.finfo(np.float32).min), None, "keep"),
    ((1, 2), 13, 150, 16, _causal(13, 150, 137, np.finfo(np.float32).min), 0.25),
    ((), 70, 70, 16, _causal(70, 70, 0), None),
    ((4,), 130, 130, 8, _causal(130, 130, 0), 0.125),
    # -1e9 (not trusted to weigh exactly 0) and a padding mask are not causal ones; a diagonal
    # band is (its keys before the band are the Add's to mask, as ever).
    ((2,), 40, 40, 16, _causal(40, 40, 0, -1e9), None),
    ((2,), 40, 40, 16, np.where(np.arange(40)[None, :] >= 33, -np.inf, 0.0) + np.zeros((40, 1)),
     None),
    ((2,), 40, 40, 16, np.where(np.abs(np.arange(40)[None, :] - np.arange(40)[:, None]) > 3,
                                -np.inf, 0.0), None),
]


@pytest.mark.parametrize("case", CASES)
def test_masked_attention_matches_numpy(tmp_path, case):
    lead, rows, keys, depth = case[:4]
    q = RNG.standard_normal(tuple(lead) + (rows, depth)).astype(np.float32)
    kt = RNG.standard_normal(tuple(lead) + (depth, keys)).astype(np.float32)
    v = RNG.standard_normal(tuple(lead) + (keys, depth)).astype(np.float32)
    (y,) = _run_graph(tmp_path, _attention_graph(*case), 13, q=q, kt=kt, v=v)
    np.testing.assert_allclose(y, _reference(q, kt, v, *case[4:]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case,causal", [(0, True), (1, True), (2, True), (3, True), (6, False),
                                         (7, False), (8, True)])
def test_only_causal_masks_bound_the_loops(tmp_path, case, causal):
    ir = _dump_ir(tmp_path, _model(_attention_graph(*CASES[case])))
    loops = (ir / "kernels.loop.txt").read_text()
    # The softmax's rows and P V's sums stop at each row's last key: loops with run-time limits.
    assert (" while " in loops) == causal


def test_a_boolean_mask_given_at_run_time(tmp_path):
    # Where(mask, scores, -inf) with the mask a bool input: fused after Q K^T, its condition is
    # loaded a vector at a time (bytes compared with 0); that did not compile before 53d0f09.
    rows, depth = 40, 16
    nodes = [helper.make_node("MatMul", ["q", "kt"], ["scores"]),
             helper.make_node("Where", ["mask", "scores", "neg"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
             helper.make_node("MatMul", ["probs", "v"], ["y"])]
    shapes = {"q": [2, rows, depth], "kt": [2, depth, rows], "v": [2, rows, depth]}
    inputs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in shapes.items()]
    inputs.append(helper.make_tensor_value_info("mask", TensorProto.BOOL, [1, rows, rows]))
    graph = helper.make_graph(
        nodes, "bool_mask", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                   [2, rows, depth])],
        [numpy_helper.from_array(np.array(-np.inf, np.float32), "neg")])
    feeds = {k: RNG.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    mask = RNG.random((1, rows, rows)) > 0.3
    mask[..., 0] = True  # every row keeps a key
    (y,) = _run_graph(tmp_path, graph, 13, mask=mask, **feeds)
    s = np.where(mask, np.matmul(feeds["q"].astype(np.float64), feeds["kt"]), -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    want = np.matmul(e / e.sum(axis=-1, keepdims=True), feeds["v"])
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
