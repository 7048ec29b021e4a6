"""Convs no conv kernel takes (1-D, 3-D, output channels the blocked kernels cannot tile) run as
a Gather of their patches and a dense product (compiler/transform/conv_as_dense.cc). Each case
is checked against a convolution computed here from its definition, with the strides, dilations,
asymmetric pads, bias and batch that the patch index has to get right."""
import itertools
import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_compile import _run_graph


def _reference_conv(x, w, b, strides, pads, dilations):
    """y[n, o, p...] = b[o] + sum over c and taps t of w[o, c, t...] * x[n, c, p*s - pad + t*d]."""
    sp = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[sp + i]) for i in range(sp)])
    out_shape = [(xp.shape[2 + i] - (w.shape[2 + i] - 1) * dilations[i] - 1) // strides[i] + 1
                 for i in range(sp)]
    y = np.zeros((x.shape[0], w.shape[0]) + tuple(out_shape), np.float64)
    for taps in itertools.product(*[range(k) for k in w.shape[2:]]):
        window = tuple(slice(t * d, t * d + (n - 1) * s + 1, s)
                       for t, d, n, s in zip(taps, dilations, out_shape, strides))
        patch = xp[(slice(None), slice(None)) + window]
        y += np.einsum("oc,nc...->no...", w[(slice(None), slice(None)) + taps], patch)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * sp)
    return y.astype(np.float32)


CASES = {
    # the STFT of a mel front end: one input channel, a long window, a hop of 160
    "stft": dict(x=(1, 1, 1280), w=(257, 1, 512), strides=[160], pads=[0, 0], dilations=[1]),
    "padded_strided_dilated_1d": dict(x=(2, 3, 37), w=(5, 3, 4), strides=[2], pads=[3, 1],
                                      dilations=[2], bias=True),
    "pointwise_1d": dict(x=(1, 64, 8), w=(16, 64, 1), strides=[1], pads=[0, 0], dilations=[1],
                         bias=True),
    "odd_channels_2d": dict(x=(1, 3, 9, 11), w=(7, 3, 3, 2), strides=[2, 1], pads=[1, 0, 2, 1],
                            dilations=[1, 2], bias=True),
    "3d": dict(x=(1, 2, 5, 6, 4), w=(3, 2, 2, 3, 2), strides=[1, 2, 1], pads=[1, 0, 0, 0, 1, 1],
               dilations=[1, 1, 2]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_conv_without_a_kernel_matches_its_definition(tmp_path, name):
    c = CASES[name]
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal(c["x"]).astype(np.float32)
    w = rng.standard_normal(c["w"]).astype(np.float32)
    b = rng.standard_normal(c["w"][0]).astype(np.float32) if c.get("bias") else None
    want = _reference_conv(x, w, b, c["strides"], c["pads"], c["dilations"])
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if c.get("bias")
                                                  else [])
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if c.get("bias") else []), ["y"],
                            kernel_shape=list(c["w"][2:]), strides=c["strides"], pads=c["pads"],
                            dilations=c["dilations"])
    graph = helper.make_graph(
        [node], "conv_" + name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, c["x"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, want.shape)], inits)
    (y,) = _run_graph(tmp_path, graph, x=x)
    # It ran as the dense product, not as the conv's default lowering.
    with open(tmp_path / graph.name / "graph.json") as f:
        kernels = [n["attrs"]["func_name"] for n in json.load(f)["nodes"] if n["op"] == "tvm_op"]
    assert any("gemm" in k for k in kernels) and not any("conv" in k for k in kernels), kernels
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
