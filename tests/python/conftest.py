"""pytest setup: import the in-tree package (python/ember) and build the tiny C test kernels.

Run: /usr/bin/python3 -m pytest tests/python   (EMBER_LIBRARY_PATH picks a build other than build/).
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

import ember  # noqa: E402

KERNELS_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels.c")


@pytest.fixture(scope="session")
def kernel_lib(tmp_path_factory):
    """Path of a kernel library built from kernels.c with the system C compiler."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build tests/python/kernels.c")
    out = str(tmp_path_factory.mktemp("kernels") / "lib.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", os.path.join(REPO, "include"), KERNELS_C,
                    "-o", out], check=True)
    return out


def write_params(path, named_arrays):
    """params.bin in the format of DESIGN.md (TVM's NDArray list)."""
    out = [struct.pack("<QQQ", 0xF7E58D4F05049CB7, 0, len(named_arrays))]
    for name in named_arrays:
        raw = name.encode()
        out.append(struct.pack("<Q", len(raw)) + raw)
    out.append(struct.pack("<Q", len(named_arrays)))
    for arr in named_arrays.values():
        arr = np.ascontiguousarray(arr)
        dtype = ember.DataType(arr.dtype)
        out.append(struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, arr.ndim, dtype.code,
                               dtype.bits, dtype.lanes))
        out.append(struct.pack("<%dq" % arr.ndim, *arr.shape))
        out.append(struct.pack("<q", arr.nbytes) + arr.tobytes())
    with open(path, "wb") as f:
        f.write(b"".join(out))


@pytest.fixture(scope="session")
def add_relu_artifact(tmp_path_factory, kernel_lib):
    """A hand-written artifact: out0 = relu(x + w), out1 = x + w, with w a param of 4 floats."""
    d = tmp_path_factory.mktemp("artifact")
    shutil.copyfile(kernel_lib, str(d / "lib.so"))
    graph = {
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {"op": "null", "name": "w", "inputs": []},
            {"op": "tvm_op", "name": "add0", "inputs": [[0, 0, 0], [1, 0, 0]],
             "attrs": {"func_name": "add_f32", "num_inputs": "2", "num_outputs": "1",
                       "flatten_data": "0"}},
            {"op": "tvm_op", "name": "relu0", "inputs": [[2, 0, 0]],
             "attrs": {"func_name": "relu_f32", "num_inputs": "1", "num_outputs": "1",
                       "flatten_data": "0"}},
        ],
        "arg_nodes": [0, 1],
        "node_row_ptr": [0, 1, 2, 3, 4],
        "heads": [[3, 0, 0], [2, 0, 0]],
        "attrs": {
            "dltype": ["list_str", ["float32"] * 4],
            "shape": ["list_shape", [[2, 2]] * 4],
            "storage_id": ["list_int", [0, 1, 2, 3]],
        },
    }
    (d / "graph.json").write_text(json.dumps(graph))
    write_params(str(d / "params.bin"), {"w": np.array([[1, -2], [3, -4]], dtype="float32")})
    return str(d)
