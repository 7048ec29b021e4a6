"""Integer convolutions (ConvInteger, QLinearConv, MatMulInteger) must come out exact, as ONNX
Runtime's integer kernels are. emberc runs them on the float32 kernels when the constant weights
bound every partial sum below 2^24 (float32 is then exact) and in int32 otherwise; both cases
are compared here with an int64 reference, bit for bit."""
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_compile import _run_graph


def _conv_integer_reference(x, x_zp, w, pad, group=1):
    xs = np.pad(x.astype(np.int64) - x_zp, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ws = w.astype(np.int64)
    kh, kw = w.shape[2:]
    oh, ow = xs.shape[2] - kh + 1, xs.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow), np.int64)
    ci, co = w.shape[1], w.shape[0] // group
    for g in range(group):
        xg, wg = xs[:, g * ci:(g + 1) * ci], ws[g * co:(g + 1) * co]
        for i in range(kh):
            for j in range(kw):
                out[:, g * co:(g + 1) * co] += np.einsum("oc,nchw->nohw", wg[:, :, i, j],
                                                         xg[:, :, i:i + oh, j:j + ow])
    return out


def _run_conv_integer(tmp_path, x, x_zp, w, pad, group=1):
    out_shape = [1, w.shape[0], x.shape[2] + 2 * pad - 2, x.shape[3] + 2 * pad - 2]
    graph = helper.make_graph(
        [helper.make_node("ConvInteger", ["x", "w", "x_zp"], ["y"], pads=[pad] * 4,
                          group=group)], "convint",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, out_shape)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.uint8(x_zp), "x_zp")])
    return _run_graph(tmp_path, graph, x=x)[0]


def test_conv_integer_on_float_kernels_is_exact_and_never_winograd(tmp_path):
    # 64 channels, 3x3, stride 1: a float conv of this shape would run as Winograd, whose
    # transforms round. Small weights keep every sum under 2^24, so the float path is taken.
    rs = np.random.RandomState(1)
    x = rs.randint(0, 256, (1, 64, 12, 12)).astype(np.uint8)
    w = rs.randint(-20, 21, (32, 64, 3, 3)).astype(np.int8)
    y = _run_conv_integer(tmp_path, x, 131, w, 1)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, _conv_integer_reference(x, 131, w, 1))


def _past_float_precision(seed, channels):
    # 3 x 3 products of 255 x -127 per channel add up to tens of millions: past 2^24, where float32
    # steps by 2 or more and an odd sum would round.
    rs = np.random.RandomState(seed)
    x = np.full((1, channels, 6, 6), 255, np.uint8)
    x[:, :, ::2, 1::3] = rs.randint(0, 256, x[:, :, ::2, 1::3].shape)
    w = np.full((8, channels, 3, 3), -127, np.int8)
    w[:, :, 1, 1] = rs.randint(-128, 128, w.shape[:2])
    return x, w


def test_conv_integer_past_float_precision_splits_its_channels(tmp_path):
    # The sums bound no whole conv below 2^24 but each quarter of its channels: four float convs
    # added in int32.
    x, w = _past_float_precision(2, 128)
    y = _run_conv_integer(tmp_path, x, 0, w, 0)
    expected = _conv_integer_reference(x, 0, w, 0)
    assert np.abs(expected).max() > 2 ** 24
    np.testing.assert_array_equal(y, expected)


def test_grouped_conv_integer_past_float_precision_runs_in_int32(tmp_path):
    # A grouped conv does not split; past the bound it runs in int32.
    x, w = _past_float_precision(3, 256)
    w = w[:, :128]
    y = _run_conv_integer(tmp_path, x, 0, w, 0, group=2)
    expected = _conv_integer_reference(x, 0, w, 0, group=2)
    assert np.abs(expected).max() > 2 ** 24
    np.testing.assert_array_equal(y, expected)


def test_qlinear_conv_requantizes_in_the_blocked_kernel_like_onnx(tmp_path):
    # 16 channels run blocked: the requantization (scale, round half to even, zero point,
    # saturation) is the conv kernel's epilogue. Per-channel weight scales, uint8 in and out.
    rs = np.random.RandomState(4)
    x = rs.randint(0, 256, (1, 16, 10, 10)).astype(np.uint8)
    w = rs.randint(-128, 128, (16, 16, 3, 3)).astype(np.int8)
    x_s, x_z = np.float32(0.02), np.uint8(120)
    w_s = (rs.rand(16) * 0.01 + 0.001).astype(np.float32)
    y_s, y_z = np.float32(0.5), np.uint8(100)
    inits = [numpy_helper.from_array(v, n) for n, v in
             [("x_s", x_s), ("x_z", x_z), ("w", w), ("w_s", w_s), ("w_z", np.zeros(16, np.int8)),
              ("y_s", y_s), ("y_z", y_z)]]
    graph = helper.make_graph(
        [helper.make_node("QLinearConv", ["x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z"], ["y"],
                          pads=[1, 1, 1, 1])], "qlinearconv",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 16, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 16, 10, 10])], inits)
    y = _run_graph(tmp_path, graph, x=x)[0]
    acc = _conv_integer_reference(x, int(x_z), w, 1).astype(np.float32)
    multiplier = (x_s * w_s / y_s).astype(np.float32).reshape(1, 16, 1, 1)
    expected = np.clip(np.round(acc * multiplier) + np.float32(y_z), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(y, expected)


def _qdq_conv_graph(bias_scale_factor):
    """Q(Relu(Conv(DQ(x), DQ(w) per channel, DQ(b))))): ORT's QDQ layout of one conv."""
    rs = np.random.RandomState(5)
    w_s = (rs.rand(8) * 0.01 + 0.001).astype(np.float32)
    x_s = np.float32(0.02)
    params = {"x_s": x_s, "x_z": np.uint8(128), "w": rs.randint(-63, 64, (8, 8, 3, 3)).astype(
        np.int8), "w_s": w_s, "w_z": np.zeros(8, np.int8), "b": rs.randint(
        -500, 500, 8).astype(np.int32), "b_s": (x_s * w_s * bias_scale_factor).astype(np.float32),
        "y_s": np.float32(0.04), "y_z": np.uint8(0)}
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_s", "x_z"], ["dx"]),
             helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["dw"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "b_s"], ["db"], axis=0),
             helper.make_node("Conv", ["dx", "dw", "db"], ["conv"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv"], ["relu"]),
             helper.make_node("QuantizeLinear", ["relu", "y_s", "y_z"], ["y"])]
    return helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 8, 6, 6])],
        [numpy_helper.from_array(v, k) for k, v in params.items()])


def _imported_graph(tmp_path, graph):
    from ember import compiler
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    path = tmp_path / "qdq.onnx"
    path.write_bytes(model.SerializeToString())
    emberc = compiler.find_emberc()
    if emberc is None:
        pytest.skip("emberc not built")
    subprocess.run([emberc, "compile", str(path), "-o", str(tmp_path / "a"), "--dump-ir",
                    str(tmp_path / "ir")], check=True, stdout=subprocess.DEVNULL)
    return (tmp_path / "ir" / "00_import.txt").read_text()


def test_qdq_conv_becomes_an_integer_conv_as_onnx_runtime_runs_it(tmp_path):
    # The Conv's products run exactly (ember_exact_sum: the integer path) and the Relu became a
    # Max with the output zero point, in the integer domain.
    text = _imported_graph(tmp_path, _qdq_conv_graph(1.0))
    assert "ember_exact_sum" in text and "= Relu(" not in text and "= Max(%y_before_relu" in text
    x = np.random.RandomState(6).randint(0, 256, (1, 8, 6, 6)).astype(np.uint8)
    y = _run_graph(tmp_path, _qdq_conv_graph(1.0), x=x)[0]
    g = {i.name: numpy_helper.to_array(i) for i in _qdq_conv_graph(1.0).initializer}
    acc = (_conv_integer_reference(x, 128, g["w"], 1) + g["b"].reshape(1, -1, 1, 1))
    multiplier = (g["x_s"] * g["w_s"] / g["y_s"]).astype(np.float32).reshape(1, -1, 1, 1)
    expected = np.clip(np.round(acc.astype(np.float32) * multiplier), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(y, expected)


def test_qdq_conv_whose_bias_scale_is_not_x_scale_times_w_scale_stays_float(tmp_path):
    assert "ember_exact_sum" not in _imported_graph(tmp_path, _qdq_conv_graph(1.5))


def test_qdq_matmul_becomes_an_integer_matmul(tmp_path):
    rs = np.random.RandomState(7)
    b_s = (rs.rand(6) * 0.01 + 0.001).astype(np.float32)
    params = {"a_s": np.float32(0.03), "a_z": np.uint8(100),
              "b": rs.randint(-127, 128, (40, 6)).astype(np.int8), "b_s": b_s,
              "b_z": np.zeros(6, np.int8), "y_s": np.float32(0.1), "y_z": np.uint8(90)}
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["a", "a_s", "a_z"], ["da"]),
         helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["db"], axis=1),
         helper.make_node("MatMul", ["da", "db"], ["mm"]),
         helper.make_node("QuantizeLinear", ["mm", "y_s", "y_z"], ["y"])], "qdqmm",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [3, 40])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [3, 6])],
        [numpy_helper.from_array(v, k) for k, v in params.items()])
    a = rs.randint(0, 256, (3, 40)).astype(np.uint8)
    y = _run_graph(tmp_path, graph, a=a)[0]
    acc = (a.astype(np.int64) - 100) @ params["b"].astype(np.int64)
    multiplier = (params["a_s"] * b_s / params["y_s"]).astype(np.float32)
    expected = np.clip(np.round(acc.astype(np.float32) * multiplier) + 90, 0, 255)
    np.testing.assert_array_equal(y, expected.astype(np.uint8))
