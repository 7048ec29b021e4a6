"""ember.nd: arrays of the runtime, NumPy conversion and zero-copy DLPack exchange.

An NDArray owns a reference to a runtime NDArray (handle = its DLTensor*), released when the Python
object goes away. ``from_dlpack`` and ``__dlpack__`` share memory with NumPy (or any DLPack
producer/consumer) without copying; ``array``/``numpy``/``copyfrom`` copy.
"""
import ctypes

import numpy as np

from ._ffi.base import _LIB, check_call
from ._ffi.packed_func import (_PACKERS, DLTENSOR_CAPSULE_NAME, register_handle_class,
                               register_return)
from ._ffi.types import DataType, Device, DLTensor, TypeCode, cpu

__all__ = ["NDArray", "array", "empty", "from_dlpack", "cpu", "Device", "DataType"]

_TVMArrayFree = _LIB.TVMArrayFree
_LIB.TVMArrayCopyToBytes.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
_LIB.TVMArrayCopyFromBytes.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
_LIB.TVMArrayCopyFromTo.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_LIB.TVMArrayToDLPack.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
_LIB.TVMArrayFromDLPack.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
_LIB.TVMDLManagedTensorCallDeleter.argtypes = [ctypes.c_void_p]
_LIB.TVMDLManagedTensorCallDeleter.restype = None

# ---- PyCapsule plumbing for DLPack ----
# Private prototypes, never ctypes.pythonapi's shared function objects (others may set their
# argtypes).
_pyapi = ctypes.pythonapi
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p,
                                   _CapsuleDestructor)(("PyCapsule_New", _pyapi))
_PyCapsule_IsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_IsValid", _pyapi))
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_GetPointer", _pyapi))
_PyCapsule_SetName = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetName", _pyapi))
# The destructor receives the capsule's address, not an object reference.
_PyCapsule_IsValidAddr = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_IsValid", _pyapi))
_PyCapsule_GetPointerAddr = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_GetPointer", _pyapi))

# A capsule keeps a pointer to its name, so the names live in memory that is never freed.
_libc = ctypes.CDLL(None)
_libc.strdup.restype = ctypes.c_void_p
_libc.strdup.argtypes = [ctypes.c_char_p]
_DLTENSOR_NAME = DLTENSOR_CAPSULE_NAME
_USED_DLTENSOR_NAME = _libc.strdup(b"used_dltensor")
_TVMDLManagedTensorCallDeleter = _LIB.TVMDLManagedTensorCallDeleter


def _capsule_destructor(capsule_addr):
    """A capsule nobody consumed still owns its DLManagedTensor: run the tensor's deleter."""
    if _PyCapsule_IsValidAddr(capsule_addr, _DLTENSOR_NAME):
        _TVMDLManagedTensorCallDeleter(_PyCapsule_GetPointerAddr(capsule_addr, _DLTENSOR_NAME))


_CAPSULE_DESTRUCTOR = _CapsuleDestructor(_capsule_destructor)

_DL_POINTER = ctypes.POINTER(DLTensor)


class NDArray:
    """An n-dimensional array in the runtime's memory."""
    __slots__ = ("handle", "is_view", "__weakref__")

    def __init__(self, handle, is_view=False):
        self.handle = handle if isinstance(handle, ctypes.c_void_p) else ctypes.c_void_p(handle)
        self.is_view = is_view

    def __del__(self):
        if not self.is_view and self.handle is not None and self.handle.value and _TVMArrayFree:
            _TVMArrayFree(self.handle)
            self.handle = None

    @property
    def _tcode(self):
        # A view is a bare DLTensor* of someone else's; only owned arrays are NDArray handles.
        return TypeCode.DLTENSOR_HANDLE if self.is_view else TypeCode.NDARRAY_HANDLE

    @property
    def _dl(self):
        return ctypes.cast(self.handle, _DL_POINTER).contents

    @property
    def shape(self):
        dl = self._dl
        return tuple(dl.shape[i] for i in range(dl.ndim))

    @property
    def ndim(self):
        return self._dl.ndim

    @property
    def dtype(self):
        return DataType(self._dl.dtype)

    @property
    def device(self):
        dev = self._dl.device
        return Device(dev.device_type, dev.device_id)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def data_ptr(self):
        """Address of the first element (data + byte_offset)."""
        dl = self._dl
        return (dl.data or 0) + dl.byte_offset

    def numpy(self):
        """A NumPy copy of the array."""
        dl = self._dl
        if dl.strides and not _is_compact(dl):  # e.g. a strided view from a DLPack producer
            return _strided_copy(dl, self.shape, self.dtype.numpy_dtype())
        out = np.empty(self.shape, dtype=self.dtype.numpy_dtype())
        check_call(_LIB.TVMArrayCopyToBytes(self.handle, out.ctypes.data, out.nbytes))
        return out

    asnumpy = numpy

    def __array__(self, dtype=None):
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def copyfrom(self, source):
        """Copy ``source`` (an NDArray, a NumPy array or anything np.asarray takes) into this array.

        The shape must match; NumPy data of another dtype is cast to this array's dtype.
        """
        if isinstance(source, NDArray):
            check_call(_LIB.TVMArrayCopyFromTo(source.handle, self.handle, None))
            return self
        np_dtype = self.dtype.numpy_dtype()
        source = np.asarray(source)
        if source.shape != self.shape:
            raise ValueError("copyfrom: shape mismatch: this array is %s, the source is %s" %
                             (self.shape, source.shape))
        source = np.ascontiguousarray(source, dtype=np_dtype)
        check_call(_LIB.TVMArrayCopyFromBytes(self.handle, source.ctypes.data, source.nbytes))
        return self

    def copyto(self, target):
        """Copy into ``target`` (an NDArray) or into a new array on device ``target``."""
        if isinstance(target, NDArray):
            check_call(_LIB.TVMArrayCopyFromTo(self.handle, target.handle, None))
            return target
        if isinstance(target, Device):
            out = empty(self.shape, self.dtype, target)
            check_call(_LIB.TVMArrayCopyFromTo(self.handle, out.handle, None))
            return out
        raise TypeError("copyto: expected an NDArray or a Device, got %s" % type(target).__name__)

    def __dlpack__(self, stream=None):
        """A DLPack capsule sharing this array's memory (kept alive until the capsule's consumer
        frees it)."""
        if stream is not None and stream != -1:
            raise ValueError("__dlpack__: CPU arrays take no stream, got %r" % (stream,))
        if self.is_view:
            # A caller's DLTensor lent to a callback, which the runtime does not own: it cannot
            # hand out a managed tensor for it.
            raise BufferError("__dlpack__: this array is a view of a caller's DLTensor (a callback "
                              "argument); .numpy() copies it, or pass the caller's array itself")
        managed = ctypes.c_void_p()
        check_call(_LIB.TVMArrayToDLPack(self.handle, ctypes.byref(managed)))
        return _PyCapsule_New(managed, _DLTENSOR_NAME, _CAPSULE_DESTRUCTOR)

    def __dlpack_device__(self):
        dev = self._dl.device
        return (dev.device_type, dev.device_id)

    to_dlpack = __dlpack__

    def __repr__(self):
        return "<ember.nd.NDArray shape=%s dtype=%s device=%r>\n%s" % (
            self.shape, self.dtype, self.device, self.numpy())

    def __str__(self):
        return str(self.numpy())


def _strided_copy(dl, shape, dtype):
    """A compact NumPy copy of the elements a strided DLTensor addresses, read in place. Not
    through __dlpack__: a view (a callback's DLTensor argument) is no runtime NDArray, so
    TVMArrayToDLPack cannot take it."""
    if 0 in shape:
        return np.empty(shape, dtype=dtype)
    strides = [dl.strides[i] * dtype.itemsize for i in range(dl.ndim)]
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    span = (ctypes.c_char * (high - low + dtype.itemsize)).from_address(
        (dl.data or 0) + dl.byte_offset + low)
    return np.ndarray(shape, dtype=dtype, buffer=span, offset=-low, strides=strides).copy()


def _is_compact(dl):
    expected = 1
    for i in reversed(range(dl.ndim)):
        if dl.shape[i] != 1 and dl.strides[i] != expected:
            return False
        expected *= dl.shape[i]
    return True


def _ret_ndarray(value):
    return NDArray(value.v_handle)


def _ret_dltensor(value):
    return NDArray(value.v_handle, is_view=True)


def _pack_ndarray(arg):
    # A view is a bare DLTensor* of someone else's; only owned arrays are NDArray handles.
    return (arg.handle.value or 0,
            TypeCode.DLTENSOR_HANDLE if arg.is_view else TypeCode.NDARRAY_HANDLE, arg)


register_handle_class(NDArray)
_PACKERS[NDArray] = _pack_ndarray  # the exact class skips the _tcode property
register_return(TypeCode.NDARRAY_HANDLE, _ret_ndarray)
# A bare DLTensor* in a callback is borrowed for the call's duration: a view, no reference taken.
register_return(TypeCode.DLTENSOR_HANDLE, _ret_dltensor,
                lambda values, codes, i: NDArray(values[i].v_handle, is_view=True))


def _shape_tuple(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        if isinstance(shape, (str, bytes)):
            raise TypeError
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError("shape must be an int or a sequence of ints, got %r" % (shape,)) from None
    for i, dim in enumerate(dims):
        if dim < 0:
            raise ValueError("shape %s: dimension %d is negative" % (dims, i))
    return dims


def empty(shape, dtype="float32", device=None):
    """An uninitialised array of ``shape`` and ``dtype`` on ``device`` (default: CPU 0)."""
    dims = _shape_tuple(shape)
    dtype = DataType(dtype)
    dev = device if device is not None else cpu(0)
    c_shape = (ctypes.c_int64 * len(dims))(*dims)
    handle = ctypes.c_void_p()
    check_call(_LIB.TVMArrayAlloc(c_shape, len(dims), dtype.code, dtype.bits, dtype.lanes,
                                  dev.device_type, dev.device_id, ctypes.byref(handle)))
    return NDArray(handle)


def array(source, device=None):
    """A runtime copy of ``source`` (a NumPy array, an NDArray or anything np.asarray takes)."""
    if isinstance(source, NDArray):
        return source.copyto(device if device is not None else source.device)
    source = np.asarray(source)
    return empty(source.shape, DataType(source.dtype), device).copyfrom(source)


def from_dlpack(obj):
    """An NDArray sharing the memory of ``obj`` (anything with ``__dlpack__``, or a DLPack capsule).

    No copy is made; the producer's memory is kept alive until the NDArray is released.
    """
    if isinstance(obj, NDArray):
        return obj
    if hasattr(obj, "__dlpack__"):
        if hasattr(obj, "__dlpack_device__"):
            dev_type = obj.__dlpack_device__()[0]
            if dev_type != 1:
                raise ValueError("from_dlpack: only CPU memory is supported, the producer is on "
                                 "device type %d" % dev_type)
        capsule = obj.__dlpack__()
    elif type(obj).__name__ == "PyCapsule":
        capsule = obj
    else:
        raise TypeError("from_dlpack: expected an object with __dlpack__ or a DLPack capsule, "
                        "got %s" % type(obj).__name__)
    if not _PyCapsule_IsValid(capsule, _DLTENSOR_NAME):
        raise ValueError("from_dlpack: the capsule is not a DLPack tensor or was already consumed")
    managed = _PyCapsule_GetPointer(capsule, _DLTENSOR_NAME)
    handle = ctypes.c_void_p()
    check_call(_LIB.TVMArrayFromDLPack(managed, ctypes.byref(handle)))
    # The runtime now owns the tensor (it calls the deleter); the capsule must not.
    _PyCapsule_SetName(capsule, _USED_DLTENSOR_NAME)
    return NDArray(handle)
