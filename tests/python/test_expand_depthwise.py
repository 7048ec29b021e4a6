"""A 1x1 conv and the depthwise conv reading its result (MobileNet's inverted residual block) run
as one kernel (compiler/schedule/expand_depthwise.cc), which computes the expanded rows into a
ring of rows that stays in cache. Each case is checked against the two convolutions computed here
from their definitions, on the host's kernel and on the AVX2 one, over strides, kernel sizes,
asymmetric and no padding, odd plane sizes, input blocks narrower than the output's, batches,
activations (Relu, Clip, hard-swish as a diamond and as the op) and biases; a plane too short
for the threads' tasks keeps two kernels, and so does a 1x1 conv whose result has a second
reader."""
import json
import platform
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from test_compile import _dump_ir, _model

ACTIVATIONS = {
    "relu6": lambda v: np.clip(v, 0, 6),
    "relu": lambda v: np.maximum(v, 0),
    "hard_swish": lambda v: v * np.clip(v / 6 + 0.5, 0, 1),  # x * HardSigmoid(x), a diamond
    "HardSwish": lambda v: v * np.clip(v / 6 + 0.5, 0, 1),  # the opset-14 op
    None: lambda v: v,
}


def _pointwise(x, w, b):
    y = np.einsum("oc,nchw->nohw", w[:, :, 0, 0].astype(np.float64), x)
    return y + b.reshape(1, -1, 1, 1) if b is not None else y


def _depthwise(x, w, b, stride, pads):
    """y[n, c, i, j] = b[c] + sum over taps (p, q) of w[c, 0, p, q] * xpad[n, c, i*s+p, j*s+q]."""
    k = w.shape[2]
    xp = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    oh = (xp.shape[2] - k) // stride + 1
    ow = (xp.shape[3] - k) // stride + 1
    y = np.zeros(x.shape[:2] + (oh, ow))
    for p in range(k):
        for q in range(k):
            rows = slice(p, p + (oh - 1) * stride + 1, stride)
            window = xp[:, :, rows, q:q + (ow - 1) * stride + 1:stride]
            y += w[:, 0, p, q].reshape(1, -1, 1, 1) * window
    return y + b.reshape(1, -1, 1, 1) if b is not None else y


# n, c (in), e (expanded), h, w, kernel, stride, pads [t, l, b, r], activations, dw bias
CASES = {
    "mobilenet_stride2": dict(n=1, c=16, e=96, h=130, w=20, k=3, s=2, pads=[1, 1, 1, 1],
                              act=("relu6", "relu6"), dw_bias=True),
    "narrow_input_block_odd_plane": dict(n=1, c=24, e=144, h=67, w=11, k=3, s=1,
                                         pads=[1, 1, 1, 1], act=("relu6", "relu6"), dw_bias=True),
    # On AVX2 a 5x5 depthwise conv's 25 tap vectors do not fit the 16 registers, so its own
    # kernel reads them per tile and nothing is fused (fused, its taps read per tile too, PP-OCR's
    # recognizer ran 1.2x slower): only the result is checked there.
    "kernel5": dict(n=1, c=32, e=64, h=65, w=10, k=5, s=1, pads=[2, 2, 2, 2], act=("relu", None),
                    dw_bias=True, avx2_fuses=False),
    "three_vectors_even_stride2": dict(n=1, c=16, e=48, h=130, w=7, k=3, s=2, pads=[1, 1, 1, 1],
                                       act=(None, "relu"), dw_bias=False),
    "batch_no_padding": dict(n=2, c=16, e=32, h=34, w=6, k=3, s=1, pads=[0, 0, 0, 0],
                             act=("relu6", None), dw_bias=True),
    "same_upper_stride2": dict(n=1, c=8, e=32, h=129, w=12, k=3, s=2, pads=[0, 0, 1, 1],
                               act=("relu6", "relu6"), dw_bias=True),
    "hard_swish_kernel5_stride2": dict(n=1, c=16, e=32, h=129, w=15, k=5, s=2, pads=[2, 2, 2, 2],
                                       act=("hard_swish", "hard_swish"), dw_bias=True,
                                       avx2_fuses=False),
    "hard_swish_op": dict(n=1, c=16, e=64, h=66, w=12, k=3, s=1, pads=[1, 1, 1, 1],
                          act=("HardSwish", "relu"), dw_bias=True),
    # A short plane of few channel blocks makes too few tasks for the threads: the two convs
    # keep their own kernels, which split the pixels finer.
    "short_plane_few_blocks": dict(n=1, c=16, e=32, h=6, w=40, k=3, s=1, pads=[1, 1, 1, 1],
                                   act=("relu6", "relu6"), dw_bias=True, fuses=False),
    # 14 output rows of six weight blocks (AVX-512): two bands of seven make the tasks
    # (MobileNetV2's stride-2 block to 14x14).
    "fourteen_rows_two_bands": dict(n=1, c=32, e=192, h=28, w=28, k=3, s=2, pads=[1, 1, 1, 1],
                                    act=("relu6", "relu6"), dw_bias=True),
    "tall_plane_many_bands": dict(n=1, c=16, e=32, h=70, w=5, k=3, s=1, pads=[1, 1, 1, 1],
                                  act=("relu6", "relu6"), dw_bias=True),
}


def _activation_node(kind, src, dst, inits):
    if kind == "relu6":
        if "lo" not in [i.name for i in inits]:
            inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                      numpy_helper.from_array(np.array(6, np.float32), "hi")]
        return [helper.make_node("Clip", [src, "lo", "hi"], [dst])]
    if kind == "relu":
        return [helper.make_node("Relu", [src], [dst])]
    if kind == "hard_swish":
        return [helper.make_node("HardSigmoid", [src], [dst + "_gate"], alpha=1.0 / 6, beta=0.5),
                helper.make_node("Mul", [src, dst + "_gate"], [dst])]
    if kind == "HardSwish":
        return [helper.make_node("HardSwish", [src], [dst])]
    return [helper.make_node("Identity", [src], [dst])]


def _block(c, name, second_reader=False):
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((c["n"], c["c"], c["h"], c["w"])).astype(np.float32)
    w1 = (rng.standard_normal((c["e"], c["c"], 1, 1)) * 0.5).astype(np.float32)
    b1 = rng.standard_normal(c["e"]).astype(np.float32)
    w2 = rng.standard_normal((c["e"], 1, c["k"], c["k"])).astype(np.float32)
    b2 = rng.standard_normal(c["e"]).astype(np.float32) if c["dw_bias"] else None
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(w2, "w2")]
    if b2 is not None:
        inits.append(numpy_helper.from_array(b2, "b2"))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["e"], kernel_shape=[1, 1])]
    nodes += _activation_node(c["act"][0], "e", "a", inits)
    nodes.append(helper.make_node("Conv", ["a", "w2"] + (["b2"] if b2 is not None else []), ["d"],
                                  kernel_shape=[c["k"], c["k"]], strides=[c["s"], c["s"]],
                                  pads=c["pads"], group=c["e"]))
    nodes += _activation_node(c["act"][1], "d", "y", inits)
    act1, act2 = ACTIVATIONS[c["act"][0]], ACTIVATIONS[c["act"][1]]
    expanded = act1(_pointwise(x.astype(np.float64), w1, b1))
    want = act2(_depthwise(expanded, w2, b2, c["s"], c["pads"])).astype(np.float32)
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, want.shape)]
    if second_reader:  # the expanded tensor is also an output: the 1x1 conv must store it
        outputs.append(helper.make_tensor_value_info("a", TensorProto.FLOAT, expanded.shape))
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)], outputs,
        inits)
    return _model(graph, opset=14), x, want, expanded.astype(np.float32)


def _host_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def _targets():
    if platform.machine() not in ("x86_64", "AMD64"):
        return ["llvm"]
    return ["llvm", "llvm -mcpu=haswell"]  # the host's kernel, and the AVX2 one


def _run(tmp_path, model, target, x):
    art = ember.compile(model, target=target)
    out = art.export(str(tmp_path / "art"))
    with open(tmp_path / "art" / "graph.json") as f:
        kernels = [n["attrs"] for n in json.load(f)["nodes"] if n["op"] == "tvm_op"]
    gmod = ember.load_artifact(out)
    gmod.set_input(x=x)
    gmod.run()
    return kernels, [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]


@pytest.mark.parametrize("target", _targets())
@pytest.mark.parametrize("name", sorted(CASES))
def test_expansion_and_depthwise_in_one_kernel_match_their_definitions(tmp_path, name, target):
    model, x, want, _ = _block(CASES[name], name)
    kernels, (y,) = _run(tmp_path, model, target, x)
    fused = [k for k in kernels if "fused_anchor" in k]
    avx2 = "haswell" in target or not _host_has_avx512()
    fuses = CASES[name].get("fuses", True) and (not avx2 or CASES[name].get("avx2_fuses", True))
    expect = 1 if fuses else 0
    assert len(fused) == expect, kernels
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_an_expansion_read_twice_keeps_its_own_kernel(tmp_path):
    model, x, want, expanded = _block(CASES["mobilenet_stride2"], "read_twice", second_reader=True)
    kernels, (y, a) = _run(tmp_path, model, "llvm", x)
    assert not any("fused_anchor" in k for k in kernels), kernels
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    np.testing.assert_allclose(a, expanded, rtol=1e-4, atol=1e-4 * np.abs(expanded).max())


def test_each_expansion_step_prefetches_the_next_blocks_weights(tmp_path):
    """In a model a task's first row would wait for its weights from L3, which a small plane
    reuses too little to hide: each step of the expansion's reduction also fetches the same
    step's weights of the next weight block, the task its thread runs next."""
    model, _, _, _ = _block(CASES["mobilenet_stride2"], "prefetch")
    ir = (_dump_ir(tmp_path, model) / "kernels.loop.txt").read_text()
    (fused,) = [f for f in ir.split("\nfunc ") if "_ring_ws" in f]
    prefetches = re.findall(r"prefetch (\w+)\[(.*)\]", fused)
    assert prefetches, fused
    for buffer, index in prefetches:
        assert buffer.startswith("w1"), buffer  # the expansion's weights, not the depthwise's
        assert "+ 1) *" in index, index  # the next weight block's
