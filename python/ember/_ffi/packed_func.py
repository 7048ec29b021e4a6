"""PackedFunc over TVMFuncCall: packing Python arguments, unpacking results, Python callbacks.

The call path is kept short: one dict lookup per argument picks its packer by exact type, one per
result picks its converter by type code, and the ctypes functions are bound once at import.
"""
import ctypes
import difflib
import struct
import sys
import threading
import traceback

import numpy as np

from .base import _LIB, EmberError, check_call, get_last_error
from .types import DataType, Device, DLDevice, DLTensor, TVMByteArray, TVMValue, TypeCode

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
# Argument packers by exact Python type (see "Packers" below).
_PACKERS = {}
# Classes whose instances carry a C handle, checked in order for subclasses.
_HANDLE_CLASSES = []

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_Int64Array = [ctypes.c_int64 * n for n in range(17)]
_CodeArray = [_c_int * n for n in range(17)]
_double_bits = struct.Struct("<q").unpack  # float -> its IEEE-754 bits as the int64 word
_double_pack = struct.Struct("<d").pack
assert sys.byteorder == "little", "ember.py packs TVMValue words assuming a little-endian host"

# Per-thread result buffers: ctypes releases the GIL during a call, so threads need their own;
# nested calls on one thread may share them because a callee writes its result only on return.
_tls = threading.local()


def _ret_buffers():
    ret_val, ret_code = TVMValue(), _c_int()
    _tls.ret = bufs = (ret_val, ret_code, _byref(ret_val), _byref(ret_code))
    return bufs


class PackedFunc:
    """A function of Ember's runtime (or a Python callable wrapped as one), called with Python
    values."""
    __slots__ = ("handle", "name", "__weakref__")

    def __init__(self, handle, name=None):
        self.handle = handle if isinstance(handle, _c_void_p) else _c_void_p(handle)
        self.name = name

    def __del__(self):
        if self.handle is not None and self.handle.value and _TVMFuncFree is not None:
            _TVMFuncFree(self.handle)
            self.handle = None

    def __call__(self, *args):
        try:
            ret_val, ret_code, ret_val_ref, ret_code_ref = _tls.ret
        except AttributeError:
            ret_val, ret_code, ret_val_ref, ret_code_ref = _ret_buffers()
        if args:
            values, codes, keep_alive = _pack_args(args, self.name)
            status = _TVMFuncCall(self.handle, values, codes, len(args), ret_val_ref, ret_code_ref)
        else:
            status = _TVMFuncCall(self.handle, None, None, 0, ret_val_ref, ret_code_ref)
        if status != 0:
            raise get_last_error()
        return RETURN_SWITCH[ret_code.value](ret_val)

    def __repr__(self):
        return "<ember.PackedFunc %s>" % (self.name or hex(self.handle.value or 0))


def _pack_args(args, func_name=None, _packers=_PACKERS, _int=int, _min=_INT64_MIN,
               _max=_INT64_MAX):
    """(values, type codes, keep_alive) for ``args``: each argument becomes one 64-bit TVMValue
    word, built as a Python int and written into the C arrays in one constructor call each."""
    words = []
    codes = []
    keep_alive = []
    i = 0
    for arg in args:
        kind = type(arg)
        if kind is _int and _min <= arg <= _max:  # the common case, inline
            words.append(arg)
            codes.append(0)
        else:
            packer = _packers.get(kind) or _find_packer(arg, i, func_name)
            word, code, owner = packer(arg)
            words.append(word)
            codes.append(code)
            keep_alive.append(owner)
        i += 1
    if i < 17:
        return _Int64Array[i](*words), _CodeArray[i](*codes), keep_alive
    return (ctypes.c_int64 * i)(*words), (_c_int * i)(*codes), keep_alive


# Packers: packer(value) -> (int64 word, type code, object to keep alive during the call or None).

def _pack_int(arg):
    arg = int(arg)
    if not _INT64_MIN <= arg <= _INT64_MAX:
        raise OverflowError("argument %d does not fit in int64" % arg)
    return arg, TypeCode.INT, None


def _pack_bool(arg):
    return (1 if arg else 0), TypeCode.BOOL, None


def _pack_float(arg):
    return _double_bits(_double_pack(arg))[0], TypeCode.FLOAT, None


def _pack_str(arg):
    encoded = arg.encode("utf-8")
    return ctypes.cast(encoded, _c_void_p).value, TypeCode.STR, encoded


def _pack_bytes(arg):
    if isinstance(arg, bytes):
        buf = arg
        data = ctypes.cast(arg, _c_void_p).value  # points into the bytes object: no copy
    else:
        buf = (ctypes.c_char * len(arg)).from_buffer(arg)
        data = ctypes.addressof(buf)
    arr = TVMByteArray(data, len(arg))
    return ctypes.addressof(arr), TypeCode.BYTES, (arg, buf, arr)


def _pack_none(arg):
    return 0, TypeCode.NULL, None


def _pack_datatype(arg):
    return arg.code | (arg.bits << 8) | (arg.lanes << 16), TypeCode.DATATYPE, None


def _pack_np_dtype(arg):
    return _pack_datatype(DataType(arg))


def _pack_device(arg):
    return (arg.device_type & 0xFFFFFFFF) | (arg.device_id << 32), TypeCode.DLDEVICE, None


def _pack_handle_obj(arg):
    return arg.handle.value or 0, arg._tcode, arg


def _pack_c_void_p(arg):
    return arg.value or 0, TypeCode.HANDLE, arg


_dl_dtype_of_numpy = {}  # numpy dtype -> (code, bits, lanes); DataType() parsing costs microseconds
# DLTensor's bytes: data, device (type, id), ndim, dtype (code, bits, lanes), shape*, strides*,
# byte_offset. Packing them with struct is several times faster than a ctypes constructor.
_DLTENSOR_LAYOUT = struct.Struct("<QiiiBBHQQQ")
assert _DLTENSOR_LAYOUT.size == ctypes.sizeof(DLTensor)


def numpy_to_dltensor(arr, what="argument"):
    """A DLTensor viewing ``arr`` (no copy), as a ctypes buffer, and the objects it points into."""
    dtype = _dl_dtype_of_numpy.get(arr.dtype)
    if dtype is None:
        dt = DataType(arr.dtype)
        dtype = _dl_dtype_of_numpy[arr.dtype] = (dt.code, dt.bits, dt.lanes)
    ndim = arr.ndim
    shape = (ctypes.c_int64 * ndim)(*arr.shape)
    strides = None
    if not arr.flags.c_contiguous:
        itemsize = arr.itemsize
        if any(s % itemsize for s in arr.strides):
            raise ValueError("%s: numpy array strides %s are not a multiple of its item size %d; "
                             "pass np.ascontiguousarray(a)" % (what, arr.strides, itemsize))
        strides = (ctypes.c_int64 * ndim)(*[s // itemsize for s in arr.strides])
    tensor = ctypes.create_string_buffer(_DLTENSOR_LAYOUT.pack(
        arr.ctypes.data, 1, 0, ndim, dtype[0], dtype[1], dtype[2], ctypes.addressof(shape),
        ctypes.addressof(strides) if strides is not None else 0, 0), _DLTENSOR_LAYOUT.size)
    return tensor, (arr, shape, strides)


# numpy's own DLPack export fills a DLTensor in C, far faster than building one through ctypes.
# The capsule stays unconsumed: when it goes, numpy's destructor frees the DLManagedTensor.
_capsule_pointer = ctypes.PYFUNCTYPE(_c_void_p, _c_void_p, _c_void_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_libc = ctypes.CDLL(None)
_libc.strdup.restype = _c_void_p
_libc.strdup.argtypes = [ctypes.c_char_p]
DLTENSOR_CAPSULE_NAME = _libc.strdup(b"dltensor")  # capsules keep a pointer to their name


def _pack_ndarray_np(arg):
    try:
        capsule = arg.__dlpack__()
    except (BufferError, TypeError, ValueError):  # read-only, bool or byte-swapped arrays
        tensor, owners = numpy_to_dltensor(arg)
        return ctypes.addressof(tensor), TypeCode.DLTENSOR_HANDLE, (tensor, owners)
    # DLManagedTensor starts with its DLTensor, so the managed pointer is the DLTensor*.
    return (_capsule_pointer(id(capsule), DLTENSOR_CAPSULE_NAME), TypeCode.DLTENSOR_HANDLE,
            (capsule, arg))


def _pack_callable(arg):
    func = convert_to_packed_func(arg)
    return func.handle.value, TypeCode.PACKED_FUNC_HANDLE, func


_PACKERS.update({
    int: _pack_int, bool: _pack_bool, float: _pack_float, str: _pack_str, bytes: _pack_bytes,
    bytearray: _pack_bytes, type(None): _pack_none, DataType: _pack_datatype,
    np.ndarray: _pack_ndarray_np, _c_void_p: _pack_c_void_p, PackedFunc: _pack_handle_obj,
    Device: _pack_device, DLDevice: _pack_device,
})
PackedFunc._tcode = TypeCode.PACKED_FUNC_HANDLE

_SUPPORTED = ("int, float, bool, str, bytes, None, ember.nd.NDArray, numpy.ndarray, ember.Device, "
              "ember.DataType or numpy.dtype, ember.runtime.Module, PackedFunc or a Python "
              "callable")


def _find_packer(arg, i, func_name):
    """Packer for types not in the exact-type table (subclasses, numpy scalars, callables)."""
    for cls in _HANDLE_CLASSES:
        if isinstance(arg, cls):
            return _pack_handle_obj
    if isinstance(arg, (bool, np.bool_)):
        return _pack_bool
    if isinstance(arg, (int, np.integer)):
        return _pack_int
    if isinstance(arg, (float, np.floating)):
        return lambda a: _pack_float(float(a))
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
    """Let instances of ``cls`` (which has a ``handle``) travel as ``type_code``; with None, the
    class
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

_PackedCFunc = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(TVMValue),
                                ctypes.POINTER(ctypes.c_int), ctypes.c_int, _c_void_p, _c_void_p)
_PackedCFuncFinalizer = ctypes.CFUNCTYPE(None, _c_void_p)
# The Python callables behind PackedFuncs, by the resource handle the runtime passes back: the
# runtime's finalizer (when its last reference goes) drops the entry, and with it our reference.
_callbacks = {}
_next_callback_id = [1]
_shutting_down = False


def _callback_error_message(err):
    """``TypeName: message`` first (so the caller gets the same exception type), then the
    traceback."""
    if isinstance(err, EmberError):  # already "TypeName: message" (from a nested call): keep it
        return str(err)
    head = "%s: %s" % (type(err).__name__, err)
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__)).rstrip()
    return "%s\nPython traceback of the callback:\n%s" % (head, tb)


def _call_python(args, type_codes, num_args, ret, resource_handle):
    try:
        if num_args:
            result = _callbacks[resource_handle](
                *[C_TO_PY_ARG_SWITCH[type_codes[i]](args, type_codes, i) for i in range(num_args)])
        else:
            result = _callbacks[resource_handle]()
        if result is not None:
            try:
                values, codes, keep_alive = _pack_args((result,))
            except TypeError:
                name = getattr(_callbacks[resource_handle], "__name__", "?")
                raise TypeError("Python callback %s returned a %s, which cannot cross the C ABI; "
                                "return %s" % (name, type(result).__name__, _SUPPORTED)) from None
            check_call(_TVMCFuncSetReturn(_c_void_p(ret), values, codes, 1))
            del keep_alive  # the runtime copied the value (and took its own references)
    except BaseException as err:  # every error must reach the C++ caller, never unwind through C
        _TVMAPISetLastError(_callback_error_message(err).encode("utf-8", "replace"))
        return -1
    return 0


def _free_python(resource_handle):
    if not _shutting_down:
        _callbacks.pop(resource_handle, None)


_CALL_PYTHON = _PackedCFunc(_call_python)
_FREE_PYTHON = _PackedCFuncFinalizer(_free_python)


def convert_to_packed_func(func):
    """A PackedFunc calling the Python callable ``func``; the runtime holds ``func`` until freed."""
    if isinstance(func, PackedFunc):
        return func
    if not callable(func):
        raise TypeError("expected a callable, got %s" % type(func).__name__)
    handle = _c_void_p()
    key = _next_callback_id[0]
    _next_callback_id[0] += 1
    _callbacks[key] = func  # released by _free_python when the runtime drops the PackedFunc
    if _LIB.TVMFuncCreateFromCFunc(_CALL_PYTHON, _c_void_p(key), _FREE_PYTHON, _byref(handle)):
        del _callbacks[key]
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
    """At exit, unregister Python functions while Python can still run their finalizers."""
    global _shutting_down
    for name in list(_python_globals):
        try:
            _LIB.TVMFuncRemoveGlobal(name.encode("utf-8"))
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    _shutting_down = True
