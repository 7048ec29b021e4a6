"""Generic runtime objects (type code kTVMObjectHandle) and converters by type key."""
import ctypes

from .base import _LIB, check_call
from .packed_func import register_handle_class, register_return
from .types import TypeCode

_TVMObjectFree = _LIB.TVMObjectFree
_libc_free = ctypes.CDLL(None).free
_libc_free.argtypes = [ctypes.c_void_p]
_libc_free.restype = None

# type key -> function(Object) returning the Python value to hand out instead (e.g. a list).
OBJECT_CONVERTERS = {}


class Object:
    """A reference to a runtime object; released when the Python object goes away."""
    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle):
        self.handle = handle if isinstance(handle, ctypes.c_void_p) else ctypes.c_void_p(handle)

    def __del__(self):
        if self.handle is not None and self.handle.value and _TVMObjectFree is not None:
            _TVMObjectFree(self.handle)
            self.handle = None

    @property
    def type_index(self):
        index = ctypes.c_uint()
        check_call(_LIB.TVMObjectGetTypeIndex(self.handle, ctypes.byref(index)))
        return index.value

    @property
    def type_key(self):
        key = ctypes.c_void_p()
        check_call(_LIB.TVMObjectTypeIndex2Key(ctypes.c_uint(self.type_index), ctypes.byref(key)))
        try:
            return ctypes.string_at(key.value).decode("utf-8")
        finally:
            _libc_free(key)  # the runtime malloc()s the key for the caller, as TVM does

    def __repr__(self):
        return "<ember.Object %s at %#x>" % (self.type_key, self.handle.value or 0)


def _ret_object(value):
    obj = Object(value.v_handle)
    if OBJECT_CONVERTERS:
        convert = OBJECT_CONVERTERS.get(obj.type_key)
        if convert is not None:
            return convert(obj)
    return obj


register_handle_class(Object, TypeCode.OBJECT_HANDLE)
register_return(TypeCode.OBJECT_HANDLE, _ret_object)
