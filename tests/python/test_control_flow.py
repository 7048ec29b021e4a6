"""Ifs decided by data at run time: the If is one kernel that runs the taken branch. Each path of
the models of tests/models/gen_exported.py is driven by inputs chosen for it and checked
against numpy."""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import pytest

import ember

from conftest import REPO
from test_compile import _compiler_or_skip

sys.path.insert(0, os.path.join(REPO, "tests", "models"))
import gen_exported  # noqa: E402


def _weights(graph, out=None):
    """Every initializer of the graph and of its subgraphs, by name."""
    out = {} if out is None else out
    for t in graph.initializer:
        out[t.name] = numpy_helper.to_array(t)
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _weights(a.g, out)
    return out


def _compile(model, tmp_path):
    _compiler_or_skip()
    model.save(str(tmp_path))
    path = str(tmp_path / (model.name + ".onnx"))
    art = ember.compile(path)
    gmod = ember.load_artifact(art.export(str(tmp_path / (model.name + "_artifact"))))
    return gmod, _weights(onnx.load(path).graph)


def _run(gmod, **inputs):
    gmod.set_input(**inputs)
    gmod.run()
    return gmod.get_output(0).numpy()


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_a_verifier_behind_a_threshold_runs_the_branch_the_score_picks(tmp_path):
    gmod, w = _compile(gen_exported.if_on_data("if_data_half", 400, 0.5), tmp_path)
    direction = w["head_w"][:, 0] / np.linalg.norm(w["head_w"])
    for sign in (1, -1):
        x = (sign * 4 * direction).reshape(1, 16).astype(np.float32)
        score = _sigmoid(x @ w["head_w"] + w["head_b"])
        if score.max() >= 0.5:
            h = np.maximum(x @ w["v1"] + w["c1"], 0)
            h = np.maximum(h @ w["v2"] + w["c2"], 0)
            expected = _sigmoid(h @ w["v3"] + w["c3"])
        else:
            expected = score
        assert (score.max() >= 0.5) == (sign == 1)
        np.testing.assert_allclose(_run(gmod, x=x), expected, rtol=1e-4, atol=1e-6)


def test_nested_ifs_on_data_take_every_path(tmp_path):
    gmod, w = _compile(gen_exported.if_on_data_nested(), tmp_path)
    rs = np.random.RandomState(5)
    paths = set()
    for _ in range(64):
        x = rs.standard_normal((2, 8)).astype(np.float32)
        mm = x @ w["w"]
        if x.sum() > 0:
            scaled = mm * x
            inner = mm + x if scaled.sum() < 0 else scaled * x
            expected, path = np.maximum(inner, 0), ("then", scaled.sum() < 0)
        else:
            expected, path = -mm, ("else",)
        np.testing.assert_allclose(_run(gmod, x=x), expected, rtol=1e-4, atol=1e-5)
        paths.add(path)
    assert paths == {("then", True), ("then", False), ("else",)}


def test_a_branch_checks_its_gather_indices_only_when_taken(tmp_path):
    """then: Gather(x, idx); else: Gather(x, idx + 1). idx = [0, 3] is valid for the then branch
    only, so it must run when the sum of x picks it; idx = [0, 7] must fail naming the Gather."""
    from onnx import TensorProto, helper

    def branch(name, indices):
        return helper.make_graph(
            [helper.make_node("Gather", ["x", indices], [name + "_out"], axis=0,
                              name=name + "_gather")],
            name, [], [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, None)])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
         helper.make_node("Greater", ["total", "zero"], ["positive"]),
         helper.make_node("Add", ["idx", "one"], ["next"]),
         helper.make_node("If", ["positive"], ["y"], then_branch=branch("then", "idx"),
                          else_branch=branch("else", "next"))], "gather_if",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
         helper.make_tensor("one", TensorProto.INT64, [], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    _compiler_or_skip()
    path = tmp_path / "gather_if.onnx"
    path.write_bytes(model.SerializeToString())
    gmod = ember.load_artifact(ember.compile(str(path)).export(str(tmp_path / "artifact")))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(_run(gmod, x=x, idx=np.array([0, 3])), x[[0, 3]])
    np.testing.assert_array_equal(_run(gmod, x=-x - 1, idx=np.array([0, 2])), (-x - 1)[[1, 3]])
    with pytest.raises(ember.EmberError, match="then_gather.*outside -4..3.*7"):
        _run(gmod, x=x, idx=np.array([0, 7]))
