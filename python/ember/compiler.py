"""ember.compile: ONNX model -> artifact (graph.json + lib.so + params.bin) or one shared library.

The compiler lives in libember_compiler.so (its global ``ember.compile``) or, failing that, in the
``emberc`` program (the command line of DESIGN.md). Neither is needed to *run* artifacts.
"""
import os
import shutil
import struct
import subprocess
import tempfile

import numpy as np

from . import libinfo
from ._ffi.base import EmberError, compiler_lib_error, load_compiler_lib
from ._ffi.packed_func import get_global_func
from ._ffi.types import DataType

__all__ = ["compile", "Artifact"]

ARTIFACT_FILES = ("graph.json", "lib.so", "params.bin")
SYSTEM_LIB_FILE = "lib.o"  # what the compiler writes instead of lib.so with system_lib
# Global the compiler library registers (compiler/driver/compile_global.cc):
#   ember.compile(model_path, out_dir, target, opt_level, input_shapes[, system_lib])
# input_shapes is "name=d0,d1;name2=..." (possibly empty); it writes the artifact into out_dir.
COMPILE_GLOBAL = "ember.compile"


class Artifact:
    """A compiled model: graph.json, lib.so and params.bin in ``directory``."""

    def __init__(self, directory, owns_directory=False, _options=None):
        self.directory = os.fspath(directory)
        self._owned = self.directory if owns_directory else None
        self._options = _options  # how ember.compile made it, for export_library
        for name in ARTIFACT_FILES:
            if not os.path.isfile(os.path.join(self.directory, name)):
                raise EmberError("artifact in %s is missing %s" % (self.directory, name))

    def __del__(self):
        if getattr(self, "_owned", None) is not None:
            shutil.rmtree(self._owned, ignore_errors=True)

    @property
    def graph_json(self):
        with open(os.path.join(self.directory, "graph.json"), encoding="utf-8") as f:
            return f.read()

    @property
    def params(self):
        with open(os.path.join(self.directory, "params.bin"), "rb") as f:
            return f.read()

    def export(self, directory):
        """Write graph.json, lib.so and params.bin into ``directory`` (created if needed)."""
        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        for name in ARTIFACT_FILES:
            shutil.copyfile(os.path.join(self.directory, name), os.path.join(directory, name))
        return directory

    def export_library(self, path):
        """Write one shared library carrying the kernels, the graph and the params.

        ``ember.load_artifact(path)`` and ``ember-run path`` run it. The kernels are emitted again
        as an object (the compiler's system-lib mode, its static registration removed) and linked
        by ld.lld with the factory blob the runtime serialises, exported as ``__tvm_dev_mblob``.
        """
        path = os.path.abspath(os.fspath(path))
        if self._options is None:
            raise EmberError("export_library needs an artifact made by ember.compile (it compiles "
                             "the kernels again as an object); this one was opened from %s" %
                             self.directory)
        work = tempfile.mkdtemp(prefix="ember-export-")
        try:
            opts = self._options
            _run_compiler(opts["model"], work, opts["target"], opts["opt_level"], opts["specs"],
                          binds=opts.get("binds", ()),
                          system_lib=True)
            with open(os.path.join(work, "graph.json"), encoding="utf-8") as f:
                if f.read() != self.graph_json:
                    raise EmberError("export_library: compiling %s again gave a different graph; "
                                     "did the model file change since ember.compile?" %
                                     opts["model"])
            link_single_library(os.path.join(work, SYSTEM_LIB_FILE), self.graph_json, self.params,
                                path)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return path

    def load(self, device=None):
        """A GraphModule running this artifact."""
        from .runtime import load_artifact
        return load_artifact(self.directory, device)

    def __repr__(self):
        return "<ember.Artifact %s>" % self.directory


def link_single_library(kernel_object, graph_json, params, path):
    """Link the single-file artifact ``path``: the kernels of ``kernel_object`` (a relocatable
    object exporting one packed function per graph node) plus graph and params, serialised by the
    runtime as a GraphExecutorFactory and exported as ``__tvm_dev_mblob``."""
    lld = _find_tool("EMBER_LLD", ("ld.lld-19", "ld.lld"))
    objcopy = _find_tool("EMBER_OBJCOPY", ("llvm-objcopy-19", "llvm-objcopy"))
    work = tempfile.mkdtemp(prefix="ember-link-")
    try:
        kernels = os.path.join(work, "kernels.o")
        shutil.copyfile(kernel_object, kernels)
        # A system-lib object registers its kernels at load time; a shared library is searched
        # with dlsym instead, so that registration is dropped.
        _check_run([objcopy, "--wildcard", "--remove-section=.init_array*",
                    "--remove-section=.rela.init_array*", "--remove-section=.rel.init_array*",
                    kernels], "strip the static registration from the kernel object")
        with open(os.path.join(work, "blob.bin"), "wb") as f:
            f.write(_factory_blob(graph_json, params))
        # lld names a binary input's start symbol after its path: run in `work`, pass blob.bin.
        _check_run([lld, "-shared", "--eh-frame-hdr", "-z", "noexecstack", "-o",
                    os.path.abspath(path), "kernels.o", "--format=binary", "blob.bin",
                    "--format=elf", "--defsym=__tvm_dev_mblob=_binary_blob_bin_start"],
                   "link %s" % path, cwd=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return path


def _find_tool(env, names):
    path = os.environ.get(env)
    if path:
        if not os.path.isfile(path):
            raise EmberError("%s=%s: no such file" % (env, path))
        return path
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise EmberError("export_library needs %s (Debian: lld-19 / llvm-19); none found on PATH, "
                     "and %s is not set" % (" or ".join(names), env))


def _check_run(cmd, what, cwd=None):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    if proc.returncode != 0:
        raise EmberError("export_library: cannot %s: %s" %
                         (what, proc.stderr.strip() or "exit code %d" % proc.returncode))


_PARAMS_LIST_MAGIC = 0xF7E58D4F05049CB7
_PARAMS_ARRAY_MAGIC = 0xDD5E40F096B4A13F


def read_params(blob, source="params.bin"):
    """{name: numpy array} from bytes in the params format of DESIGN.md."""
    def fail(why):
        raise EmberError("%s: %s" % (source, why))

    offset = 0

    def take(fmt):
        nonlocal offset
        size = struct.calcsize(fmt)
        if offset + size > len(blob):
            fail("truncated at byte %d" % offset)
        values = struct.unpack_from(fmt, blob, offset)
        offset += size
        return values

    magic, _, count = take("<QQQ")
    if magic != _PARAMS_LIST_MAGIC:
        fail("bad magic %#x, expected %#x" % (magic, _PARAMS_LIST_MAGIC))
    if count > len(blob) // 8:
        fail("claims %d names in %d bytes" % (count, len(blob)))
    names = []
    for _ in range(count):
        (length,) = take("<Q")
        if offset + length > len(blob):
            fail("truncated name at byte %d" % offset)
        names.append(blob[offset:offset + length].decode("utf-8"))
        offset += length
    (num_arrays,) = take("<Q")
    if num_arrays != count:
        fail("%d names but %d arrays" % (count, num_arrays))
    arrays = {}
    for name in names:
        magic, _, _dev_type, _dev_id, ndim, code, bits, lanes = take("<QQiiiBBH")
        if magic != _PARAMS_ARRAY_MAGIC:
            fail("array %s: bad magic %#x" % (name, magic))
        if not 0 <= ndim <= 32:
            fail("array %s: rank %d" % (name, ndim))
        shape = take("<%dq" % ndim)
        (nbytes,) = take("<q")
        dtype = DataType("%s%d" % ({0: "int", 1: "uint", 2: "float"}.get(code, "?"), bits)
                         if (code, bits) != (1, 1) else "bool")
        if lanes != 1 or nbytes < 0 or offset + nbytes > len(blob):
            fail("array %s: unsupported lanes %d or bad byte size %d" % (name, lanes, nbytes))
        arr = np.frombuffer(blob, dtype=dtype.numpy_dtype(), count=nbytes // dtype.itemsize,
                            offset=offset)
        arrays[name] = arr.reshape(shape)
        offset += nbytes
    return arrays


def _factory_blob(graph_json, params_bytes):
    """The runtime's serialised GraphExecutorFactory (graph + params) for ``__tvm_dev_mblob``."""
    from . import ndarray
    create = get_global_func("tvm.graph_executor_factory.create")
    serialize = get_global_func("runtime.SerializeFactoryBlob")
    args = []
    for name, arr in read_params(params_bytes).items():
        args += [name, ndarray.array(arr)]
    return serialize(create(graph_json, None, "default", *args))


def _bind_spec(bind):
    """["name=v", "name2=v0,v1"] from {name: number or sequence of numbers}."""
    if not bind:
        return []
    if not isinstance(bind, dict):
        raise TypeError("bind must be a dict {name: value}, got %s" % type(bind).__name__)
    specs = []
    for name, value in bind.items():
        values = np.asarray(value).reshape(-1)
        if values.size == 0 or values.dtype.kind not in "biuf":
            raise TypeError("bind[%r] must be a number or a sequence of numbers, got %r" %
                            (name, value))
        whole = values.dtype.kind in "biu"
        specs.append("%s=%s" % (name, ",".join(str(int(v)) if whole else repr(float(v))
                                               for v in values)))
    return specs


def _shape_spec(input_shapes):
    if not input_shapes:
        return []
    if not isinstance(input_shapes, dict):
        raise TypeError("input_shapes must be a dict {name: shape}, got %s" %
                        type(input_shapes).__name__)
    specs = []
    for name, shape in input_shapes.items():
        try:
            dims = [int(d) for d in shape]
        except TypeError:
            raise TypeError("input_shapes[%r] must be a sequence of ints, got %r" %
                            (name, shape)) from None
        specs.append("%s=%s" % (name, ",".join(str(d) for d in dims)))
    return specs


def find_emberc():
    """Path of the emberc program: $EMBERC, beside the runtime library's build, or PATH."""
    env = os.environ.get("EMBERC")
    if env:
        return env if os.path.isfile(env) else None
    from ._ffi.base import RUNTIME_LIB_PATH
    candidates = []
    if os.path.isabs(RUNTIME_LIB_PATH):
        candidates.append(os.path.join(os.path.dirname(os.path.dirname(RUNTIME_LIB_PATH)),
                                       "bin", "emberc"))
    if libinfo._IN_SOURCE_TREE:
        candidates.append(os.path.join(libinfo._REPO_DIR, "build", "bin", "emberc"))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("emberc")


def compile(model, target="llvm", input_shapes=None, opt_level=3, bind=None):  # noqa: A001
    """Compile the ONNX model at ``model`` (a path, or an onnx.ModelProto) into an Artifact.

    ``input_shapes`` gives static shapes for dynamic inputs: ``{"data": (1, 3, 224, 224)}``.
    ``bind`` fixes inputs at compile time, as ``emberc --bind`` does: ``{"sr": 16000}`` (a
    number, or a sequence of numbers for a tensor input); they leave the artifact's inputs.
    """
    if not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise ValueError("opt_level must be an int in 0..3, got %r" % (opt_level,))
    if not isinstance(target, str):
        raise TypeError("target must be a str such as 'llvm -mtriple=aarch64-linux-gnu', got %s" %
                        type(target).__name__)
    specs = _shape_spec(input_shapes)
    binds = _bind_spec(bind)
    out_dir = tempfile.mkdtemp(prefix="ember-artifact-")
    try:
        model_path = _model_path(model, out_dir)
        _run_compiler(model_path, out_dir, target, opt_level, specs, binds=binds)
        options = {"model": model_path, "target": target, "opt_level": opt_level, "specs": specs,
                   "binds": binds}
        return Artifact(out_dir, owns_directory=True, _options=options)
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise


def _model_path(model, out_dir):
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto: kept beside the artifact
        path = os.path.join(out_dir, "model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        return path
    path = os.fspath(model)
    if not os.path.isfile(path):
        raise FileNotFoundError("compile: no such model file: %s" % path)
    return os.path.abspath(path)


def _run_compiler(model_path, out_dir, target, opt_level, specs, system_lib=False, binds=()):
    load_compiler_lib()
    build = get_global_func(COMPILE_GLOBAL, allow_missing=True)
    if build is not None:
        if binds:
            build(model_path, out_dir, target, opt_level, ";".join(specs), system_lib,
                  ";".join(binds))
        elif system_lib:
            build(model_path, out_dir, target, opt_level, ";".join(specs), True)
        else:
            build(model_path, out_dir, target, opt_level, ";".join(specs))
        return
    emberc = find_emberc()
    if emberc is None:
        raise EmberError("ember.compile needs the compiler, which was not found: %s; and no emberc "
                         "program was found either (set EMBERC, or build with "
                         "-DEMBER_BUILD_COMPILER=ON)" % (compiler_lib_error() or
                                                        "libember_compiler.so has no global %r" %
                                                        COMPILE_GLOBAL))
    cmd = [emberc, "compile", model_path, "-o", out_dir, "--target", target,
           "--opt-level", str(opt_level)]
    for spec in specs:
        cmd += ["--input-shape", spec]
    for spec in binds:
        cmd += ["--bind", spec]
    if system_lib:
        cmd.append("--system-lib")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        reason = (proc.stderr.strip() or proc.stdout.strip() or "exit code %d" % proc.returncode)
        raise EmberError("compile %s failed: %s" % (os.path.basename(model_path), reason))
