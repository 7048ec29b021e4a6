"""ctypes bindings of Ember's C ABI (include/ember/runtime/c_runtime_api.h)."""
import atexit

from .base import RUNTIME_LIB_PATH, EmberError, check_call, load_compiler_lib  # noqa: F401
from .object import Object  # noqa: F401
from .packed_func import (PackedFunc, _init_api, convert_to_packed_func,  # noqa: F401
                          get_global_func, list_global_func_names, register_func,
                          remove_global_func)
from .packed_func import _shutdown
from .types import DataType, Device, TypeCode, cpu, device  # noqa: F401

atexit.register(_shutdown)
