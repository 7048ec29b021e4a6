"""Integer Div and Mod on every input: a zero divisor and MIN / -1 are undefined in LLVM and trap
on x86 (a uint8 Div of data holding a zero killed ember-run with SIGFPE). Ember defines them as
numpy does for the common case: a quotient by zero is 0, a remainder by zero is 0, and MIN / -1
wraps to MIN. Every other element is checked against numpy."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from test_compile import _run_graph

ELEM = {np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.uint8: TensorProto.UINT8,
        np.int8: TensorProto.INT8}


def _divide(tmp_path, dtype, a, b, fmod):
    t = ELEM[dtype]
    graph = helper.make_graph(
        [helper.make_node("Div", ["a", "b"], ["q"]),
         helper.make_node("Mod", ["a", "b"], ["r"], fmod=fmod)],
        "int_div_%s_%d" % (np.dtype(dtype).name, fmod),
        [helper.make_tensor_value_info("a", t, list(a.shape)),
         helper.make_tensor_value_info("b", t, list(b.shape))],
        [helper.make_tensor_value_info("q", t, list(a.shape)),
         helper.make_tensor_value_info("r", t, list(a.shape))])
    return _run_graph(tmp_path, graph, opset=14, a=a, b=b)  # int8 and uint8 Div: opset 14


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.uint8])
@pytest.mark.parametrize("fmod", [0, 1])
def test_division_by_zero_and_overflow_are_defined(tmp_path, dtype, fmod):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    a = rng.integers(info.min, info.max, size=64, dtype=dtype, endpoint=True)
    b = rng.integers(-5 if info.min < 0 else 0, 6, size=64, dtype=dtype)
    b[:8] = 0  # zeros, at least eight of them
    if info.min < 0:
        a[8], b[8] = info.min, -1  # the one signed overflow
    q, r = _divide(tmp_path, dtype, a, b, fmod)
    zero = b == 0
    assert (q[zero] == 0).all() and (r[zero] == 0).all()
    overflow = np.zeros(a.shape, dtype=bool)
    if info.min < 0:
        overflow[8] = True
        assert q[8] == info.min and r[8] == 0
    for k in np.flatnonzero(~zero & ~overflow):
        x, y = int(a[k]), int(b[k])  # exact, in Python's integers
        want_q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # Div truncates
        want_r = x - want_q * y if fmod else x % y  # fmod: the dividend's sign, else the divisor's
        assert (int(q[k]), int(r[k])) == (want_q, want_r), (x, y)
