"""Integer convolutions (ConvInteger, QLinearConv, MatMulInteger) must come out exact, as ONNX
Runtime's integer kernels are. emberc runs them on the float32 kernels when the constant weights
bound every partial sum below 2^24 (float32 is then exact) and in int32 otherwise; both cases
are compared here with an int64 reference, bit for bit."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO
from test_compile import _dump_ir, _run_graph

sys.path.insert(0, os.path.join(REPO, "tests", "models"))
from gen_int8_convs import (CONV_CASES, CONV_FORMS, DW_CASES, depthwise_case,  # noqa: E402
                            model, qlinear_conv_case, refusing_kernels)


def _conv_integer_reference(x, x_zp, w, pad, group=1, stride=1, dilation=1):
    xs = np.pad(x.astype(np.int64) - x_zp, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ws = w.astype(np.int64)
    kh, kw = w.shape[2:]
    oh = (xs.shape[2] - dilation * (kh - 1) - 1) // stride + 1
    ow = (xs.shape[3] - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow), np.int64)
    ci, co = w.shape[1], w.shape[0] // group
    for g in range(group):
        xg, wg = xs[:, g * ci:(g + 1) * ci], ws[g * co:(g + 1) * co]
        for i in range(kh):
            for j in range(kw):
                window = xg[:, :, i * dilation:i * dilation + (oh - 1) * stride + 1:stride,
                            j * dilation:j * dilation + (ow - 1) * stride + 1:stride]
                out[:, g * co:(g + 1) * co] += np.einsum("oc,nchw->nohw", wg[:, :, i, j], window)
    return out


def _conv_integer_graph(name, x, w, x_zp, pad, group=1):
    """ConvInteger(x, w, x_zp) padded by `pad`, 3x3, its int32 output shaped for that."""
    out_shape = [1, w.shape[0], x.shape[2] + 2 * pad - 2, x.shape[3] + 2 * pad - 2]
    return helper.make_graph(
        [helper.make_node("ConvInteger", ["x", "w", "x_zp"], ["y"], pads=[pad] * 4,
                          group=group)], name,
        [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, out_shape)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(x_zp, "x_zp")])


def _run_conv_integer(tmp_path, x, x_zp, w, pad, group=1):
    graph = _conv_integer_graph("convint", x, w, np.uint8(x_zp), pad, group)
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


# How an integer conv shows in the imported graph: an integer conv an int8 kernel runs
# (ember_data_zero_point), or the exact float form (ember_exact_sum).
_INTEGER_CONV_MARKERS = ("ember_data_zero_point", "ember_exact_sum")


def _compile_with_dumps(tmp_path, graph):
    """Compiles graph with emberc --dump-ir; returns the dump directory."""
    return _dump_ir(tmp_path, model(graph))


def _imported_graph(tmp_path, graph):
    return (_compile_with_dumps(tmp_path, graph) / "00_import.txt").read_text()


def test_qdq_conv_becomes_an_integer_conv_as_onnx_runtime_runs_it(tmp_path):
    # The Conv's products run exactly (an integer conv where an int8 kernel takes it, else
    # ember_exact_sum on the float kernels) and the Relu became a Max with the output zero point,
    # in the integer domain.
    text = _imported_graph(tmp_path, _qdq_conv_graph(1.0))
    assert _INTEGER_CONV_MARKERS[0] in text or _INTEGER_CONV_MARKERS[1] in text
    assert "= Relu(" not in text and "= Max(%y_before_relu" in text
    x = np.random.RandomState(6).randint(0, 256, (1, 8, 6, 6)).astype(np.uint8)
    y = _run_graph(tmp_path, _qdq_conv_graph(1.0), x=x)[0]
    g = {i.name: numpy_helper.to_array(i) for i in _qdq_conv_graph(1.0).initializer}
    acc = (_conv_integer_reference(x, 128, g["w"], 1) + g["b"].reshape(1, -1, 1, 1))
    multiplier = (g["x_s"] * g["w_s"] / g["y_s"]).astype(np.float32).reshape(1, -1, 1, 1)
    expected = np.clip(np.round(acc.astype(np.float32) * multiplier), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(y, expected)


def test_qdq_conv_whose_bias_scale_is_not_x_scale_times_w_scale_stays_float(tmp_path):
    text = _imported_graph(tmp_path, _qdq_conv_graph(1.5))
    assert all(marker not in text for marker in _INTEGER_CONV_MARKERS)


def _qmatmul_params(rs, k, n, w_low, y_s):
    """QLinearMatMul operands: uint8 A at zero point 100, int8 B [k, n] from w_low with a scale per
    column, output zero point 90."""
    return {"a_s": np.float32(0.03), "a_z": np.uint8(100),
            "b": rs.randint(w_low, 128, (k, n)).astype(np.int8),
            "b_s": (rs.rand(n) * 0.01 + 0.001).astype(np.float32),
            "b_z": np.zeros(n, np.int8), "y_s": np.float32(y_s), "y_z": np.uint8(90)}


def _requantized_matmul(a, params):
    """The integer product of A and B requantized once, as QLinearMatMul defines it."""
    acc = (a.astype(np.int64) - 100) @ params["b"].astype(np.int64)
    multiplier = (params["a_s"] * params["b_s"] / params["y_s"]).astype(np.float32)
    return np.clip(np.round(acc.astype(np.float32) * multiplier) + 90, 0, 255).astype(np.uint8)


def test_qdq_matmul_becomes_an_integer_matmul(tmp_path):
    rs = np.random.RandomState(7)
    params = _qmatmul_params(rs, 40, 6, -127, 0.1)
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
    np.testing.assert_array_equal(y, _requantized_matmul(a, params))


# A product whose float result is not quantized again (a classifier's Gemm, a head's conv) still
# multiplies integers: float(sums + int32 bias) * float32(x_scale * w_scale) [+ a float bias], as
# ORT's QGemm runs it (bit for bit up to the float C's add); its weight stays 8-bit (the MatMul
# as a 1x1 conv of the int8 kernels where the target has one). transB, per-channel weights, a
# float C, several rows.
@pytest.mark.parametrize("trans_b,int_bias,rows", [(1, True, 1), (0, False, 1), (1, False, 5)],
                         ids=["transB_int_bias", "float_c", "rows5"])
def test_qdq_gemm_with_a_float_result_multiplies_integers(tmp_path, trans_b, int_bias, rows):
    rs = np.random.RandomState(8)
    k, n = 300, 70
    w = rs.randint(-127, 128, (n, k) if trans_b else (k, n)).astype(np.int8)
    w_s = (rs.rand(n) * 0.01 + 0.001).astype(np.float32)
    a_s, a_z = np.float32(0.03), np.uint8(120)
    params = {"a_s": a_s, "a_z": a_z, "w": w, "w_s": w_s, "w_z": np.zeros(n, np.int8)}
    nodes = [helper.make_node("DequantizeLinear", ["a", "a_s", "a_z"], ["da"]),
             helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["dw"],
                              axis=0 if trans_b else 1)]
    if int_bias:
        params.update(b=rs.randint(-9000, 9000, n).astype(np.int32), b_s=a_s * w_s,
                      b_z=np.zeros(n, np.int32))
        nodes.append(helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["c"], axis=0))
    else:
        params["c"] = rs.randn(n).astype(np.float32)
    nodes.append(helper.make_node("Gemm", ["da", "dw", "c"], ["y"], transB=trans_b))
    graph = helper.make_graph(
        nodes, "qdqgemm", [helper.make_tensor_value_info("a", TensorProto.UINT8, [rows, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])],
        [numpy_helper.from_array(v, name) for name, v in params.items()])
    # An int8 kernel multiplies (ember_data_zero_point) where the host has one; elsewhere the
    # shifted bytes are multiplied as floats, exact at these sizes, and the sums cast to int32.
    text = _imported_graph(tmp_path, graph)
    assert "= MatMulInteger(" not in text
    assert "ember_data_zero_point" in text or re.search(
        r"%(\w+) : float32\[\d+,\d+\] = MatMul\(.*= Cast\(%\1\) \{__dtype=\"int32\"", text, re.S)
    a = rs.randint(0, 256, (rows, k)).astype(np.uint8)
    y = _run_graph(tmp_path, graph, a=a)[0]
    acc = (a.astype(np.int64) - 120) @ (w.T if trans_b else w).astype(np.int64)
    scale = a_s * w_s  # float32 products, as the compiler forms them
    if int_bias:
        np.testing.assert_array_equal(y, (acc + params["b"]).astype(np.float32) * scale)
    else:  # the multiply and the add may fuse into one rounding
        np.testing.assert_allclose(y, acc.astype(np.float32) * scale + params["c"], rtol=1e-6,
                                   atol=1e-6)


# A QDQ Gemm whose result is quantized (ORT's quantize_static writes its Gemms so): the integer
# product requantized once, by float32(float32(a_scale * w_scale) / y_scale), as QLinearMatMul and
# ORT's QGemm do, bit for bit; a Relu before the QuantizeLinear is a max with the zero point.
# Scales 0.1, 1 and 0.2 make the multiplier exactly 0.5, so odd sums are ties, which scaling by
# 0.1 and then dividing by 0.2 (two roundings) would move for some of them.
@pytest.mark.parametrize("trans_b,relu", [(1, False), (0, True)], ids=["transB", "relu"])
def test_qdq_gemm_requantizes_once(tmp_path, trans_b, relu):
    rs = np.random.RandomState(12)
    k, n, rows = 24, 64, 32
    w = rs.randint(-1, 2, (n, k) if trans_b else (k, n)).astype(np.int8)
    a_s, y_s = np.float32(0.1), np.float32(0.2)
    params = {"a_s": a_s, "a_z": np.uint8(120), "w": w, "w_s": np.ones(n, np.float32),
              "w_z": np.zeros(n, np.int8), "b": rs.randint(-30, 30, n).astype(np.int32),
              "b_s": np.full(n, a_s, np.float32), "b_z": np.zeros(n, np.int32), "y_s": y_s,
              "y_z": np.uint8(128)}
    nodes = [helper.make_node("DequantizeLinear", ["a", "a_s", "a_z"], ["da"]),
             helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["dw"],
                              axis=0 if trans_b else 1),
             helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["db"], axis=0),
             helper.make_node("Gemm", ["da", "dw", "db"], ["g"], transB=trans_b)]
    if relu:
        nodes.append(helper.make_node("Relu", ["g"], ["r"]))
    nodes.append(helper.make_node("QuantizeLinear", ["r" if relu else "g", "y_s", "y_z"], ["y"]))
    graph = helper.make_graph(
        nodes, "qdqgemmq", [helper.make_tensor_value_info("a", TensorProto.UINT8, [rows, k])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [rows, n])],
        [numpy_helper.from_array(v, name) for name, v in params.items()])
    text = _imported_graph(tmp_path, graph)
    assert "ember_data_zero_point" in text and "= Gemm(" not in text
    a = rs.randint(110, 131, (rows, k)).astype(np.uint8)
    y = _run_graph(tmp_path, graph, a=a)[0]
    acc = (a.astype(np.int64) - 120) @ (w.T if trans_b else w).astype(np.int64) + params["b"]
    q = np.round(acc.astype(np.float32) * np.float32(0.5)) + 128
    assert np.sum(acc % 2 == 1) > 100  # ties to even
    np.testing.assert_array_equal(y, np.clip(q, 128 if relu else 0, 255).astype(np.uint8))


def test_qdq_conv_with_a_float_result_multiplies_integers(tmp_path):
    rs = np.random.RandomState(9)
    w = rs.randint(-127, 128, (12, 8, 3, 3)).astype(np.int8)
    w_s = (rs.rand(12) * 0.01 + 0.001).astype(np.float32)
    x_s = np.float32(0.02)
    params = {"x_s": x_s, "x_z": np.uint8(128), "w": w, "w_s": w_s, "w_z": np.zeros(12, np.int8),
              "b": rs.randint(-5000, 5000, 12).astype(np.int32), "b_s": x_s * w_s,
              "b_z": np.zeros(12, np.int32)}
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "x_s", "x_z"], ["dx"]),
         helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["dw"], axis=0),
         helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["db"], axis=0),
         helper.make_node("Conv", ["dx", "dw", "db"], ["y"], pads=[1] * 4)], "qdqhead",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8, 7, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12, 7, 9])],
        [numpy_helper.from_array(v, name) for name, v in params.items()])
    x = rs.randint(0, 256, (1, 8, 7, 9)).astype(np.uint8)
    y = _run_graph(tmp_path, graph, x=x)[0]
    acc = _conv_integer_reference(x, 128, w, 1) + params["b"].reshape(1, -1, 1, 1)
    expected = acc.astype(np.float32) * (x_s * w_s).reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(y, expected)


# Without an int8 kernel (AVX-512 without VNNI, full-range weights) a QLinearMatMul runs exactly on
# the float dense kernel, its requantization in the kernel's epilogue: the dense schedule stores
# the bytes itself (it took only float32 results, so such a product fell to the default lowering,
# 100x slower). Exact either way.
def test_qlinear_matmul_on_the_float_path_keeps_the_dense_kernel(tmp_path):
    rs = np.random.RandomState(11)
    params = _qmatmul_params(rs, 128, 96, -128, 0.2)
    graph = helper.make_graph(
        [helper.make_node("QLinearMatMul", ["a", "a_s", "a_z", "b", "b_s", "b_z", "y_s", "y_z"],
                          ["y"])], "qmmfloat",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [40, 128])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [40, 96])],
        [numpy_helper.from_array(v, k) for k, v in params.items()])
    a = rs.randint(0, 256, (40, 128)).astype(np.uint8)
    runs_here = _host_has("avx512bw")
    y, plans = _compile_and_run(tmp_path, graph, _WITHOUT_VNNI, run=runs_here, a=a)
    loops = (tmp_path / ("ir" + _WITHOUT_VNNI.replace(" ", "_").replace("=", "_")) /
             "kernels.loop.txt").read_text()
    assert 'ember_plan_kernel="dense_avx512"' in plans and "accdm0_0" in loops
    if not runs_here:
        pytest.skip("the plan is checked; running it needs a machine with avx512bw")
    np.testing.assert_array_equal(y, _requantized_matmul(a, params))


# ORT's quantize_dynamic on a transformer: DynamicQuantizeLinear + MatMulInteger by a constant
# weight; the zero point comes at run time. The MatMul runs as an int8 conv, exactly.
def test_dynamically_quantized_matmul_runs_on_the_int8_kernels(tmp_path):
    if not _host_has_vnni():
        pytest.skip("this machine has no AVX-512 VNNI")
    rs = np.random.RandomState(10)
    w = rs.randint(0, 256, (64, 48)).astype(np.uint8)
    graph = helper.make_graph(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
         helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["y"])], "dynmm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 64])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 6, 48])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.uint8(131), "wz")])
    x = rs.randn(2, 6, 64).astype(np.float32)
    y, plans = _compile_and_run(tmp_path, graph, "llvm", x=x)
    assert _int8_conv_planned(plans, "avx512vnni")
    lo, hi = min(x.min(), 0), max(x.max(), 0)
    scale = np.float32((hi - lo) / 255)
    zp = np.clip(np.round(-lo / scale), 0, 255)
    xq = np.clip(np.round(x / scale) + zp, 0, 255)
    expected = (xq.astype(np.int64) - int(zp)) @ (w.astype(np.int64) - 131)
    np.testing.assert_array_equal(y, expected)


# The int8 kernels (conv2d_int8_avx512vnni: u8 x s8 dot products into int32 with output channels
# in the lanes, the requantization in its epilogue; conv2d_int8_pixels_avx512vnni, with output
# pixels in the lanes; the strategy picks one per conv) against the exact float path of the same
# machine without VNNI and the integer definition, bit for bit: strides 1 to 3, pads, 1x1 to 7x7,
# channels that fill no vector, int8 data and outputs, planes that fill no tile, ConvInteger's
# int32 result.


def _int8_conv_planned(plans, isa):
    """Whether an int8 conv kernel of `isa` (either form) was planned."""
    return any('ember_plan_kernel="%s_%s"' % (form, isa) in plans for form in CONV_FORMS)


# This machine's ISA without VNNI: its strategy keeps the exact float path for convs whose weights
# use the whole int8 range (its vpmaddubsw kernel takes only weights whose pairs fit int16).
_WITHOUT_VNNI = "llvm -mcpu=skylake-avx512"
# An x86-64 without AVX2: no int8 kernel at all, the depthwise convs too on the float path.
_WITHOUT_INT8_KERNELS = "llvm -mcpu=x86-64-v2"


def _host_has(flag):
    """Whether this machine's CPU lists `flag` (as /proc/cpuinfo spells it)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and flag in line.split() for line in f)
    except OSError:
        return False


def _host_has_vnni():
    return _host_has("avx512_vnni")


def _compile_and_run(tmp_path, graph, target, schedule=None, run=True, **inputs):
    """The graph's outputs compiled for `target` (with `schedule`, that table entry forced:
    EMBER_SCHEDULE; None for them without `run`), and the kernel each conv was planned."""
    from ember import compiler
    emberc = compiler.find_emberc()
    if emberc is None:
        pytest.skip("emberc not built")
    name = target.replace(" ", "_").replace("=", "_")
    path = tmp_path / (graph.name + ".onnx")
    path.write_bytes(model(graph).SerializeToString())
    out, ir = tmp_path / ("a" + name), tmp_path / ("ir" + name)
    env = dict(os.environ, EMBER_SCHEDULE=schedule) if schedule else None
    subprocess.run([emberc, "compile", str(path), "-o", str(out), "--target", target,
                    "--dump-ir", str(ir)], check=True, stdout=subprocess.DEVNULL, env=env)
    # The dump is numbered by the pass's position in the pipeline; find it by name.
    (plans,) = [f.read_text() for f in ir.glob("*_plan_kernels.txt")]
    if not run:
        return None, plans
    import ember
    gmod = ember.load_artifact(str(out))
    gmod.set_input(**inputs)
    gmod.run()
    return gmod.get_output(0).numpy(), plans


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "seed%d" % c[0])
def test_int8_kernel_is_bit_identical_to_the_exact_float_path(tmp_path, case):
    if not _host_has_vnni():
        pytest.skip("this machine has no AVX-512 VNNI")
    graph, x, expected = qlinear_conv_case(*case)
    y, plans = _compile_and_run(tmp_path, graph, "llvm", x=x)
    y_float, plans_float = _compile_and_run(tmp_path, graph, _WITHOUT_VNNI, x=x)
    assert _int8_conv_planned(plans, "avx512vnni") and "conv2d_int8" not in plans_float
    assert "ember_exact_sum" in plans_float
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(y_float, expected)


# Each form forced on every case, whichever the strategy would pick.
@pytest.mark.parametrize("form", CONV_FORMS)
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "seed%d" % c[0])
def test_both_int8_conv_forms_are_exact_on_every_case(tmp_path, form, case):
    if not _host_has_vnni():
        pytest.skip("this machine has no AVX-512 VNNI")
    graph, x, expected = qlinear_conv_case(*case)
    kernel = form + "_avx512vnni"
    y, plans = _compile_and_run(tmp_path, graph, "llvm", schedule=kernel, x=x)
    assert 'ember_plan_kernel="%s"' % kernel in plans
    np.testing.assert_array_equal(y, expected)


# The int8 depthwise kernel (MobileNet's 3x3 depthwise convs between int8 convs), the same way:
# strides 1 and 2, pads, 5x5, channels that fill no vector, int8 data and outputs, no bias.
_DW_INT8_KERNEL = "depthwise_conv2d_int8_avx512"


@pytest.mark.parametrize("case", DW_CASES, ids=lambda c: "seed%d" % c[0])
def test_int8_depthwise_kernel_is_bit_identical_to_the_exact_float_path(tmp_path, case):
    if not _host_has_vnni():
        pytest.skip("this machine has no AVX-512 VNNI")
    graph, x, expected = depthwise_case(case)
    y, plans = _compile_and_run(tmp_path, graph, "llvm", x=x)
    y_float, plans_float = _compile_and_run(tmp_path, graph, _WITHOUT_INT8_KERNELS, x=x)
    assert _DW_INT8_KERNEL in plans and _DW_INT8_KERNEL not in plans_float
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(y_float, expected)


def _chained(first, second, name):
    """One graph: QLinearConv graph `first`, then the conv of graph `second` on its output."""
    renamed = {n: "second_" + n for n in [t.name for t in second.initializer] + ["y"]}
    renamed["x"] = "mid"
    for t in second.initializer:
        t.name = renamed[t.name]
    node = second.node[0]
    node.input[:] = [renamed[n] for n in node.input]
    node.output[:] = ["y"]
    first.node[0].output[:] = ["mid"]
    first.node.extend([node])
    first.initializer.extend(second.initializer)
    first.output[0].CopyFrom(second.output[0])
    first.name = name
    return first


def _dense_then_depthwise(seed, channels, hw, k, stride, mid=np.uint8, w_range=(-128, 127)):
    """A 1x1 QLinearConv into `channels` (weights in w_range, output of type `mid`) and a
    depthwise QLinearConv on its output, one graph."""
    dense, x, _ = qlinear_conv_case(seed, 16, channels, hw, 1, 1, 0, out=mid, w_range=w_range)
    dw, _, _ = depthwise_case((seed + 1, channels, hw, k, stride, k // 2, mid, np.uint8, True))
    return _chained(dense, dw, "dense_dw%d" % seed), x


# A conv whose data another int8 conv wrote blocked reads it where it is when it needs no padding
# and no byte flip (uint8 data for vpdpbusd: MobileNet's 1x1 convs), instead of copying it into
# its own layout first; padded or int8 data is still copied. Bit for bit as the exact float path
# either way.
@pytest.mark.parametrize("k,pad,stride,mid,in_place", [(1, 0, 1, np.uint8, True),
                                                       (3, 0, 2, np.uint8, True),
                                                       (3, 1, 1, np.uint8, False),
                                                       (1, 0, 1, np.int8, False)])
def test_int8_conv_reads_blocked_unpadded_data_in_place(tmp_path, k, pad, stride, mid, in_place):
    if not _host_has_vnni():
        pytest.skip("this machine has no AVX-512 VNNI")
    first, x, _ = qlinear_conv_case(70 + k, 16, 64, (9, 11), 1, 1, 0, out=mid)
    second, _, _ = qlinear_conv_case(71 + k, 64, 48, (9, 11), k, stride, pad, data=mid)
    graph = _chained(first, second, "dense_dense%d" % k)
    y, plans = _compile_and_run(tmp_path, graph, "llvm", x=x)
    y_float, _ = _compile_and_run(tmp_path, graph, _WITHOUT_INT8_KERNELS, x=x)
    second_plan = [line for line in plans.splitlines() if "%second_" in line and "= Conv(" in line]
    assert len(second_plan) == 1 and 'data_layout="NCHW16c"' in second_plan[0]
    loops = (tmp_path / "irllvm" / "kernels.loop.txt").read_text()
    second_kernel = [f for f in loops.split("\nfunc ") if "second_b" in f.splitlines()[0]]
    assert len(second_kernel) == 1 and ("_u8_ws" not in second_kernel[0]) == in_place
    np.testing.assert_array_equal(y, y_float)


# Between int8 kernels that work channel-blocked, the depthwise conv runs blocked too (its
# channels in the lanes: small planes fill them), bit for bit as the exact float path: with
# VNNI four taps per vpdpbusd (its bytes on the stack: "_quad_plane"; AVX-512 VNNI in NCHW16c,
# AVX-VNNI in NCHW8c), without it one tap per float multiply-add ("_blocked_plane"; AVX-512BW,
# whose 1x1 kernel takes weights whose pairs of products fit int16). Random zero points, uint8
# and int8 data between the convs (int8 flipped to the dot's unsigned bytes).
_BLOCKED_DW = [
    # target, CPU flag, kernel, plane, layout, weights of the 1x1 conv
    ("llvm", "avx512_vnni", "depthwise_conv2d_int8_avx512vnni", "_quad_plane", "NCHW16c",
     (-128, 127)),
    ("llvm -mcpu=alderlake", "avx_vnni", "depthwise_conv2d_int8_avxvnni", "_quad_plane", "NCHW8c",
     (-128, 127)),
    ("llvm -mcpu=skylake-avx512", "avx512bw", "depthwise_conv2d_int8_avx512", "_blocked_plane",
     "NCHW16c", (-64, 64)),
]


@pytest.mark.parametrize("target,flag,kernel,plane,layout,w_range", _BLOCKED_DW,
                         ids=["avx512vnni", "avxvnni", "avx512bw"])
@pytest.mark.parametrize("hw,k,stride,mid", [((7, 7), 3, 1, np.uint8), ((15, 13), 3, 2, np.uint8),
                                             ((9, 10), 5, 1, np.int8), ((12, 12), 7, 1, np.uint8),
                                             ((11, 20), 3, 2, np.int8)])
def test_int8_depthwise_between_blocked_int8_convs_runs_blocked_and_exact(tmp_path, target, flag,
                                                                          kernel, plane, layout,
                                                                          w_range, hw, k, stride,
                                                                          mid):
    if not _host_has(flag):
        pytest.skip("this machine has no " + flag)
    graph, x = _dense_then_depthwise(50 + k + stride, 32, hw, k, stride, mid, w_range)
    y, plans = _compile_and_run(tmp_path, graph, target, x=x)
    y_float, _ = _compile_and_run(tmp_path, graph, _WITHOUT_INT8_KERNELS, x=x)
    dw_plan = [line for line in plans.splitlines() if "group=32" in line]
    assert len(dw_plan) == 1 and 'ember_plan_kernel="%s"' % kernel in dw_plan[0]
    assert 'data_layout="%s"' % layout in dw_plan[0] and 'out_layout="%s"' % layout in dw_plan[0]
    # ... and the blocked kernel took it (its plane on the stack), 7x7 taps past the registers too.
    loops = (tmp_path / ("ir" + target.replace(" ", "_").replace("=", "_")) / "kernels.loop.txt")
    assert plane in loops.read_text()
    np.testing.assert_array_equal(y, y_float)


# The int8 kernels of x86 machines without AVX-512 VNNI, each against the integer definition and
# the exact float path bit for bit: AVX-VNNI's vpdpbusd at 8 lanes for any int8 weights; vpmaddubsw
# (pairs of products saturated to int16) at 8 and 16 lanes only for weights whose pairs fit int16,
# as the quantizer writes them (7-bit magnitudes: here every weight in [-64, 64]).
_X86_INT8_KERNELS = [
    # ISA suffix of the kernels, target, CPU flag the host needs, weight range
    ("avxvnni", "llvm -mcpu=alderlake", "avx_vnni", (-128, 127)),
    ("avx2", "llvm -mcpu=haswell", "avx2", (-64, 64)),
    ("avx512bw", "llvm -mcpu=skylake-avx512", "avx512bw", (-64, 64)),
]


@pytest.mark.parametrize("isa,target,flag,w_range", _X86_INT8_KERNELS,
                         ids=[k[0] for k in _X86_INT8_KERNELS])
@pytest.mark.parametrize("case", CONV_CASES[:4] + CONV_CASES[6:], ids=lambda c: "seed%d" % c[0])
def test_x86_int8_kernels_without_avx512_vnni_are_exact(tmp_path, isa, target, flag, w_range,
                                                         case):
    if not _host_has(flag):
        pytest.skip("this machine has no " + flag)
    graph, x, expected = qlinear_conv_case(*case, w_range=w_range)
    y, plans = _compile_and_run(tmp_path, graph, target, x=x)
    assert _int8_conv_planned(plans, isa)
    np.testing.assert_array_equal(y, expected)


# The ARM kernels forced on this machine (their dots by definition here; tests/cross/run_cross.sh
# runs them as sdot / usdot, or smull / vmull + sadalp / vpadal without a dot, under qemu): the
# signed ones read the data less 128, whose 128 * sum(w) the bias carries; all exact. Forced
# entries still need a dot on the target. The widening dot's channels form sums pairs of products
# in int16, so it refuses weights with two -128 in such a pair (conv_seed14's); the conv is still
# exact on the path the strategy takes instead.
@pytest.mark.parametrize("form", CONV_FORMS)
@pytest.mark.parametrize("isa", ["neon_dotprod", "neon_i8mm", "neon", "neon32"])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "seed%d" % c[0])
def test_aarch64_int8_kernels_forced_on_the_host_are_exact(tmp_path, form, isa, case):
    if not (_host_has_vnni() or _host_has("avx_vnni")):
        pytest.skip("this machine has no 8-bit dot product (AVX-512 VNNI, AVX-VNNI)")
    kernel = "%s_%s" % (form, isa)
    graph, x, expected = qlinear_conv_case(*case)
    y, plans = _compile_and_run(tmp_path, graph, "llvm", schedule=kernel, x=x)
    refused = kernel in refusing_kernels(graph)
    assert (kernel in plans) != refused
    np.testing.assert_array_equal(y, expected)


def test_avx2_int8_depthwise_kernel_is_exact(tmp_path):
    if not _host_has("avx2"):
        pytest.skip("this machine has no avx2")
    for case in DW_CASES[1:3]:
        graph, x, expected = depthwise_case(case)
        y, plans = _compile_and_run(tmp_path, graph, "llvm -mcpu=haswell", x=x)
        assert "depthwise_conv2d_int8_avx2" in plans
        np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("pair,taken", [((64, 64), True), ((-64, -64), True), ((127, 2), False),
                                        ((-128, -1), False), ((127, -128), True)])
def test_saturating_pair_kernel_only_where_no_pair_leaves_int16(tmp_path, pair, taken):
    # 255 * 128 fits int16, 255 * 129 does not: a pair past it would saturate in vpmaddubsw, so
    # the strategy leaves the conv on the exact float path. ConvInteger's int32 output shows a
    # saturated pair as it is.
    if not _host_has("avx2"):
        pytest.skip("this machine has no avx2")
    rs = np.random.RandomState(40)
    x = rs.randint(0, 256, (1, 8, 6, 6)).astype(np.uint8)
    w = rs.randint(-2, 3, (16, 8, 3, 3)).astype(np.int8)
    w[5, 2:4, 1, 1] = pair  # input channels 2 and 3: one pair of a quad
    x[0, 2:4] = 255
    graph = _conv_integer_graph("pairs", x, w, np.uint8(0), 1)
    y, plans = _compile_and_run(tmp_path, graph, "llvm -mcpu=haswell", x=x)
    np.testing.assert_array_equal(y, _conv_integer_reference(x, 0, w, 1))
    assert _int8_conv_planned(plans, "avx2") == taken


# Dynamically quantized models (ORT's quantize_dynamic: DynamicQuantizeLinear + ConvInteger) give
# the conv its data zero point at run time: the int8 kernels pad with it and subtract zp * sum(w)
# per output channel in registers. Here the zero point is a graph input; dilated convs too.
_RUN_TIME_ZP_CASES = [
    # seed, c, oc, (h, w), k, stride, pad, dilation, data
    (60, 16, 32, (10, 12), 3, 1, 1, 1, np.uint8),
    (61, 17, 40, (7, 9), 1, 1, 0, 1, np.uint8),      # the pixels-in-lanes form
    (62, 8, 16, (9, 11), 3, 2, 1, 1, np.int8),       # int8 data and zero point
    (63, 16, 32, (12, 12), 3, 1, 2, 2, np.uint8),    # dilation 2, as IS-Net's
    (64, 5, 24, (13, 10), 3, 1, 4, 4, np.uint8),     # dilation 4, channels that fill no quad
]


@pytest.mark.parametrize("isa,target,flag,w_range", _X86_INT8_KERNELS[1:2] + [
    ("avx512vnni", "llvm", "avx512_vnni", (-128, 127))], ids=["avx2", "host"])
@pytest.mark.parametrize("form", CONV_FORMS)
@pytest.mark.parametrize("case", _RUN_TIME_ZP_CASES, ids=lambda c: "seed%d" % c[0])
def test_int8_kernels_take_a_zero_point_computed_at_run_time(tmp_path, isa, target, flag, w_range,
                                                             form, case):
    if not _host_has(flag):
        pytest.skip("this machine has no " + flag)
    seed, c, oc, hw, k, stride, pad, dilation, data = case
    rs = np.random.RandomState(seed)
    info = np.iinfo(data)
    x = rs.randint(info.min, info.max + 1, (1, c) + hw).astype(data)
    w = rs.randint(w_range[0], w_range[1] + 1, (oc, c, k, k)).astype(np.int8)
    zp = np.array(rs.randint(info.min, info.max + 1), dtype=data)
    oh = (hw[0] + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    ow = (hw[1] + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    elem = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}[data]
    graph = helper.make_graph(
        [helper.make_node("ConvInteger", ["x", "w", "x_zp"], ["y"], pads=[pad] * 4,
                          strides=[stride] * 2, dilations=[dilation] * 2)], "rtzp%d" % seed,
        [helper.make_tensor_value_info("x", elem, list(x.shape)),
         helper.make_tensor_value_info("x_zp", elem, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, oc, oh, ow])],
        [numpy_helper.from_array(w, "w")])
    kernel = "%s_%s" % (form, isa)
    y, plans = _compile_and_run(tmp_path, graph, target, schedule=kernel, x=x, x_zp=zp)
    np.testing.assert_array_equal(
        y, _conv_integer_reference(x, int(zp), w, pad, stride=stride, dilation=dilation))
    assert kernel in plans
    # Dynamically quantized convs write NCHW: the whole-tensor min / max of the next
    # DynamicQuantizeLinear would transform a blocked output back at once.
    assert "out_layout" not in plans


@pytest.mark.parametrize("w_zp", [131, 3, 0, -1], ids=["zp131", "zp3", "zp0", "per_channel"])
def test_uint8_weights_past_int8_run_as_one_int8_conv(tmp_path, w_zp):
    # ORT's dynamic quantization (IS-Net's) writes uint8 weights with a zero point: w - zp spans
    # up to 255 values of [-255, 255]. The int8 conv takes w - zp - c, c per output channel
    # bringing the channel into int8, and c times each pixel's window sum of x - x_zp is added
    # (a channel sum and a ones conv, exact in float32): one int8 conv whatever the zero point.
    if not _host_has("avx512_vnni"):
        pytest.skip("this machine has no AVX-512 VNNI")
    rs = np.random.RandomState(70 + w_zp)
    x = rs.randint(0, 256, (1, 16, 9, 10)).astype(np.uint8)
    w = rs.randint(0, 256, (24, 16, 3, 3)).astype(np.uint8)
    w[0, 0, 0, 0], w[1, 0, 0, 0] = 0, 255
    zp = np.uint8(rs.randint(0, 256))
    # Per output channel (-1): zero points far apart, so each channel takes its own offset.
    w_zps = np.uint8(w_zp) if w_zp >= 0 else rs.randint(0, 256, 24).astype(np.uint8)
    graph = helper.make_graph(
        [helper.make_node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], pads=[1] * 4)],
        "wzp%d" % w_zp,
        [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape)),
         helper.make_tensor_value_info("x_zp", TensorProto.UINT8, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 24, 9, 10])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_zps, "w_zp")])
    y, plans = _compile_and_run(tmp_path, graph, "llvm", x=x, x_zp=zp)
    shifted = w.astype(np.int64) - w_zps.astype(np.int64).reshape(-1, 1, 1, 1)
    np.testing.assert_array_equal(y, _conv_integer_reference(x, int(zp), shifted, 1))
    assert len(re.findall(r'ember_plan_kernel="conv2d_int8_(pixels_)?avx512vnni"', plans)) == 1
    assert "_window_ones" in plans


def test_int8_kernel_runs_conv_integer_to_int32(tmp_path):
    if not _host_has_vnni():
        pytest.skip("this machine has no AVX-512 VNNI")
    rs = np.random.RandomState(17)
    x = rs.randint(0, 256, (1, 64, 12, 12)).astype(np.uint8)
    w = rs.randint(-128, 128, (32, 64, 3, 3)).astype(np.int8)
    graph = _conv_integer_graph("convint8", x, w, np.uint8(131), 1)
    y, plans = _compile_and_run(tmp_path, graph, "llvm", x=x)
    assert _int8_conv_planned(plans, "avx512vnni")
    np.testing.assert_array_equal(y, _conv_integer_reference(x, 131, w, 1))


def test_int8_kernel_leaves_grouped_convs_to_the_float_path(tmp_path):
    # Groups are not the kernel's (uint8 weights past int8: the two-conv test above).
    rs = np.random.RandomState(18)
    x = rs.randint(0, 256, (1, 16, 8, 8)).astype(np.uint8)
    w = rs.randint(-20, 21, (16, 8, 3, 3)).astype(np.int8)
    graph = helper.make_graph(
        [helper.make_node("ConvInteger", ["x", "w", "x_zp"], ["y"], group=2)], "convint_g2",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 16, 6, 6])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.uint8(3), "x_zp")])
    y, plans = _compile_and_run(tmp_path, graph, "llvm", x=x)
    assert "conv2d_int8" not in plans
    np.testing.assert_array_equal(y, _conv_integer_reference(x, 3, w, 0, group=2))


# ResNet's QDQ stem: DequantizeLinear -> MaxPool -> QuantizeLinear. With a positive scale the
# dequantization never decreases, so the pool takes the bytes (fuse_qdq.cc) and the dequantize /
# requantize pair runs on its output in the pool kernel's epilogue; a negative scale reverses the
# order, and the pool stays on the floats. Either way, ONNX's result bit for bit.
@pytest.mark.parametrize("dtype,scale,out_scale", [(np.uint8, 0.05, 0.05), (np.int8, 0.05, 0.07),
                                                   (np.uint8, -0.05, 0.05)],
                         ids=["uint8", "int8_requantized", "negative_scale"])
def test_maxpool_between_dequantize_and_quantize_matches_onnx(tmp_path, dtype, scale, out_scale):
    rs = np.random.RandomState(40)
    info = np.iinfo(dtype)
    x = rs.randint(info.min, info.max + 1, (1, 16, 23, 22)).astype(dtype)
    s, z = np.float32(scale), dtype(7)
    s_out = np.float32(out_scale)
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
         helper.make_node("MaxPool", ["xf"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1, 1, 1, 1]),
         helper.make_node("QuantizeLinear", ["p", "s_out", "z"], ["y"])], "qdq_maxpool",
        [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", elem, [1, 16, 12, 11])],
        [numpy_helper.from_array(s, "s"), numpy_helper.from_array(z, "z"),
         numpy_helper.from_array(s_out, "s_out")])
    text = _imported_graph(tmp_path, graph)
    pools_bytes = "= MaxPool(%x)" in text
    assert pools_bytes == (scale > 0) and ("= MaxPool(%xf)" in text) == (scale < 0)
    y, _ = _compile_and_run(tmp_path, graph, "llvm", x=x)
    xf = (x.astype(np.float32) - np.float32(z)) * s
    xp = np.pad(xf, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    pooled = np.full((1, 16, 12, 11), -np.inf, np.float32)
    for i in range(3):
        for j in range(3):
            pooled = np.maximum(pooled, xp[:, :, i:i + 23:2, j:j + 21:2])
    expected = np.clip(np.round(pooled / s_out) + np.float32(z), info.min, info.max).astype(dtype)
    np.testing.assert_array_equal(y, expected)


def _functions(ir_text):
    """{function name: its text} of an LLVM IR module."""
    parts = ir_text.split("\ndefine ")[1:]
    return {p[p.index("@") + 1:p.index("(")]: p for p in parts}


def test_only_the_arithmetic_before_a_rounding_is_exact(tmp_path):
    # Exact float arithmetic (libm's exp, no contraction) where a rounding follows: the Exp that
    # QuantizeLinear rounds. A head after the last quantization (Sigmoid -> output) keeps fast
    # arithmetic: its exp is written out and vectorises instead of calling expf per element.
    graph = helper.make_graph(
        [helper.make_node("Exp", ["x"], ["e"]),
         helper.make_node("QuantizeLinear", ["e", "scale", "zp"], ["q"]),
         helper.make_node("Sigmoid", ["x"], ["s"])], "rounding_and_head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("q", TensorProto.UINT8, [1, 64]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 64])],
        [numpy_helper.from_array(np.float32(0.02), "scale"),
         numpy_helper.from_array(np.uint8(3), "zp")])
    functions = _functions((_compile_with_dumps(tmp_path, graph) / "kernels.opt.ll").read_text())
    rounding = [t for n, t in functions.items() if "round" in n]
    head = [t for n, t in functions.items() if "sigmoid" in n]
    assert rounding and head, sorted(functions)
    assert any("@llvm.exp." in t for t in rounding)
    assert not any("@llvm.exp." in t or "@expf" in t for t in head)
    x = np.random.RandomState(8).uniform(-4, 1.5, (1, 64)).astype(np.float32)
    q, s = _run_graph(tmp_path, graph, x=x)
    expected_q = np.clip(np.round(np.exp(x) / np.float32(0.02)) + 3, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(q, expected_q)
    np.testing.assert_allclose(s, 1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6)
