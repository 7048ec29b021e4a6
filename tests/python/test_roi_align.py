"""RoiAlign (opsets 10 and 16) against a numpy transcription of its definition (Mask R-CNN's
bilinear samples: a sample more than a pixel outside the map weighs 0, one past the last row or
column reads it; max mode keeps each sample's largest weighted corner), with a fixed sampling
ratio and the adaptive one (ceil(bin size) samples a side, per box), for boxes inside, across,
around and outside the map and reversed ones, and a batch index out of range refused at run
time."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ember
from test_compile import _run_graph

RNG = np.random.default_rng(16)


def _sample(plane, y, x):
    h, w = plane.shape
    if y < -1 or y > h or x < -1 or x > w:
        return np.zeros(4)
    y, x = min(max(y, 0.0), h - 1), min(max(x, 0.0), w - 1)
    y0, x0 = int(y), int(x)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return np.array([(1 - ly) * (1 - lx) * plane[y0, x0], (1 - ly) * lx * plane[y0, x1],
                     ly * (1 - lx) * plane[y1, x0], ly * lx * plane[y1, x1]])


def _roi_align_reference(x, rois, images, out_hw, ratio, scale, half, mode):
    oh, ow = out_hw
    out = np.zeros((len(rois), x.shape[1], oh, ow))
    for r, (box, image) in enumerate(zip(rois.astype(np.float64), images)):
        x1, y1, x2, y2 = box * scale - (0.5 if half else 0.0)
        rh, rw = (y2 - y1, x2 - x1) if half else (max(y2 - y1, 1.0), max(x2 - x1, 1.0))
        bh, bw = rh / oh, rw / ow
        gh, gw = (ratio, ratio) if ratio > 0 else (int(np.ceil(bh)), int(np.ceil(bw)))
        for c in range(x.shape[1]):
            for ph in range(oh):
                for pw in range(ow):
                    corners = [_sample(x[image, c], y1 + ph * bh + (iy + 0.5) * bh / gh,
                                       x1 + pw * bw + (ix + 0.5) * bw / gw)
                               for iy in range(gh) for ix in range(gw)]
                    if mode == "max":  # an empty grid gives 0
                        out[r, c, ph, pw] = max((v.max() for v in corners), default=0.0)
                    else:
                        out[r, c, ph, pw] = sum(v.sum() for v in corners) / max(gh * gw, 1)
    return out


def _graph(count, attrs):
    node = helper.make_node("RoiAlign", ["x", "rois", "images"], ["y"], **attrs)
    return helper.make_graph([node], "roi_align", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 9, 11]),
        helper.make_tensor_value_info("rois", TensorProto.FLOAT, [count, 4]),
        helper.make_tensor_value_info("images", TensorProto.INT64, [count])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["r", "c", "h", "w"])])


@pytest.mark.parametrize("mode,half,ratio,scale,opset", [
    ("avg", True, 2, 0.5, 16), ("max", True, 2, 1.0, 16), ("avg", False, 3, 1.0, 16),
    ("max", False, 1, 0.25, 10),
    # sampling_ratio 0: each box's bins take ceil(bin size) samples a side, known at run time.
    ("avg", True, 0, 0.5, 16), ("max", True, 0, 1.0, 16), ("avg", False, 0, 0.25, 10)])
def test_roi_align_matches_its_definition(tmp_path, mode, half, ratio, scale, opset):
    x = RNG.standard_normal((2, 3, 9, 11)).astype(np.float32)
    rois = np.array([[0, 0, 10, 8], [-6, -5, 4, 7], [12, 10, 30, 24], [3, 3, 3.5, 3.2],
                     [40, 40, 44, 46], [-20, -30, 40, 35], [6, 6, 2, 1]], np.float32) / scale
    images = np.array([0, 1, 1, 0, 1, 0, 1], np.int64)
    attrs = {"mode": mode, "output_height": 3, "output_width": 2, "sampling_ratio": ratio,
             "spatial_scale": scale}
    if opset >= 16:
        attrs["coordinate_transformation_mode"] = "half_pixel" if half else "output_half_pixel"
    (y,) = _run_graph(tmp_path, _graph(7, attrs), opset=opset, x=x, rois=rois, images=images)
    want = _roi_align_reference(x, rois, images, (3, 2), ratio, scale, half, mode)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_roi_align_refuses_an_image_outside_the_batch(tmp_path):
    x = np.zeros((2, 3, 9, 11), np.float32)
    rois = np.array([[0, 0, 4, 4], [1, 1, 5, 5]], np.float32)
    with pytest.raises(ember.EmberError,
                       match="batch_indices 'images' hold an image outside 0..1 \\(the batch\\): 2"):
        _run_graph(tmp_path, _graph(2, {"sampling_ratio": 2}), opset=16, x=x, rois=rois,
                   images=np.array([0, 2], np.int64))
