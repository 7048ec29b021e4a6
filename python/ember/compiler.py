"""ember.compile: ONNX model -> artifact (graph.json + lib.so + params.bin).

The compiler lives in libember_compiler.so (its global ``ember.compile``) or, failing that, in the
``emberc`` program (the command line of DESIGN.md). Neither is needed to *run* artifacts.
"""
import os
import shutil
import subprocess
import tempfile

from . import libinfo
from ._ffi.base import EmberError, compiler_lib_error, load_compiler_lib
from ._ffi.packed_func import get_global_func

__all__ = ["compile", "Artifact"]

ARTIFACT_FILES = ("graph.json", "lib.so", "params.bin")
# Global the compiler library registers:
#   ember.compile(model_path: str, out_dir: str, target: str, opt_level: int, input_shapes: str)
# where input_shapes is "name=d0,d1;name2=..." (possibly empty, as ParseInputShapeList takes it);
# it writes ARTIFACT_FILES into out_dir.
COMPILE_GLOBAL = "ember.compile"
EXPORT_LIBRARY_GLOBAL = "ember.export_library"


class Artifact:
    """A compiled model: the three artifact files in ``directory``."""

    def __init__(self, directory, owns_directory=False):
        self.directory = os.fspath(directory)
        self._owned = directory if owns_directory else None
        for name in ARTIFACT_FILES:
            if not os.path.isfile(os.path.join(self.directory, name)):
                raise EmberError("artifact in %s is missing %s" % (self.directory, name))

    def __del__(self):
        if self._owned is not None:
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
        """Write one shared library carrying the kernels, the graph and the params."""
        path = os.fspath(path)
        load_compiler_lib()
        export = get_global_func(EXPORT_LIBRARY_GLOBAL, allow_missing=True)
        if export is None:
            raise EmberError("export_library: the compiler library provides no global %r (%s); use "
                             "export(dir) for the three-file artifact" %
                             (EXPORT_LIBRARY_GLOBAL, compiler_lib_error() or "it is loaded"))
        export(self.directory, path)
        return path

    def load(self, device=None):
        """A GraphModule running this artifact."""
        from .runtime import load_artifact
        return load_artifact(self.directory, device)

    def __repr__(self):
        return "<ember.Artifact %s>" % self.directory


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


def compile(model, target="llvm", input_shapes=None, opt_level=3):  # noqa: A001 - public API name
    """Compile the ONNX model at ``model`` (a path, or an onnx.ModelProto) into an Artifact.

    ``input_shapes`` gives static shapes for dynamic inputs: ``{"data": (1, 3, 224, 224)}``.
    """
    if not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise ValueError("opt_level must be an int in 0..3, got %r" % (opt_level,))
    if not isinstance(target, str):
        raise TypeError("target must be a str such as 'llvm -mtriple=aarch64-linux-gnu', got %s" %
                        type(target).__name__)
    specs = _shape_spec(input_shapes)
    out_dir = tempfile.mkdtemp(prefix="ember-artifact-")
    try:
        model_path = _model_path(model, out_dir)
        _run_compiler(model_path, out_dir, target, opt_level, specs)
        if model_path.startswith(out_dir):
            os.remove(model_path)
        return Artifact(out_dir, owns_directory=True)
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise


def _model_path(model, out_dir):
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        path = os.path.join(out_dir, "model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        return path
    path = os.fspath(model)
    if not os.path.isfile(path):
        raise FileNotFoundError("compile: no such model file: %s" % path)
    return os.path.abspath(path)


def _run_compiler(model_path, out_dir, target, opt_level, specs):
    load_compiler_lib()
    build = get_global_func(COMPILE_GLOBAL, allow_missing=True)
    if build is not None:
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
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        reason = (proc.stderr.strip() or proc.stdout.strip() or "exit code %d" % proc.returncode)
        raise EmberError("compile %s failed: %s" % (os.path.basename(model_path), reason))
