"""PackedFunc over TVMFuncCall: packing Python arguments, unpacking results, Python callbacks.

The call path is kept short: one dict lookup per argument picks its packer by exact type, one per
result picks its converter by type code, and the ctypes functions are bound once at import.
"""
import ctypes
import difflib
import sys
import traceback

import numpy as np

from .base import _LIB, EmberError, check_call, get_last_error
from .types import (DataType, Device, DLDataTypeStruct, DLDevice, DLTensor, TVMByteArray, TVMValue,
                    TypeCode)

_TVMFuncCall = _LIB.TVMFuncCall
_TVMFuncFree = _LIB.TVMFuncFree
_TVMCFuncSetReturn = _LIB.TVMCFuncSetReturn
_TVMCbArgToReturn = _LIB.TVMCbArgToReturn
_TVMAPISetLastError = _LIB.TVMAPISetLastError
_c_int = ctypes.c_int
_byref = ctypes.byref
_c_void_p = ctypes.c_void_p

# Result converters by type code; ndarray/module/object modules add their own handle types.
RETURN_SWITCH = {}
# Callback argument converters by type code (handles are borrowed there, so differ from results).
C_TO_PY_ARG_SWITCH = {}
# Argument packers by exact Python type: packer(value, values, codes, i, keep_alive).
_PACKERS = {}
# Classes whose instances carry a C handle: (class, type code attribute) in lookup order for subclasses.
_HANDLE_CLASSES = []

_VALUE_ARRAYS = [TVMValue * n for n in range(9)]
_CODE_ARRAYS = [_c_int * n for n in range(9)]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class PackedFunc:
    """A function of Ember's runtime (or a Python callable wrapped as one), called with Python values."""
    __slots__ = ("handle", "name", "__weakref__")

    def __init__(self, handle, name=None):
        self.handle = handle if isinstance(handle, _c_void_p) else _c_void_p(handle)
        self.name = name

    def __del__(self):
        if self.handle is not None and self.handle.value and _TVMFuncFree is not None:
            _TVMFuncFree(self.handle)
            self.handle = None

    def __call__(self, *args):
        nargs = len(args)
        ret_val = TVMValue()
        ret_code = _c_int()
        if nargs == 0:
            if _TVMFuncCall(self.handle, None, None, 0, _byref(ret_val), _byref(ret_code)) != 0:
                raise get_last_error()
            return RETURN_SWITCH[ret_code.value](ret_val)
        values, codes, keep_alive = _pack_args(args, self.name)
        if _TVMFuncCall(self.handle, values, codes, nargs, _byref(ret_val), _byref(ret_code)) != 0:
            raise get_last_error()
        return RETURN_SWITCH[ret_code.value](ret_val)

    def __repr__(self):
        return "<ember.PackedFunc %s>" % (self.name or hex(self.handle.value or 0))


def _pack_args(args, func_name=None):
    """TVMValue and type-code arrays for ``args``, plus the Python objects they point into."""
    nargs = len(args)
    values = (_VALUE_ARRAYS[nargs] if nargs < 9 else TVMValue * nargs)()
    codes = (_CODE_ARRAYS[nargs] if nargs < 9 else _c_int * nargs)()
    keep_alive = []
    for i, arg in enumerate(args):
        packer = _PACKERS.get(type(arg))
        if packer is None:
            packer = _find_packer(arg, i, func_name)
        packer(arg, values, codes, i, keep_alive)
    return values, codes, keep_alive


def _pack_int(arg, values, codes, i, keep_alive):
    if not _INT64_MIN <= arg <= _INT64_MAX:
        raise OverflowError("argument %d: %d does not fit in int64" % (i, arg))
    values[i].v_int64 = arg
    codes[i] = 0


def _pack_bool(arg, values, codes, i, keep_alive):
    values[i].v_int64 = 1 if arg else 0
    codes[i] = TypeCode.BOOL


def _pack_float(arg, values, codes, i, keep_alive):
    values[i].v_float64 = arg
    codes[i] = TypeCode.FLOAT


def _pack_str(arg, values, codes, i, keep_alive):
    encoded = arg.encode("utf-8")
    keep_alive.append(encoded)
    values[i].v_str = encoded
    codes[i] = TypeCode.STR


def _pack_bytes(arg, values, codes, i, keep_alive):
    if isinstance(arg, bytes):
        buf = ctypes.c_char_p(arg)  # points into the bytes object: no copy
    else:
        buf = (ctypes.c_char * len(arg)).from_buffer(arg)
    arr = TVMByteArray(ctypes.cast(buf, _c_void_p), len(arg))
    keep_alive.append((arg, buf, arr))
    values[i].v_handle = ctypes.addressof(arr)
    codes[i] = TypeCode.BYTES


def _pack_none(arg, values, codes, i, keep_alive):
    values[i].v_handle = None
    codes[i] = TypeCode.NULL


def _pack_datatype(arg, values, codes, i, keep_alive):
    values[i].v_type = DLDataTypeStruct(arg.code, arg.bits, arg.lanes)
    codes[i] = TypeCode.DATATYPE


def _pack_np_dtype(arg, values, codes, i, keep_alive):
    _pack_datatype(DataType(arg), values, codes, i, keep_alive)


def _pack_device(arg, values, codes, i, keep_alive):
    values[i].v_device = arg
    codes[i] = TypeCode.DLDEVICE


def _pack_handle_obj(arg, values, codes, i, keep_alive):
    values[i].v_handle = arg.handle
    codes[i] = arg._tcode


def _pack_c_void_p(arg, values, codes, i, keep_alive):
    values[i].v_handle = arg
    codes[i] = TypeCode.HANDLE


def numpy_to_dltensor(arr, what="argument"):
    """A DLTensor viewing ``arr`` (no copy) and the objects it points into."""
    dtype = DataType(arr.dtype)
    shape = (ctypes.c_int64 * arr.ndim)(*arr.shape)
    strides = None
    if not arr.flags.c_contiguous:
        itemsize = arr.itemsize
        if any(s % itemsize for s in arr.strides):
            raise ValueError("%s: numpy array strides %s are not a multiple of its item size %d; "
                             "pass np.ascontiguousarray(a)" % (what, arr.strides, itemsize))
        strides = (ctypes.c_int64 * arr.ndim)(*[s // itemsize for s in arr.strides])
    tensor = DLTensor()
    tensor.data = arr.ctypes.data
    tensor.device = DLDevice(1, 0)
    tensor.ndim = arr.ndim
    tensor.dtype = dtype.dl
    tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    if strides is not None:
        tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    return tensor, (arr, shape, strides)


def _pack_ndarray_np(arg, values, codes, i, keep_alive):
    tensor, owners = numpy_to_dltensor(arg, "argument %d" % i)
    keep_alive.append((tensor, owners))
    values[i].v_handle = ctypes.addressof(tensor)
    codes[i] = TypeCode.DLTENSOR_HANDLE


def _pack_callable(arg, values, codes, i, keep_alive):
    func = convert_to_packed_func(arg)
    keep_alive.append(func)
    values[i].v_handle = func.handle
    codes[i] = TypeCode.PACKED_FUNC_HANDLE


_PACKERS.update({
    int: _pack_int, bool: _pack_bool, float: _pack_float, str: _pack_str, bytes: _pack_bytes,
    bytearray: _pack_bytes, type(None): _pack_none, DataType: _pack_datatype,
    np.ndarray: _pack_ndarray_np, _c_void_p: _pack_c_void_p, PackedFunc: _pack_handle_obj,
    Device: _pack_device, DLDevice: _pack_device,
})
PackedFunc._tcode = TypeCode.PACKED_FUNC_HANDLE

_SUPPORTED = ("int, float, bool, str, bytes, None, ember.nd.NDArray, numpy.ndarray, ember.Device, "
              "ember.DataType or numpy.dtype, ember.runtime.Module, PackedFunc or a Python callable")


def _find_packer(arg, i, func_name):
    """Packer for types not in the exact-type table (subclasses, numpy scalars, callables)."""
    for cls in _HANDLE_CLASSES:
        if isinstance(arg, cls):
            return _pack_handle_obj
    if isinstance(arg, (bool, np.bool_)):
        return _pack_bool
    if isinstance(arg, (int, np.integer)):
        return lambda a, v, c, j, k: _pack_int(int(a), v, c, j, k)
    if isinstance(arg, (float, np.floating)):
        return lambda a, v, c, j, k: _pack_float(float(a), v, c, j, k)
    if isinstance(arg, DLDevice):
        return _pack_device
    if isinstance(arg, np.dtype):
        return _pack_np_dtype
    if isinstance(arg, np.ndarray):
        return _pack_ndarray_np
    if isinstance(arg, str):
        return _pack_str
    if isinstance(arg, (bytes, bytearray)):
        return _pack_bytes
    if callable(arg):
        return _pack_callable
    where = "%s: argument %d" % (func_name, i) if func_name else "argument %d" % i
    raise TypeError("%s has unsupported type %s; expected %s" %
                    (where, type(arg).__name__, _SUPPORTED))


def register_handle_class(cls, type_code=None):
    """Let instances of ``cls`` (which has a ``handle``) travel as ``type_code``; with None, the class
    provides ``_tcode`` itself (a property when it depends on the instance)."""
    if type_code is not None:
        cls._tcode = type_code
    _PACKERS[cls] = _pack_handle_obj
    _HANDLE_CLASSES.append(cls)


# ---- results ----

def _ret_bytes(value):
    arr = ctypes.cast(value.v_handle, ctypes.POINTER(TVMByteArray)).contents
    return ctypes.string_at(arr.data, arr.size)


def _ret_str(value):
    raw = value.v_str
    return raw.decode("utf-8") if raw is not None else None


def _ret_packed_func(value):
    return PackedFunc(value.v_handle)


def _ret_datatype(value):
    return DataType(value.v_type)


def _ret_device(value):
    dev = value.v_device
    return Device(dev.device_type, dev.device_id)


def _ret_handle(value):
    return _c_void_p(value.v_handle)


RETURN_SWITCH.update({
    TypeCode.INT: lambda v: v.v_int64,
    TypeCode.UINT: lambda v: v.v_int64,
    TypeCode.FLOAT: lambda v: v.v_float64,
    TypeCode.BOOL: lambda v: v.v_int64 != 0,
    TypeCode.NULL: lambda v: None,
    TypeCode.HANDLE: _ret_handle,
    TypeCode.STR: _ret_str,
    TypeCode.BYTES: _ret_bytes,
    TypeCode.DATATYPE: _ret_datatype,
    TypeCode.DLDEVICE: _ret_device,
    TypeCode.PACKED_FUNC_HANDLE: _ret_packed_func,
})


class _ReturnSwitch(dict):
    def __missing__(self, code):
        raise EmberError("a packed function returned type code %d, which ember.py cannot convert" %
                         code)


RETURN_SWITCH = _ReturnSwitch(RETURN_SWITCH)


def _owned_arg(convert):
    """Converter for a handle argument of a callback: take a reference of our own first."""
    def take(values, codes, i):
        value = TVMValue()
        value.v_handle = values[i].v_handle
        code = _c_int(codes[i])
        check_call(_TVMCbArgToReturn(_byref(value), _byref(code)))
        return RETURN_SWITCH[code.value](value)
    return take


def _plain_arg(convert):
    return lambda values, codes, i: convert(values[i])


def register_return(type_code, convert, callback_arg=None):
    """Convert results of ``type_code`` with ``convert(TVMValue)``; callback arguments of that code
    with ``callback_arg(values, codes, i)`` (default: take a reference, then ``convert``)."""
    RETURN_SWITCH[type_code] = convert
    C_TO_PY_ARG_SWITCH[type_code] = callback_arg or _owned_arg(convert)


for _code, _conv in list(RETURN_SWITCH.items()):
    C_TO_PY_ARG_SWITCH[_code] = _plain_arg(_conv)
C_TO_PY_ARG_SWITCH[TypeCode.PACKED_FUNC_HANDLE] = _owned_arg(_ret_packed_func)
# An object moved into the call: TVMCbArgToReturn turns it into a plain object handle we own.
C_TO_PY_ARG_SWITCH[TypeCode.OBJECT_RVALUE_REF_ARG] = _owned_arg(None)


# ---- Python callables as PackedFuncs ----

_PackedCFunc = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(TVMValue), ctypes.POINTER(ctypes.c_int),
                                ctypes.c_int, _c_void_p, _c_void_p)
_PackedCFuncFinalizer = ctypes.CFUNCTYPE(None, _c_void_p)
_Py_IncRef = ctypes.pythonapi.Py_IncRef
_Py_IncRef.argtypes = [ctypes.py_object]
_Py_IncRef.restype = None
_Py_DecRef = ctypes.pythonapi.Py_DecRef
_Py_DecRef.argtypes = [_c_void_p]
_Py_DecRef.restype = None

_shutting_down = False


def _callback_error_message(err):
    """``TypeName: message`` first (so the caller gets the same exception type), then the traceback."""
    if isinstance(err, EmberError):  # already "TypeName: message" (from a nested call): keep it
        return str(err)
    head = "%s: %s" % (type(err).__name__, err)
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__)).rstrip()
    return "%s\nPython traceback of the callback:\n%s" % (head, tb)


def _call_python(args, type_codes, num_args, ret, resource_handle):
    try:
        func = ctypes.cast(resource_handle, ctypes.py_object).value
        pyargs = [C_TO_PY_ARG_SWITCH[type_codes[i]](args, type_codes, i) for i in range(num_args)]
        result = func(*pyargs)
        if result is not None:
            values, codes, keep_alive = _pack_args((result,))
            check_call(_TVMCFuncSetReturn(_c_void_p(ret), values, codes, 1))
            del keep_alive  # the runtime copied the value (and took its own references)
    except BaseException as err:  # every error must reach the C++ caller, never unwind through C
        _TVMAPISetLastError(_callback_error_message(err).encode("utf-8", "replace"))
        return -1
    return 0


def _free_python(resource_handle):
    if not _shutting_down:
        _Py_DecRef(resource_handle)


_CALL_PYTHON = _PackedCFunc(_call_python)
_FREE_PYTHON = _PackedCFuncFinalizer(_free_python)


def convert_to_packed_func(func):
    """A PackedFunc that calls the Python callable ``func``; the runtime holds ``func`` until freed."""
    if isinstance(func, PackedFunc):
        return func
    if not callable(func):
        raise TypeError("expected a callable, got %s" % type(func).__name__)
    handle = _c_void_p()
    _Py_IncRef(func)  # released by _free_python when the runtime drops the PackedFunc
    ret = _LIB.TVMFuncCreateFromCFunc(_CALL_PYTHON, _c_void_p(id(func)), _FREE_PYTHON,
                                      _byref(handle))
    if ret != 0:
        _Py_DecRef(id(func))
        raise get_last_error()
    return PackedFunc(handle, getattr(func, "__name__", None))


# ---- the global registry ----

_python_globals = set()


def get_global_func(name, allow_missing=False):
    """The global PackedFunc ``name``; None if missing and ``allow_missing``, else ValueError."""
    handle = _c_void_p()
    check_call(_LIB.TVMFuncGetGlobal(name.encode("utf-8"), _byref(handle)))
    if handle.value:
        return PackedFunc(handle, name)
    if allow_missing:
        return None
    close = difflib.get_close_matches(name, list_global_func_names(), n=3)
    hint = "; did you mean %s?" % ", ".join(close) if close else ""
    raise ValueError("no global function named %r%s" % (name, hint))


def list_global_func_names():
    """Names of every registered global function."""
    size = _c_int()
    names = ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.TVMFuncListGlobalNames(_byref(size), _byref(names)))
    return [names[i].decode("utf-8") for i in range(size.value)]


def register_func(func_name, f=None, override=False):
    """Register ``f`` as global function ``func_name`` (callable from C++ and every other caller).

    Also a decorator: ``@register_func("my.add")`` or ``@register_func`` (uses ``f.__name__``).
    Registering an existing name raises unless ``override``. Returns ``f``.
    """
    if callable(func_name) and f is None:
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str):
        raise TypeError("register_func: name must be a str, got %s" % type(func_name).__name__)

    def register(func):
        packed = convert_to_packed_func(func)
        check_call(_LIB.TVMFuncRegisterGlobal(func_name.encode("utf-8"), packed.handle,
                                              1 if override else 0))
        if not isinstance(func, PackedFunc):
            _python_globals.add(func_name)
        return func

    return register if f is None else register(f)


def remove_global_func(name):
    """Unregister global function ``name``."""
    check_call(_LIB.TVMFuncRemoveGlobal(name.encode("utf-8")))
    _python_globals.discard(name)


def _init_api(prefix, module):
    """Expose every global ``prefix.NAME`` as attribute ``NAME`` (dots become underscores) of
    ``module`` (a module object or its name)."""
    if isinstance(module, str):
        module = sys.modules[module]
    start = len(prefix) + 1
    for name in list_global_func_names():
        if name.startswith(prefix + "."):
            attr = name[start:].replace(".", "_")
            func = get_global_func(name)
            setattr(module, attr, func)


def _shutdown():
    """At exit, drop Python functions from the registry while Python can still run their finalizers."""
    global _shutting_down
    for name in list(_python_globals):
        try:
            _LIB.TVMFuncRemoveGlobal(name.encode("utf-8"))
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    _shutting_down = True
