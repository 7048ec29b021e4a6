#!/usr/bin/python3
"""Overhead of calling Ember from Python, next to ctypes' own call overhead.

Usage: bench/bench_python_ffi.py [--repeat R] [--number N] [--json]
(EMBER_LIBRARY_PATH picks the build; default: build/lib of this tree.)

Rows (ns per call: median and min over R repeats of N calls; min shows the cost on a quiet core):
  ctypes bare call          TVMGetLastError() through ctypes: the floor of any ctypes call
  ctypes TVMFuncCall        a C++ global called with hand-packed TVMValues (no ember wrapper)
  ember C++ global, k args  ember.PackedFunc.__call__ of the same C++ global
  (when no cheap C++ global is registered, the C function `nop` of tests/python/kernels.c, built
   with cc and reached through the runtime's DSO module, stands in for it)
  ember C kernel add_f32    a real kernel call with NDArray / numpy arguments
  ember Python global       a Python no-op registered with register_func, called from Python
                            (Python -> C ABI -> C++ PackedFunc -> ctypes callback -> Python)
"""
import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import ember  # noqa: E402
from ember._ffi import base  # noqa: E402
from ember._ffi.types import TVMValue  # noqa: E402

# Cheap C++ globals that take ints and do (almost) nothing; the first one present is used.
CPP_NOOP_CANDIDATES = ["testing.nop", "runtime.nop", "ember.testing.nop"]


def _kernel_nop():
    """The `nop` of tests/python/kernels.c as a PackedFunc (None without a C compiler)."""
    import shutil
    import subprocess
    import tempfile
    cc = os.environ.get("CC") or shutil.which("cc")
    if cc is None:
        return None
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(tempfile.mkdtemp(prefix="ember-bench-"), "kernels.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-I", os.path.join(repo, "include"),
                    os.path.join(repo, "tests", "python", "kernels.c"), "-o", out], check=True)
    global _kernel_module
    _kernel_module = ember.load_module(out)
    return _kernel_module["nop"]


_kernel_module = None


def measure(stmt, repeat, number):
    """(median, min) ns per call over ``repeat`` runs of ``number`` calls."""
    times = timeit.repeat(stmt, repeat=repeat, number=number)
    return statistics.median(times) / number * 1e9, min(times) / number * 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=100000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    lib = base._LIB

    get_last_error = lib.TVMGetLastError
    rows.append(("ctypes bare call (TVMGetLastError)", measure(get_last_error, args.repeat,
                                                               args.number)))

    cpp_name = next((n for n in CPP_NOOP_CANDIDATES
                     if ember.get_global_func(n, allow_missing=True) is not None), None)
    func = ember.get_global_func(cpp_name) if cpp_name is not None else _kernel_nop()
    if func is not None:
        label = "ember C++ global" if cpp_name else "ember C func (nop)"
        cpp_name = cpp_name or "kernels.c nop via DSO module"
        handle = func.handle
        ret, code = TVMValue(), ctypes.c_int()
        ret_ref, code_ref = ctypes.byref(ret), ctypes.byref(code)
        call = lib.TVMFuncCall
        rows.append(("ctypes TVMFuncCall, C nop, 0 args",
                     measure(lambda: call(handle, None, None, 0, ret_ref, code_ref), args.repeat,
                             args.number)))
        rows.append((label + ", 0 args", measure(func, args.repeat, args.number)))
        rows.append((label + ", 1 int arg", measure(lambda: func(1), args.repeat, args.number)))
        rows.append((label + ", 3 int args", measure(lambda: func(1, 2, 3), args.repeat,
                                                     args.number)))

    num_threads = ember.get_global_func("runtime.NumThreads", allow_missing=True)
    if num_threads is not None:  # a real C++ global that takes nothing and returns an int
        nt_handle = num_threads.handle
        ret, code = TVMValue(), ctypes.c_int()
        ret_ref, code_ref = ctypes.byref(ret), ctypes.byref(code)
        call = lib.TVMFuncCall
        rows.append(("ctypes TVMFuncCall, runtime.NumThreads",
                     measure(lambda: call(nt_handle, None, None, 0, ret_ref, code_ref),
                             args.repeat, args.number)))
        rows.append(("ember C++ global runtime.NumThreads()",
                     measure(num_threads, args.repeat, args.number)))

    if _kernel_module is not None or _kernel_nop() is not None:
        import numpy as np
        add = _kernel_module["add_f32"]
        a, b, c = (ember.nd.array(np.ones(4, dtype="float32")) for _ in range(3))
        rows.append(("ember C kernel add_f32, 3 NDArrays of 4 floats",
                     measure(lambda: add(a, b, c), args.repeat, args.number)))
        x, y, z = (np.ones(4, dtype="float32") for _ in range(3))
        rows.append(("ember C kernel add_f32, 3 numpy arrays (DLTensor)",
                     measure(lambda: add(x, y, z), args.repeat, args.number // 4)))

    ember.register_func("bench.python_nop", lambda *a: None, override=True)
    py_nop = ember.get_global_func("bench.python_nop")
    rows.append(("ember Python global, 0 args", measure(py_nop, args.repeat, args.number // 4)))
    rows.append(("ember Python global, 3 int args", measure(lambda: py_nop(1, 2, 3), args.repeat,
                                                            args.number // 4)))
    python_nop = lambda: None  # noqa: E731
    rows.append(("plain Python no-op call (reference)", measure(python_nop, args.repeat,
                                                                args.number)))

    if args.json:
        print(json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                          "cpp_global": cpp_name,
                          "median_ns": {name: round(ns[0], 1) for name, ns in rows},
                          "min_ns": {name: round(ns[1], 1) for name, ns in rows}}))
        return
    print("Python %s on %s (%s), median of %d repeats" % (platform.python_version(),
                                                         platform.machine(), platform.processor()
                                                         or platform.node(), args.repeat))
    if cpp_name == "kernels.c nop via DSO module":
        print("(no cheap C++ global among %s is registered: the C rows call the nop of "
              "tests/python/kernels.c through the DSO module)" % ", ".join(CPP_NOOP_CANDIDATES))
    print("%-52s %12s %12s" % ("", "median ns", "min ns"))
    for name, (median, best) in rows:
        print("%-52s %12.1f %12.1f" % (name, median, best))


if __name__ == "__main__":
    main()
