"""Ember: an ahead-of-time ONNX compiler and a small runtime; this package drives both from Python
through the runtime's C ABI (ctypes, no compiled extension)."""
from . import libinfo
from ._ffi import (DataType, Device, EmberError, Object, PackedFunc, _init_api,
                   convert_to_packed_func, cpu, device, get_global_func, list_global_func_names,
                   register_func, remove_global_func)
from . import ndarray as nd
from . import runtime
from .compiler import Artifact, compile  # noqa: A004 - the public name shadows the builtin
from .quantize import quantize
from .runtime import ExecutorPool, GraphModule, load_artifact, load_module

__version__ = "0.1.0"

__all__ = ["libinfo", "DataType", "Device", "EmberError", "Object", "PackedFunc", "_init_api",
           "convert_to_packed_func", "cpu", "device", "get_global_func", "list_global_func_names",
           "register_func", "remove_global_func", "nd", "runtime", "Artifact", "compile",
           "quantize", "ExecutorPool", "GraphModule", "load_artifact", "load_module"]
