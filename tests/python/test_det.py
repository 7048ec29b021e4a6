"""Det (opset 11) against numpy's determinant: batched matrices of several sizes, a singular one,
a row permutation (sign), a matrix that needs pivoting (zero on the diagonal), 1 x 1 and float64."""
import numpy as np
import pytest
from onnx import TensorProto, helper, mapping

from test_compile import _run_graph

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("shape,dtype", [((3, 2, 5, 5), np.float32), ((4, 4), np.float32),
                                         ((2, 1, 1), np.float32), ((3, 7, 7), np.float64)])
def test_det_matches_numpy(tmp_path, shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    flat = x.reshape((-1,) + shape[-2:])
    if flat.shape[0] > 2 and shape[-1] > 2:
        flat[0, :, 2] = 2 * flat[0, :, 0]  # singular
        flat[1] = np.eye(shape[-1])[np.roll(np.arange(shape[-1]), 1)]  # a cycle: det +-1
        flat[2, 0, 0] = 0  # the first pivot must come from another row
    elem = mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]
    graph = helper.make_graph([helper.make_node("Det", ["x"], ["y"])], "det",
                              [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, shape[:-2])])
    (y,) = _run_graph(tmp_path, graph, opset=11, x=x)
    want = np.linalg.det(x.astype(np.float64))
    np.testing.assert_allclose(y, want, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5)
