"""DeformConv (opset 19) against a numpy transcription of its definition: each kernel tap sampled
bilinearly at its window place plus its offset (corners outside the image read 0, a sample a pixel
or more outside it is 0), times the mask when given, then the grouped convolution's sum; offsets
large enough to leave the image, groups, offset groups, strides, dilations, pads and a bias."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_compile import _run_graph

RNG = np.random.default_rng(19)


def _bilinear(plane, y, x):
    h, w = plane.shape
    if not (-1 < y < h and -1 < x < w):
        return 0.0
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    ly, lx = y - y0, x - x0
    total = 0.0
    for yy, xx, weight in ((y0, x0, (1 - ly) * (1 - lx)), (y0, x0 + 1, (1 - ly) * lx),
                           (y0 + 1, x0, ly * (1 - lx)), (y0 + 1, x0 + 1, ly * lx)):
        if 0 <= yy < h and 0 <= xx < w:
            total += weight * plane[yy, xx]
    return total


def _deform_conv_reference(x, w, offset, bias, mask, group, offset_group, s, d, p):
    n, c, _, _ = x.shape
    m, cg, kh, kw = w.shape
    oh, ow = offset.shape[2:]
    y = np.zeros((n, m, oh, ow))
    for b in range(n):
        for ch in range(c):
            og = ch // (c // offset_group)
            for i in range(kh):
                for j in range(kw):
                    tap = og * kh * kw + i * kw + j
                    for r in range(oh):
                        for q in range(ow):
                            sy = r * s[0] - p[0] + i * d[0] + offset[b, 2 * tap, r, q]
                            sx = q * s[1] - p[1] + j * d[1] + offset[b, 2 * tap + 1, r, q]
                            v = _bilinear(x[b, ch], sy, sx)
                            if mask is not None:
                                v *= mask[b, tap, r, q]
                            g = ch // cg
                            for f in range(g * (m // group), (g + 1) * (m // group)):
                                y[b, f, r, q] += w[f, ch % cg, i, j] * v
    if bias is not None:
        y += bias.reshape(1, -1, 1, 1)
    return y


# The last case has 130 output positions: the kernel samples them in chunks of 64, the last chunk
# overlapping the one before it.
@pytest.mark.parametrize("group,offset_group,strides,dilations,pads,with_mask,with_bias,size", [
    (1, 1, [1, 1], [1, 1], [1, 1, 1, 1], False, False, (7, 6)),
    (2, 2, [2, 2], [1, 1], [1, 1, 1, 1], True, True, (7, 6)),
    (1, 2, [1, 2], [2, 1], [0, 1, 2, 0], True, False, (7, 6)),
    (1, 2, [1, 1], [1, 1], [1, 1, 1, 1], True, True, (13, 9)),
])
def test_deform_conv_matches_its_definition(tmp_path, group, offset_group, strides, dilations,
                                            pads, with_mask, with_bias, size):
    x = RNG.standard_normal((2, 4) + size).astype(np.float32)
    w = RNG.standard_normal((6, 4 // group, 3, 2)).astype(np.float32)
    oh = (size[0] + pads[0] + pads[2] - dilations[0] * 2 - 1) // strides[0] + 1
    ow = (size[1] + pads[1] + pads[3] - dilations[1] * 1 - 1) // strides[1] + 1
    offset = (RNG.standard_normal((2, offset_group * 2 * 6, oh, ow)) * 3).astype(np.float32)
    mask = RNG.uniform(0, 1, (2, offset_group * 6, oh, ow)).astype(np.float32)
    bias = RNG.standard_normal(6).astype(np.float32)
    inputs = ["x", "w", "offset", "b" if with_bias else "", "mask" if with_mask else ""]
    while not inputs[-1]:
        inputs.pop()
    node = helper.make_node("DeformConv", inputs, ["y"], group=group, offset_group=offset_group,
                            strides=strides, dilations=dilations, pads=pads)
    feeds = {"x": x, "offset": offset}
    graph_inputs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
                    for k, v in feeds.items()]
    if with_mask:
        feeds["mask"] = mask
        graph_inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, mask.shape))
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(bias, "b")]
                                                 if with_bias else [])
    graph = helper.make_graph([node], "deform_conv", graph_inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             [2, 6, oh, ow])], inits)
    (y,) = _run_graph(tmp_path, graph, opset=19, **feeds)
    want = _deform_conv_reference(x.astype(np.float64), w, offset, bias if with_bias else None,
                                  mask if with_mask else None, group, offset_group, strides,
                                  dilations, pads)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
