"""Ember: an ahead-of-time ONNX compiler and a small runtime; this package drives both from Python
through the runtime's C ABI (ctypes, no compiled extension)."""
from . import libinfo  # noqa: F401
from ._ffi import (DataType, Device, EmberError, Object, PackedFunc, _init_api,  # noqa: F401
                   convert_to_packed_func, cpu, device, get_global_func, list_global_func_names,
                   register_func, remove_global_func)
from . import ndarray as nd  # noqa: F401
from . import runtime  # noqa: F401
from .compiler import Artifact, compile  # noqa: F401,A004
from .runtime import GraphModule, load_artifact, load_module  # noqa: F401

__version__ = "0.1.0"
