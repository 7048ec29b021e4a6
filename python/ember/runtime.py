"""ember.runtime: modules (kernel libraries, artifacts) and the graph executor.

    import ember, numpy as np
    gmod = ember.runtime.load_artifact("out/")   # graph.json + lib.so + params.bin, or one .so
    gmod.set_input(data=np.zeros((1, 3, 224, 224), "float32"))
    gmod.run()
    out = gmod.get_output(0).numpy()
"""
import ctypes
import json
import math
import os
import struct
import time

import numpy as np

from ._ffi.base import _LIB, EmberError, check_call
from ._ffi.packed_func import PackedFunc, get_global_func, register_handle_class, register_return
from ._ffi.types import TypeCode, cpu
from . import ndarray as nd
from .ndarray import NDArray

__all__ = ["Module", "load_module", "load_artifact", "GraphModule", "ExecutorPool",
           "BenchmarkResult", "ProfileResult"]

_TVMModFree = _LIB.TVMModFree


class Module:
    """A runtime module: a kernel library, a graph executor, a factory... Functions by name."""
    __slots__ = ("handle", "_funcs", "__weakref__")

    def __init__(self, handle):
        self.handle = handle if isinstance(handle, ctypes.c_void_p) else ctypes.c_void_p(handle)
        self._funcs = {}

    def __del__(self):
        if self.handle is not None and self.handle.value and _TVMModFree is not None:
            _TVMModFree(self.handle)
            self.handle = None

    def get_function(self, name, query_imports=False, allow_missing=False):
        """The function ``name``: AttributeError if absent (None with ``allow_missing``)."""
        handle = ctypes.c_void_p()
        check_call(_LIB.TVMModGetFunction(self.handle, name.encode("utf-8"),
                                          1 if query_imports else 0, ctypes.byref(handle)))
        if handle.value:
            return PackedFunc(handle, name)
        if allow_missing:
            return None
        raise AttributeError("module %s has no function named %r" % (self.type_key, name))

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError("Module[...] takes a function name (str), got %s" % type(name).__name__)
        func = self._funcs.get(name)
        if func is None:
            func = self._funcs[name] = self.get_function(name, query_imports=True)
        return func

    def __contains__(self, name):
        return self.get_function(name, query_imports=True, allow_missing=True) is not None

    def import_module(self, other):
        """Make ``other``'s functions reachable from this module (TVMModImport)."""
        check_call(_LIB.TVMModImport(self.handle, other.handle))

    @property
    def type_key(self):
        get_key = get_global_func("runtime.ModuleGetTypeKey", allow_missing=True)
        return get_key(self) if get_key is not None else "module"

    def __repr__(self):
        return "<ember.runtime.Module %s at %#x>" % (self.type_key, self.handle.value or 0)


register_handle_class(Module, TypeCode.MODULE_HANDLE)
register_return(TypeCode.MODULE_HANDLE, lambda value: Module(value.v_handle))


def load_module(path, fmt=""):
    """Load a module from a file (``lib.so``, ...); ``fmt`` defaults to the file's extension."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("load_module: no such file: %s" % path)
    handle = ctypes.c_void_p()
    check_call(_LIB.TVMModLoadFromFile(path.encode("utf-8"), fmt.encode("utf-8"),
                                       ctypes.byref(handle)))
    return Module(handle)


def load_artifact(path, device=None):
    """A GraphModule running the artifact at ``path`` on ``device`` (default: CPU 0).

    ``path`` is a directory holding graph.json, lib.so and params.bin (what ``emberc compile -o``
    writes) or a single .so with graph and params embedded.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("load_artifact: no such file or directory: %s" % path)
    loader = get_global_func("runtime.load_artifact", allow_missing=True)
    if loader is None:
        raise EmberError("load_artifact: the runtime has no graph executor (global "
                         "'runtime.load_artifact' is not registered in %s)" % _runtime_path())
    factory = loader(path)
    dev = device if device is not None else cpu(0)
    return GraphModule(factory["default"](dev), factory, dev)


def _runtime_path():
    from ._ffi.base import RUNTIME_LIB_PATH
    return RUNTIME_LIB_PATH


class BenchmarkResult:
    """Timing of ``repeat`` measurements, each the mean of ``number`` runs; figures in ms."""

    def __init__(self, results_ms, number):
        self.results = tuple(results_ms)
        self.number = number
        arr = np.asarray(self.results, dtype=np.float64)
        self.mean = float(arr.mean())
        self.median = float(np.median(arr))
        self.std = float(arr.std())
        self.min = float(arr.min())
        self.max = float(arr.max())
        self.p90 = float(np.percentile(arr, 90))
        self.p99 = float(np.percentile(arr, 99))

    def as_dict(self):
        return {"median_ms": self.median, "mean_ms": self.mean, "std_ms": self.std,
                "min_ms": self.min, "max_ms": self.max, "p90_ms": self.p90, "p99_ms": self.p99,
                "repeat": len(self.results), "number": self.number}

    def __repr__(self):
        return ("BenchmarkResult(median=%.4g ms, mean=%.4g ms, std=%.3g ms, min=%.4g ms, "
                "max=%.4g ms, repeat=%d, number=%d)" %
                (self.median, self.mean, self.std, self.min, self.max, len(self.results),
                 self.number))


class ProfileResult:
    """Per-node timing from the debug executor: ``rows`` (dicts), ``table`` text, ``json`` text."""

    def __init__(self, rows, table, json_text):
        self.rows = rows
        self.table = table
        self.json = json_text

    def __str__(self):
        return self.table

    __repr__ = __str__


class GraphModule:
    """A graph executor: set inputs, run, read outputs. Wraps the module ``factory["default"](dev)``
    returns (TVM's ``graph_executor.GraphModule`` interface)."""

    def __init__(self, module, factory=None, device=None):
        if not isinstance(module, Module):
            raise TypeError("GraphModule wraps a runtime Module, got %s" % type(module).__name__)
        self.module = module
        self.factory = factory
        self._device = device if device is not None else cpu(0)
        self._set_input = module["set_input"]
        self._run = module["run"]
        self._get_output = module["get_output"]
        self._get_num_outputs = module["get_num_outputs"]
        self._get_num_inputs = module.get_function("get_num_inputs", allow_missing=True)
        self._get_input = module.get_function("get_input", allow_missing=True)
        self._get_input_info = module.get_function("get_input_info", allow_missing=True)
        self._load_params = module.get_function("load_params", allow_missing=True)
        self._output_meta = {}

    def set_input(self, key=None, value=None, **params):
        """``set_input("data", array)``, ``set_input(0, array)`` or ``set_input(data=a, mask=b)``.

        Values are NumPy arrays (or anything np.asarray takes) or NDArrays; they are copied in.
        """
        if key is None and value is not None:
            raise TypeError("set_input(None, value): the key is None; give the input's name or "
                            "index")
        if key is not None:
            if value is None:
                raise TypeError("set_input(%r): missing the value" % (key,))
            self._set_input(key, _as_input(value, key))
        for name, val in params.items():
            self._set_input(name, _as_input(val, name))

    def run(self, **inputs):
        """Run the graph (setting ``inputs`` first when given).

        As in TVM, inputs need not all be set: an input never set holds zeros."""
        if inputs:
            self.set_input(**inputs)
        self._run()

    def get_output(self, index, out=None):
        """Output ``index`` copied into a new NDArray (into ``out`` when given).

        A copy, not a view of the executor's memory, so a later ``run()`` cannot change it."""
        if out is not None:
            self._get_output(index, out)
            return out
        meta = self._output_meta.get(index)
        if meta is None:
            view = self._get_output(index)
            meta = self._output_meta[index] = (view.shape, view.dtype)
        copy = nd.empty(meta[0], meta[1])
        self._get_output(index, copy)
        return copy

    def get_input(self, key):
        if self._get_input is None:
            raise EmberError("this graph executor has no get_input")
        return self._get_input(key)

    def get_num_outputs(self):
        return self._get_num_outputs()

    def get_num_inputs(self):
        if self._get_num_inputs is None:
            raise EmberError("this graph executor has no get_num_inputs")
        return self._get_num_inputs()

    def get_input_info(self):
        """{"shape": {name: tuple}, "dtype": {name: str}} of the graph's inputs, params excluded."""
        if self.factory is None:
            raise EmberError("get_input_info needs the factory module (use load_artifact, or "
                             "GraphModule(module, factory))")
        graph = json.loads(self.factory["get_graph_json"]())
        params = set(_param_names(self.factory))
        attrs = graph["attrs"]
        shapes, dtypes = attrs["shape"][1], attrs["dltype"][1]
        info = {"shape": {}, "dtype": {}}
        for nid in graph["arg_nodes"]:
            name = graph["nodes"][nid]["name"]
            if name in params:
                continue
            eid = graph["node_row_ptr"][nid]
            info["shape"][name] = tuple(shapes[eid])
            info["dtype"][name] = dtypes[eid]
        return info

    def load_params(self, params_bytes):
        if self._load_params is None:
            raise EmberError("this graph executor has no load_params")
        self._load_params(bytearray(params_bytes))

    def benchmark(self, repeat=5, number=10, warmup=1, min_repeat_ms=0):
        """Time ``run()``: ``repeat`` measurements, each the mean over ``number`` runs (at least
        ``min_repeat_ms`` long), after ``warmup`` runs. Returns a BenchmarkResult (ms)."""
        if repeat < 1 or number < 1:
            raise ValueError("benchmark: repeat and number must be >= 1, got %d and %d" %
                             (repeat, number))
        run = self._run
        for _ in range(warmup):
            run()
        evaluator = get_global_func("runtime.time_evaluator", allow_missing=True)
        if evaluator is not None:  # the runtime's monotonic clock, no Python in the loop
            dev = self._device
            timer = evaluator(self.module, "run", dev.device_type, dev.device_id, number, repeat,
                              int(min_repeat_ms))
            seconds = np.frombuffer(timer(), dtype=np.float64)
            return BenchmarkResult(seconds * 1e3, number)
        results = []
        clock = time.perf_counter
        for _ in range(repeat):
            count = number
            while True:
                start = clock()
                for _ in range(count):
                    run()
                elapsed_ms = (clock() - start) * 1e3
                if elapsed_ms >= min_repeat_ms or count >= (1 << 20):
                    break
                scaled = int(math.ceil(count * min_repeat_ms / max(elapsed_ms, 1e-3)))
                count = max(count * 2, scaled)
            results.append(elapsed_ms / count)
        return BenchmarkResult(results, number)

    def profile(self, number=1, repeat=1, min_repeat_ms=0, trace=None):
        """Per-node timing through the debug executor: a ProfileResult with the table and rows.

        ``trace``: a file path; one more run is written there as a Chrome trace-event file (one
        event per operator: node, kernel, shapes, thread, start and duration in microseconds) for
        Perfetto (ui.perfetto.dev) or chrome://tracing, as ``ember-run --trace`` writes it.
        """
        result = _profile(self, number, repeat, min_repeat_ms)
        if trace is not None:
            trace_json = self.module.get_function("trace_json", allow_missing=True)
            if trace_json is None:
                raise EmberError("profile: this executor cannot trace (no function 'trace_json')")
            with open(os.fspath(trace), "w") as f:
                f.write(trace_json(1))
        return result

    def __getitem__(self, name):
        return self.module[name]


class ExecutorPool:
    """Runs callable from many threads at once, as ONNX Runtime's ``Session.run``.

    ``ExecutorPool("out/")`` (or a factory Module, or a GraphModule from ``load_artifact``) holds
    executors of one factory that share its params; each ``run`` checks one out, sets every input,
    runs and copies the outputs into new NumPy arrays, with the GIL released while it runs::

        pool = ember.ExecutorPool("out/")
        y, = pool.run(data=x)            # from any number of threads

    ``max_executors`` bounds the executors (0: one per concurrent call).
    """

    def __init__(self, artifact, max_executors=0):
        if isinstance(artifact, GraphModule):
            factory = artifact.factory
            if factory is None:
                raise EmberError("ExecutorPool: this GraphModule has no factory; give the "
                                 "artifact path or load_artifact's GraphModule")
        elif isinstance(artifact, Module):
            factory = artifact
        else:
            path = os.fspath(artifact)
            if not os.path.exists(path):
                raise FileNotFoundError("ExecutorPool: no such file or directory: %s" % path)
            factory = get_global_func("runtime.load_artifact")(path)
        if not isinstance(max_executors, int) or max_executors < 0:
            raise ValueError("ExecutorPool: max_executors must be an int >= 0 (0 = no bound), "
                             "got %r" % (max_executors,))
        self.factory = factory
        self.module = get_global_func("runtime.create_executor_pool")(factory, max_executors)
        self._run = self.module["run"]
        io = json.loads(self.module["get_io_json"]())
        self._inputs = [(i["name"], np.dtype(i["dtype"])) for i in io["inputs"]]
        self._outputs = [(tuple(o["shape"]), np.dtype(o["dtype"])) for o in io["outputs"]]
        self.input_names = [name for name, _ in self._inputs]

    @property
    def num_executors(self):
        """Executors made so far (at most the number of calls that ran at once)."""
        return self.module["get_num_executors"]()

    def run(self, inputs=None, **kwargs):
        """Outputs (a list of NumPy arrays) for ``inputs`` (a dict) and/or keyword inputs; every
        input must be given. Thread-safe."""
        given = dict(inputs or {})
        for name, value in kwargs.items():
            if name in given:
                raise TypeError("ExecutorPool.run: input %r is given twice" % name)
            given[name] = value
        unknown = sorted(set(given) - set(self.input_names))
        if unknown:
            raise KeyError("ExecutorPool.run: no input named %r; inputs are: %s" %
                           (unknown[0], ", ".join(self.input_names) or "(none)"))
        missing = [name for name in self.input_names if name not in given]
        if missing:
            raise ValueError("ExecutorPool.run: input %r is missing; every call gives every "
                             "input (%s)" % (missing[0], ", ".join(self.input_names)))
        args = [_as_input(given[name], name) for name in self.input_names]
        outs = [np.empty(shape, dtype) for shape, dtype in self._outputs]
        self._run(*args, *outs)
        return outs


def _as_input(value, name):
    if isinstance(value, NDArray):
        return value
    arr = np.asarray(value)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr


def _param_names(factory):
    """Names of the params a factory holds: serialised by runtime.SaveParams, names read back from
    the header of the params format (magic, reserved, count, then length-prefixed names)."""
    save = get_global_func("runtime.SaveParams")
    blob = save(factory["get_params"]())
    magic, _, count = struct.unpack_from("<QQQ", blob, 0)
    if magic != _PARAMS_MAGIC:
        raise EmberError("runtime.SaveParams wrote magic %#x, expected %#x" %
                         (magic, _PARAMS_MAGIC))
    names, offset = [], 24
    for _ in range(count):
        (length,) = struct.unpack_from("<Q", blob, offset)
        names.append(blob[offset + 8:offset + 8 + length].decode("utf-8"))
        offset += 8 + length
    return names


_PARAMS_MAGIC = 0xF7E58D4F05049CB7


def _profile(gmod, number, repeat, min_repeat_ms):
    profile_json = gmod.module.get_function("profile_json", allow_missing=True)
    if profile_json is None:
        raise EmberError("profile: this executor has no per-node profiler (function "
                         "'profile_json')")
    report = json.loads(profile_json(number, repeat, min_repeat_ms))
    rows = []
    for node in report["nodes"]:
        row = dict(node)
        row["time_ms"] = node["time_us"] / 1e3
        rows.append(row)
    rows.sort(key=lambda r: -r["time_ms"])
    lines = ["%-32s %-28s %-20s %12s %8s" % ("node", "function", "shape", "time (ms)", "share")]
    for row in rows:
        lines.append("%-32s %-28s %-20s %12.6f %7.2f%%" % (row["name"], row.get("func_name", ""),
                                                          row.get("shape", ""), row["time_ms"],
                                                          row.get("percent", 0.0)))
    lines.append("%-82s %12.6f" % ("total", report.get("total_us", 0.0) / 1e3))
    return ProfileResult(rows, "\n".join(lines), json.dumps(report))
