"""ctypes bindings of Ember's C ABI (include/ember/runtime/c_runtime_api.h)."""
import atexit

from .base import RUNTIME_LIB_PATH, EmberError, check_call, load_compiler_lib
from .object import Object
from .packed_func import (PackedFunc, _init_api, _shutdown, convert_to_packed_func,
                          get_global_func, list_global_func_names, register_func,
                          remove_global_func)
from .types import DataType, Device, TypeCode, cpu, device

__all__ = ["RUNTIME_LIB_PATH", "EmberError", "check_call", "load_compiler_lib", "Object",
           "PackedFunc", "_init_api", "convert_to_packed_func", "get_global_func",
           "list_global_func_names", "register_func", "remove_global_func", "DataType", "Device",
           "TypeCode", "cpu", "device"]

atexit.register(_shutdown)
