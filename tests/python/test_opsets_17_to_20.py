"""Ops of opsets 17-20 written out or run as loops (MelWeightMatrix, CenterCropPad, Col2Im,
AffineGrid) against numpy references of ONNX's definitions: a mel filter bank whose edges come at
run time, crops and pads about the centre on chosen axes, columns added back into images of one
to three axes with pads, strides and dilations, and the affine sampling grids of 2-D and 3-D
transformers with and without align_corners."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from test_compile import _run_graph

RNG = np.random.default_rng(1820)
F = TensorProto.FLOAT


def _vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def _ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _center_crop_pad_reference(x, sizes, axes):
    out_shape = list(x.shape)
    crop = [slice(None)] * x.ndim
    place = [slice(None)] * x.ndim
    for size, axis in zip(sizes, axes):
        dim = x.shape[axis]
        out_shape[axis] = size
        if size < dim:
            start = (dim - size) // 2
            crop[axis] = slice(start, start + size)
        elif size > dim:
            start = (size - dim) // 2
            place[axis] = slice(start, start + dim)
    out = np.zeros(out_shape, x.dtype)
    out[tuple(place)] = x[tuple(crop)]
    return out


@pytest.mark.parametrize("shape,sizes,axes", [
    ([5, 7, 3], [8, 4], [0, -2]),  # pad one axis (odd difference), crop another
    ([6, 7], [3, 10], None),  # every axis
    ([2, 9, 9, 3], [9, 9], [1, 2]),  # unchanged: the input itself
])
def test_center_crop_pad(tmp_path, shape, sizes, axes):
    x = RNG.standard_normal(shape).astype(np.float32)
    attrs = {} if axes is None else {"axes": axes}
    axes_used = list(range(len(shape))) if axes is None else [a % len(shape) for a in axes]
    want = _center_crop_pad_reference(x, sizes, axes_used)
    graph = helper.make_graph([helper.make_node("CenterCropPad", ["x", "size"], ["y"], **attrs)],
                              "center_crop_pad", [_vi("x", shape)], [_vi("y", list(want.shape))],
                              [_ints("size", sizes)])
    (y,) = _run_graph(tmp_path, graph, opset=18, x=x)
    np.testing.assert_array_equal(y, want)


def _col2im_reference(x, image, block, dilations, pads, strides):
    r = len(image)
    n, rows, _ = x.shape
    channels = rows // int(np.prod(block))
    slides = [(image[i] + pads[i] + pads[r + i] - dilations[i] * (block[i] - 1) - 1) // strides[i]
              + 1 for i in range(r)]
    out = np.zeros([n, channels] + list(image), np.float64)
    cols = x.reshape([n, channels] + list(block) + slides)
    for k in np.ndindex(*block):
        for pos in np.ndindex(*slides):
            at = [pos[i] * strides[i] - pads[i] + k[i] * dilations[i] for i in range(r)]
            if all(0 <= a < image[i] for i, a in enumerate(at)):
                out[(slice(None), slice(None)) + tuple(at)] += cols[(slice(None), slice(None)) +
                                                                   k + pos]
    return out


@pytest.mark.parametrize("image,block,attrs", [
    ([5, 5], [3, 3], {}),
    ([6, 5], [2, 3], {"pads": [1, 0, 0, 1], "strides": [2, 2], "dilations": [2, 1]}),
    ([9], [4], {"strides": [3], "pads": [2, 1]}),  # one axis; the padding's columns dropped
    ([3, 3, 3], [2, 2, 2], {}),
])
def test_col2im_adds_each_column_back(tmp_path, image, block, attrs):
    r = len(image)
    d, p, s = (attrs.get("dilations", [1] * r), attrs.get("pads", [0] * (2 * r)),
               attrs.get("strides", [1] * r))
    slides = [(image[i] + p[i] + p[r + i] - d[i] * (block[i] - 1) - 1) // s[i] + 1
              for i in range(r)]
    x = RNG.standard_normal((2, 3 * int(np.prod(block)), int(np.prod(slides)))).astype(np.float32)
    want = _col2im_reference(x.astype(np.float64), image, block, d, p, s)
    graph = helper.make_graph(
        [helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)], "col2im",
        [_vi("x", list(x.shape))], [_vi("y", list(want.shape))],
        [_ints("image", image), _ints("block", block)])
    (y,) = _run_graph(tmp_path, graph, opset=18, x=x)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_col2im_refuses_columns_the_blocks_do_not_make(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Col2Im", ["x", "image", "block"], ["y"], name="fold")], "col2im",
        [_vi("x", [1, 5, 25])], [_vi("y", [1, 1, 5, 5])],
        [_ints("image", [5, 5]), _ints("block", [1, 5])])
    message = "node 'fold' \\(Col2Im\\): input float32\\[1,5,25\\] must be \\[N, C \\* 5, 5\\]"
    with pytest.raises(ember.EmberError, match=message):
        _run_graph(tmp_path, graph, opset=18, x=np.zeros((1, 5, 25), np.float32))


def _affine_grid_reference(theta, size, align_corners):
    """ONNX's definition: pixel centres (or corners) in [-1, 1] per spatial axis, (x, y[, z], 1)
    times theta^T; a lone pixel with align_corners sits at -1."""
    spatial = size[2:]

    def axis(n):
        if align_corners:
            return np.array([-1.0]) if n == 1 else np.linspace(-1, 1, n)
        return (2 * np.arange(n) + 1) / n - 1

    coords = np.meshgrid(*[axis(n) for n in spatial], indexing="ij")
    base = np.stack(coords[::-1] + [np.ones(spatial)], axis=-1)  # x first
    return np.einsum("...k,njk->n...j", base, theta.astype(np.float64))


@pytest.mark.parametrize("size,align_corners", [
    ([2, 3, 5, 7], 0), ([2, 3, 5, 7], 1), ([2, 1, 3, 4, 5], 0), ([1, 1, 1, 4, 5], 1)])
def test_affine_grid(tmp_path, size, align_corners):
    dims = len(size) - 2
    theta = RNG.standard_normal((size[0], dims, dims + 1)).astype(np.float32)
    want = _affine_grid_reference(theta, size, align_corners)
    graph = helper.make_graph(
        [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align_corners)],
        "affine_grid", [_vi("theta", list(theta.shape))], [_vi("grid", list(want.shape))],
        [_ints("size", size)])
    (grid,) = _run_graph(tmp_path, graph, opset=20, theta=theta)
    np.testing.assert_allclose(grid, want, rtol=1e-5, atol=1e-6)


def _mel_weight_matrix_reference(bands, dft, rate, low_hz, high_hz):
    """ONNX's definition (opset 17): bands + 2 points stepping by 1 / (bands + 2) of the mel
    span from the lower edge, as spectrum bins; triangles between consecutive ones."""
    mel = lambda hz: 2595 * np.log10(1 + hz / 700)  # noqa: E731
    step = (mel(high_hz) - mel(low_hz)) / (bands + 2)
    hz = 700 * (np.power(10, (np.arange(bands + 2) * step + mel(low_hz)) / 2595) - 1)
    f = (((dft + 1) * hz) // rate).astype(int)
    out = np.zeros((dft // 2 + 1, bands))
    for i in range(bands):
        left, center, right = f[i], f[i + 1], f[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    return out


def test_mel_weight_matrix_with_edges_given_at_run_time(tmp_path):
    node = helper.make_node("MelWeightMatrix", ["bands", "dft", "rate", "low", "high"], ["w"])
    graph = helper.make_graph([node], "mel", [_vi("low", []), _vi("high", [])],
                              [_vi("w", [129, 40])],
                              [_ints("bands", 40), _ints("dft", 256), _ints("rate", 16000)])
    (w,) = _run_graph(tmp_path, graph, opset=17, low=np.array(20, np.float32),
                      high=np.array(7600, np.float32))
    np.testing.assert_allclose(w, _mel_weight_matrix_reference(40, 256, 16000, 20.0, 7600.0),
                               rtol=1e-6, atol=1e-7)
