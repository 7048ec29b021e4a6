"""Nodes that read one constant weight share its packed form in the artifact (one copy in
params.bin, one in the cache when run): the steps of an unrolled recurrence, tied layers. Each
node packed its own copy before, so a 200-step LSTM carried 200 copies of its recurrent weight."""
import json

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from test_compile import _run_graph

RNG = np.random.default_rng(11)
F = TensorProto.FLOAT


def _params_from(tmp_path, name, weight):
    """The artifact's parameters made from `weight` (its name, plus a suffix for the form)."""
    with open(str(tmp_path / name / "graph.json")) as f:
        graph = json.load(f)
    return [n["name"] for n in graph["nodes"] if n["op"] == "null" and n["name"].startswith(weight)]


def test_dense_layers_tied_to_one_weight_keep_one_packed_copy(tmp_path):
    w = RNG.standard_normal((64, 64)).astype(np.float32) * 0.1
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h0"])]
    for k in range(1, 4):  # the same weight three more times, as tied layers
        nodes.append(helper.make_node("Relu", ["h%d" % (k - 1)], ["r%d" % k]))
        nodes.append(helper.make_node("MatMul", ["r%d" % k, "w"], ["h%d" % k]))
    nodes.append(helper.make_node("Identity", ["h3"], ["y"]))
    graph = helper.make_graph(nodes, "tied_dense", [helper.make_tensor_value_info("x", F, [4, 64])],
                              [helper.make_tensor_value_info("y", F, [4, 64])],
                              [numpy_helper.from_array(w, "w")])
    (y,) = _run_graph(tmp_path, graph, x=x)
    want = x.astype(np.float64) @ w
    for _ in range(3):
        want = np.maximum(want, 0) @ w
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    assert len(_params_from(tmp_path, "tied_dense", "w")) == 1


def test_convs_of_one_weight_keep_one_packed_copy(tmp_path):
    w = RNG.standard_normal((32, 32, 3, 3)).astype(np.float32) * 0.1
    x = RNG.standard_normal((1, 32, 16, 16)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "tied_conv",
                              [helper.make_tensor_value_info("x", F, list(x.shape))],
                              [helper.make_tensor_value_info("y", F, list(x.shape))],
                              [numpy_helper.from_array(w, "w")])
    (y,) = _run_graph(tmp_path, graph, x=x)

    def conv(a):
        p = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros_like(a, dtype=np.float64)
        for i in range(3):
            for j in range(3):
                out += np.einsum("oc,nchw->nohw", w[:, :, i, j], p[:, :, i:i + 16, j:j + 16])
        return out

    want = conv(np.maximum(conv(np.maximum(conv(x.astype(np.float64)), 0)), 0))
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)
    # One form (Winograd's transformed tiles, or blocks) shared by the three convs.
    assert len(_params_from(tmp_path, "tied_conv", "w")) == 1
