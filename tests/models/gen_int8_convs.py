#!/usr/bin/python3
"""Write the int8 kernel cases: QLinearConv models with their input and exact expected output.

Usage:  gen_int8_convs.py OUTDIR

The conv and depthwise cases the int8 kernels are checked on (tests/python/test_quantized.py on
this machine; tests/cross/run_cross.sh on ARM under qemu): strides 1 to 3, pads, 1x1 to 7x7,
channels that fill no vector, planes that fill no tile, int8 and uint8 data and outputs,
full-range int8 weights; each conv case runs on both forms of the int8 conv (CONV_FORMS). The
expected output comes from an int64 numpy reference (the integer definition, then ONNX's
requantization). OUTDIR gets NAME.onnx, NAME_x.npy (the input) and NAME_expected/output_0.npy
per case, NAME conv_seedN or dw_seedN, and cases.tsv: NAME, the kernel families to run it on,
space-separated (a target's kernel adds its ISA), and the kernels that must refuse its weights
(refusing_kernels), space-separated, or "-".
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

CONV_CASES = [
    # seed, c, oc, (h, w), k, stride, pad, data, out, bias
    (10, 16, 32, (10, 10), 3, 1, 1, np.uint8, np.uint8, True),
    (11, 3, 5, (9, 11), 3, 2, 1, np.uint8, np.uint8, True),      # channels fill no vector
    (12, 17, 40, (7, 9), 1, 1, 0, np.uint8, np.uint8, False),    # 1x1, odd input channels
    (13, 64, 48, (14, 14), 3, 2, 1, np.int8, np.int8, True),     # int8 data: + 128 inside
    (14, 8, 16, (10, 10), 5, 1, 2, np.int8, np.uint8, True),
    (15, 5, 33, (6, 13), 3, 1, 0, np.uint8, np.int8, True),      # 33 channels: 3 blocks
    (16, 64, 64, (29, 31), 3, 1, 1, np.uint8, np.uint8, True),   # several tiles per row + tail
    (17, 64, 33, (7, 7), 1, 1, 0, np.int8, np.int8, True),       # 1x1: 49 pixels, 3 x 11 rows
    (18, 8, 16, (3, 3), 1, 1, 0, np.uint8, np.uint8, True),      # 1x1: a partial tile only
    (19, 96, 24, (12, 16), 1, 1, 0, np.uint8, np.int8, True),    # 1x1: whole tiles only
    (20, 16, 32, (9, 9), 1, 2, 0, np.uint8, np.uint8, True),     # 1x1 stride 2
    (21, 16, 32, (6, 6), 1, 1, 1, np.uint8, np.uint8, True),     # 1x1 padded
    (22, 3, 24, (23, 23), 7, 2, 3, np.uint8, np.uint8, True),    # a 7x7 stride-2 stem
    (23, 8, 16, (11, 13), 3, 3, 1, np.int8, np.uint8, True),     # stride 3
]

# The two forms of the int8 conv: output pixels in the vector lanes (conv2d_int8_pixels.cc) and
# output channels (conv2d_int8.cc). The strategy picks one per conv by cost; the tests force each.
CONV_FORMS = ("conv2d_int8_pixels", "conv2d_int8")

DW_CASES = [
    # seed, c, (h, w), k, stride, pad, data, out, bias
    (30, 32, (12, 12), 3, 1, 1, np.uint8, np.uint8, True),
    (31, 24, (13, 11), 3, 2, 1, np.uint8, np.uint8, True),     # odd sizes, stride 2
    (32, 7, (9, 20), 5, 1, 2, np.int8, np.uint8, False),       # 5x5, 7 channels, int8 data
    (33, 16, (10, 10), 3, 2, 0, np.uint8, np.int8, True),      # no padding, int8 output
    (34, 48, (35, 37), 3, 1, 1, np.uint8, np.uint8, True),     # rows past one vector
    (35, 16, (19, 40), 5, 3, 2, np.int8, np.int8, True),       # stride 3: three phases per row
    (36, 8, (24, 26), 23, 1, 0, np.uint8, np.uint8, True),     # 529 taps: int32, not float
    (37, 16, (70, 130), 3, 1, 1, np.uint8, np.uint8, True),    # bands of rows, the last overlaps
    (38, 8, (61, 112), 3, 2, 1, np.int8, np.uint8, True),      # stride 2 in bands
    (39, 16, (12, 12), 3, 1, 1, np.uint8, np.uint8, 1 << 24),  # a bias past float's integers
    # Rows wider than the plane holds run in strips of columns: borders, a loop, the last strip.
    (40, 4, (5, 12001), 3, 1, 1, np.uint8, np.uint8, True),
    (41, 3, (4, 23003), 3, 2, 1, np.int8, np.uint8, True),     # stride 2: two phases per strip
    (42, 2, (6, 11111), 5, 1, 0, np.uint8, np.int8, False),    # no padding: strips all inside
]


def qlinear_conv_case(seed, c, oc, hw, k, stride, pad, data=np.uint8, out=np.uint8, bias=True,
                      depthwise=False, w_range=(-128, 127)):
    """(graph, x, expected): one QLinearConv with seeded operands (weights in w_range, full-range
    by default; bias True, False or channel 0's bias), and its output by the integer definition
    in int64 and ONNX's requantization."""
    rs = np.random.RandomState(seed)
    info = np.iinfo(data)
    x = rs.randint(info.min, info.max + 1, (1, c) + hw).astype(data)
    w = rs.randint(w_range[0], w_range[1] + 1, (oc, 1 if depthwise else c, k, k)).astype(np.int8)
    x_z = data(rs.randint(info.min, info.max + 1))
    y_z = out(rs.randint(np.iinfo(out).min, np.iinfo(out).max + 1))
    w_s = (rs.rand(oc) * 0.002 + 0.0005).astype(np.float32)
    params = {"x_s": np.float32(0.02), "x_z": x_z, "w": w, "w_s": w_s,
              "w_z": np.zeros(oc, np.int8), "y_s": np.float32(0.3), "y_z": y_z}
    inputs = list(params)
    if bias:
        params["b"] = rs.randint(-5000, 5000, oc).astype(np.int32)
        if bias is not True:  # a number: channel 0's bias, the others as usual
            params["b"][0] = bias
        inputs.append("b")
    oh = (hw[0] + 2 * pad - k) // stride + 1
    ow = (hw[1] + 2 * pad - k) // stride + 1
    elem = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}
    graph = helper.make_graph(
        [helper.make_node("QLinearConv", ["x"] + inputs, ["y"], pads=[pad] * 4,
                          strides=[stride] * 2, group=c if depthwise else 1)], "qconv%d" % seed,
        [helper.make_tensor_value_info("x", elem[data], list(x.shape))],
        [helper.make_tensor_value_info("y", elem[out], [1, oc, oh, ow])],
        [numpy_helper.from_array(v, n) for n, v in params.items()])
    xp = np.pad(x.astype(np.int64) - int(x_z), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    acc = np.zeros((1, oc, oh, ow), np.int64)
    for i in range(k):
        for j in range(k):
            window = xp[:, :, i:i + (oh - 1) * stride + 1:stride,
                        j:j + (ow - 1) * stride + 1:stride]
            if depthwise:
                acc += w[:, 0, i, j].astype(np.int64).reshape(1, -1, 1, 1) * window
            else:
                acc += np.einsum("oc,nchw->nohw", w[:, :, i, j].astype(np.int64), window)
    if bias:
        acc += params["b"].reshape(1, -1, 1, 1)
    multiplier = (params["x_s"] * w_s / params["y_s"]).astype(np.float32).reshape(1, -1, 1, 1)
    q = np.round(acc.astype(np.float32) * multiplier) + np.float32(y_z)
    expected = np.clip(q, np.iinfo(out).min, np.iinfo(out).max).astype(out)
    return graph, x, expected


def depthwise_case(case):
    """qlinear_conv_case of a DW_CASES row (its output channels are its channels)."""
    seed, c, hw, k, stride, pad, data, out, bias = case
    return qlinear_conv_case(seed, c, c, hw, k, stride, pad, data, out, bias, depthwise=True)


def paired_minus_128(graph):
    """Whether two weights of -128 meet in a pair of products the NEON halves dot sums in int16
    (input channels 4q + k and 4q + k + 2, k < 2, at one output channel and tap): the channels
    form of the widening dot (conv2d_int8_neon, _neon32) refuses such weights."""
    w = numpy_helper.to_array(next(i for i in graph.initializer if i.name == "w"))
    low = w == -128
    return any(np.any(low[:, i] & low[:, i + 2])
               for i in range(w.shape[1] - 2) if i % 4 < 2)


# The kernels whose widening dot (the channels form on NEON without a dot instruction) sums two
# products in int16 before widening them, which two weights of -128 overflow.
HALVES_KERNELS = ("conv2d_int8_neon", "conv2d_int8_neon32")


def refusing_kernels(graph):
    """The kernels that must refuse the case's weights: HALVES_KERNELS where two weights of -128
    meet in one of their int16 pairs (paired_minus_128), else none."""
    return HALVES_KERNELS if paired_minus_128(graph) else ()


def model(graph):
    """The graph as a model every tool here reads (opset 13, IR 7)."""
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m


def all_cases():
    """(name, kernel families, (graph, x, expected)) of every case."""
    for case in CONV_CASES:
        yield "conv_seed%d" % case[0], CONV_FORMS, qlinear_conv_case(*case)
    for case in DW_CASES:
        yield "dw_seed%d" % case[0], ("depthwise_conv2d_int8",), depthwise_case(case)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    rows = []
    for name, families, (graph, x, expected) in all_cases():
        refusing = " ".join(refusing_kernels(graph)) or "-"
        rows.append("%s\t%s\t%s\n" % (name, " ".join(families), refusing))
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(model(graph).SerializeToString())
        np.save(os.path.join(out, name + "_x.npy"), x)
        os.makedirs(os.path.join(out, name + "_expected"), exist_ok=True)
        np.save(os.path.join(out, name + "_expected", "output_0.npy"), expected)
    with open(os.path.join(out, "cases.tsv"), "w") as f:
        f.writelines(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
