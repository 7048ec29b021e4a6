"""The C ABI's data layouts in ctypes: TVMValue, DLPack structs, type codes, DataType and Device."""
import ctypes

import numpy as np


class TypeCode:
    """Type codes of TVMValue (TVMArgTypeCode in c_runtime_api.h)."""
    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    NULL = 4
    DATATYPE = 5
    DLDEVICE = 6
    DLTENSOR_HANDLE = 7
    OBJECT_HANDLE = 8
    MODULE_HANDLE = 9
    PACKED_FUNC_HANDLE = 10
    STR = 11
    BYTES = 12
    NDARRAY_HANDLE = 13
    OBJECT_RVALUE_REF_ARG = 14
    BOOL = 15


class DLDataTypeStruct(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("device", DLDevice),
                ("ndim", ctypes.c_int32),
                ("dtype", DLDataTypeStruct),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensorDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor),
                            ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DLManagedTensorDeleter)]


class TVMValue(ctypes.Union):
    _fields_ = [("v_int64", ctypes.c_int64),
                ("v_float64", ctypes.c_double),
                ("v_handle", ctypes.c_void_p),
                ("v_str", ctypes.c_char_p),
                ("v_type", DLDataTypeStruct),
                ("v_device", DLDevice)]


class TVMByteArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


assert ctypes.sizeof(TVMValue) == 8, "TVMValue must be 8 bytes, as in c_runtime_api.h"
assert ctypes.sizeof(DLDataTypeStruct) == 4 and ctypes.sizeof(DLDevice) == 8

# DLDataTypeCode of dlpack 0.6.
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_HANDLE, _DL_BFLOAT = 0, 1, 2, 3, 4
_CODE_NAMES = {_DL_INT: "int", _DL_UINT: "uint", _DL_FLOAT: "float", _DL_HANDLE: "handle",
               _DL_BFLOAT: "bfloat"}
_NAME_CODES = {name: code for code, name in _CODE_NAMES.items()}


class DataType:
    """A DLDataType. Compares equal to its string form: ``DataType("float32") == "float32"``.

    Passed to a PackedFunc it travels as kTVMDataType (a plain str travels as kTVMStr).
    """
    __slots__ = ("code", "bits", "lanes", "_str")

    def __init__(self, spec):
        if isinstance(spec, DataType):
            self.code, self.bits, self.lanes = spec.code, spec.bits, spec.lanes
            self._str = spec._str
            return
        if isinstance(spec, DLDataTypeStruct):
            self.code, self.bits, self.lanes = spec.code, spec.bits, spec.lanes
        elif isinstance(spec, str):
            self.code, self.bits, self.lanes = _parse_dtype(spec)
        else:
            try:
                np_dtype = np.dtype(spec)
            except TypeError:
                raise TypeError("cannot make a DataType from %r (type %s); expected a string "
                                "such as 'float32', a numpy dtype or a DLDataType" %
                                (spec, type(spec).__name__)) from None
            self.code, self.bits, self.lanes = _parse_dtype(_numpy_name(np_dtype))
        self._str = _format_dtype(self.code, self.bits, self.lanes)

    @property
    def dl(self):
        return DLDataTypeStruct(self.code, self.bits, self.lanes)

    @property
    def itemsize(self):
        """Bytes per element (all lanes), as the runtime stores it."""
        return (self.bits * self.lanes + 7) // 8

    def numpy_dtype(self):
        """The numpy dtype of one element; TypeError when numpy has none (bfloat16, vectors)."""
        if self._str == "bool":
            return np.dtype(np.bool_)
        if self.lanes != 1 or self.code not in (_DL_INT, _DL_UINT, _DL_FLOAT) or self.bits < 8:
            raise TypeError("dtype %s has no numpy equivalent" % self._str)
        return np.dtype(self._str)

    def __str__(self):
        return self._str

    def __repr__(self):
        return "DataType(%r)" % self._str

    def __eq__(self, other):
        if isinstance(other, DataType):
            return (self.code, self.bits, self.lanes) == (other.code, other.bits, other.lanes)
        if isinstance(other, str):
            try:
                return (self.code, self.bits, self.lanes) == _parse_dtype(other)
            except ValueError:
                return False
        return NotImplemented

    def __hash__(self):
        return hash(self._str)


def _numpy_name(np_dtype):
    if np_dtype == np.bool_:
        return "bool"
    if np_dtype.kind not in "iuf":
        raise TypeError("numpy dtype %s has no Ember equivalent; use a bool, int, uint or float "
                        "dtype" % np_dtype)
    return np_dtype.name


def _parse_dtype(text):
    if text == "bool":
        return _DL_UINT, 1, 1
    if text == "handle":
        return _DL_HANDLE, 64, 1
    base, sep, lanes_text = text.partition("x")
    lanes = int(lanes_text) if sep and lanes_text.isdigit() else (None if sep else 1)
    for name in ("bfloat", "float", "uint", "int"):
        if base.startswith(name) and base[len(name):].isdigit() and lanes:
            bits = int(base[len(name):])
            if 0 < bits <= 255 and 0 < lanes <= 65535:
                return _NAME_CODES[name], bits, lanes
    raise ValueError("unknown dtype %r; expected bool, handle, or int|uint|float|bfloat "
                     "followed by the bit width (e.g. float32, int8) and optionally xLANES" % text)


def _format_dtype(code, bits, lanes):
    if code == _DL_UINT and bits == 1 and lanes == 1:
        return "bool"
    if code == _DL_HANDLE:
        return "handle"
    name = _CODE_NAMES.get(code, "custom[%d]" % code) + str(bits)
    return name if lanes == 1 else "%sx%d" % (name, lanes)


DEVICE_TYPES = {"cpu": 1, "llvm": 1, "cuda": 2, "cuda_host": 3, "opencl": 4, "vulkan": 7,
                "metal": 8, "vpi": 9, "rocm": 10, "ext_dev": 12}
_DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal",
                 9: "vpi", 10: "rocm", 12: "ext_dev"}


class Device(DLDevice):
    """A DLDevice: ``ember.cpu(0)``. Passed to a PackedFunc it travels as kDLDevice."""

    def __init__(self, device_type=1, device_id=0):
        if isinstance(device_type, str):
            if device_type not in DEVICE_TYPES:
                raise ValueError("unknown device %r; expected one of %s" %
                                 (device_type, ", ".join(sorted(DEVICE_TYPES))))
            device_type = DEVICE_TYPES[device_type]
        super().__init__(int(device_type), int(device_id))

    def __eq__(self, other):
        return (isinstance(other, DLDevice) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        name = _DEVICE_NAMES.get(self.device_type, "device_type%d" % self.device_type)
        return "%s(%d)" % (name, self.device_id)

    def __reduce__(self):
        return (Device, (self.device_type, self.device_id))


def device(dev_type, dev_id=0):
    """``device("cpu", 0)`` or ``device(1, 0)``."""
    return Device(dev_type, dev_id)


def cpu(dev_id=0):
    """The CPU device."""
    return Device(1, dev_id)
