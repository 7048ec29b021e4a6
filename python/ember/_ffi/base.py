"""Loading libember_runtime (and libember_compiler when present); C errors as Python exceptions."""
import ctypes
import os
import re

from .. import libinfo


class EmberError(RuntimeError):
    """An error reported by Ember's C++ runtime or compiler (the text of TVMGetLastError)."""


def _load_runtime():
    path = libinfo.find_lib_path(libinfo.RUNTIME_LIB, optional=True)
    # RTLD_GLOBAL: libember_compiler.so and kernel libraries resolve TVMBackend* against it.
    if path is not None:
        return ctypes.CDLL(path, ctypes.RTLD_GLOBAL), path
    if os.environ.get("EMBER_LIBRARY_PATH") is None:
        try:  # Last resort: the dynamic loader's own search (ldconfig cache).
            return ctypes.CDLL(libinfo.RUNTIME_LIB, ctypes.RTLD_GLOBAL), libinfo.RUNTIME_LIB
        except OSError:
            pass
    libinfo.find_lib_path(libinfo.RUNTIME_LIB)  # raises with the list of places searched
    raise AssertionError("unreachable")


_LIB, RUNTIME_LIB_PATH = _load_runtime()

# A library built before the C ABI existed (or a foreign one) fails here with a clear reason
# rather than later with an AttributeError inside ember.
_REQUIRED_SYMBOLS = ("TVMFuncCall", "TVMFuncGetGlobal", "TVMFuncCreateFromCFunc",
                     "TVMCFuncSetReturn", "TVMArrayAlloc", "TVMArrayToDLPack", "TVMModLoadFromFile")
_missing = [name for name in _REQUIRED_SYMBOLS if not hasattr(_LIB, name)]
if _missing:
    raise ImportError("%s does not export the Ember C ABI (missing %s); rebuild it or point "
                      "EMBER_LIBRARY_PATH at a current build" %
                      (RUNTIME_LIB_PATH, ", ".join(_missing)))

_LIB.TVMGetLastError.restype = ctypes.c_char_p
_LIB.TVMGetLastError.argtypes = []
_LIB.TVMAPISetLastError.restype = None
_LIB.TVMAPISetLastError.argtypes = [ctypes.c_char_p]

_compiler_lib = None
_compiler_lib_error = None


def load_compiler_lib():
    """libember_compiler.so loaded once (RTLD_GLOBAL, so its globals register); None when absent."""
    global _compiler_lib, _compiler_lib_error
    if _compiler_lib is None and _compiler_lib_error is None:
        path = libinfo.find_lib_path(libinfo.COMPILER_LIB, optional=True)
        if path is None:
            _compiler_lib_error = "%s not found; searched:\n  %s" % (
                libinfo.COMPILER_LIB, "\n  ".join(libinfo.candidate_paths(libinfo.COMPILER_LIB)))
        else:
            try:
                _compiler_lib = ctypes.CDLL(path, ctypes.RTLD_GLOBAL)
            except OSError as err:
                _compiler_lib_error = "%s could not be loaded: %s" % (path, err)
    return _compiler_lib


def compiler_lib_error():
    """Why load_compiler_lib() returned None (a message naming the places searched)."""
    return _compiler_lib_error


# Python exception types a C++ message may name in front ("ValueError: ...") so a Python
# exception raised inside a callback comes back to Python as the same type.
_ERROR_TYPES = {
    "TypeError": TypeError,
    "ValueError": ValueError,
    "IndexError": IndexError,
    "KeyError": KeyError,
    "AttributeError": AttributeError,
    "NotImplementedError": NotImplementedError,
    "FileNotFoundError": FileNotFoundError,
    "OSError": OSError,
    "ZeroDivisionError": ZeroDivisionError,
    "OverflowError": OverflowError,
    "MemoryError": MemoryError,
}
_ERROR_CLASSES = {}
_NAMED_ERROR = re.compile(r"\b([A-Z][A-Za-z]*Error): ")
# The runtime's argument checks: "f: argument 2 expected int, got str".
_ARG_TYPE_ERROR = re.compile(r"argument \d+ expected .+, got ")


def _error_class(py_type):
    cls = _ERROR_CLASSES.get(py_type)
    if cls is None:
        cls = type("Ember" + py_type.__name__, (EmberError, py_type),
                   {"__str__": BaseException.__str__})  # KeyError would quote the message
        _ERROR_CLASSES[py_type] = cls
    return cls


def error_from_message(msg):
    """The exception for a C++ error message: EmberError, mixed with the Python type it names."""
    match = _NAMED_ERROR.search(msg.split("\n", 1)[0])
    py_type = _ERROR_TYPES.get(match.group(1)) if match else None
    if py_type is None and _ARG_TYPE_ERROR.search(msg):
        py_type = TypeError
    if py_type is None:
        return EmberError(msg)
    return _error_class(py_type)(msg)


def get_last_error():
    """The pending C error as a Python exception."""
    msg = _LIB.TVMGetLastError()
    return error_from_message(msg.decode("utf-8", "replace") if msg else "unknown error")


def check_call(ret):
    """Raise the pending C error when a C ABI call returned non-zero."""
    if ret != 0:
        raise get_last_error()


def c_str(s):
    return s.encode("utf-8")
