"""ember.quantize: post-training static quantization of a float32 ONNX model into a QDQ model.

It runs ``emberc quantize`` (README, "int8: quantizing a model") through the global
``ember.quantize`` that libember_compiler.so registers, or the ``emberc`` program when the library
is not loadable. Calibration data is a directory of .npy files in emberc's layout, or an iterable
of ``{input_name: ndarray}`` samples, written to a temporary directory in that layout.
"""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ._ffi.base import EmberError, load_compiler_lib
from ._ffi.packed_func import get_global_func
from .compiler import find_emberc

__all__ = ["quantize"]

QUANTIZE_GLOBAL = "ember.quantize"  # compiler/driver/compile_global.cc: (args one per line) -> JSON


def quantize(model, output, calibration, method="minmax", percentile=None, exclude=(),
             per_tensor_weights=False, input_shapes=None, report=None):
    """Quantize ``model`` (an .onnx path) into the QDQ model ``output``.

    ``calibration``: a directory (``DIR/SAMPLE/INPUT.npy``, or ``DIR/*.npy`` for a one-input
    model) or an iterable of ``{input_name: ndarray}``. ``method``: ``"minmax"`` or
    ``"percentile"`` (``percentile`` default 99.99). ``exclude``: node names kept float.
    ``input_shapes``: ``{name: shape}`` for inputs with dynamic dimensions. ``report``: a .tsv or
    .json file for the per-layer error table.

    Returns the report as a dict: ``{"samples", "quantized_nodes", "excluded_nodes", "layers":
    [{"node", "op", "tensor", "sqnr_db", "max_abs_error", "fp32_range", "max_error_of_range"}]}``
    (``sqnr_db`` None where the quantized values equal fp32's).
    """
    model = os.fspath(model)
    output = os.fspath(output)
    if isinstance(exclude, str):
        exclude = [exclude]
    work = None
    try:
        if isinstance(calibration, (str, os.PathLike)):
            cal_dir = os.fspath(calibration)
        else:
            work = tempfile.mkdtemp(prefix="ember-calibration-")
            cal_dir = _write_samples(calibration, work)
        args = [model, "-o", output, "--calibration", cal_dir, "--method", method]
        if percentile is not None:
            args += ["--percentile", repr(float(percentile))]
        for name in exclude:
            args += ["--exclude", name]
        if per_tensor_weights:
            args.append("--per-tensor-weights")
        for name, shape in (input_shapes or {}).items():
            args += ["--input-shape", "%s=%s" % (name, ",".join(str(int(d)) for d in shape))]
        if report is not None:
            args += ["--report", os.fspath(report)]
        return json.loads(_run(args))
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _write_samples(samples, directory):
    count = 0
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict) or not sample:
            raise EmberError("quantize: calibration sample %d is %r; expected a dict "
                             "{input_name: ndarray}" % (i, type(sample).__name__))
        sample_dir = os.path.join(directory, "%06d" % i)
        os.makedirs(sample_dir)
        for name, value in sample.items():
            if os.sep in name or name in ("", ".", ".."):
                raise EmberError("quantize: input name %r cannot name a .npy file" % name)
            np.save(os.path.join(sample_dir, name + ".npy"), np.ascontiguousarray(value))
        count += 1
    if count == 0:
        raise EmberError("quantize: the calibration iterable gave no samples")
    return directory


def _run(args):
    for a in args:
        if "\n" in a:
            raise EmberError("quantize: argument %r contains a newline" % a)
    load_compiler_lib()
    fn = get_global_func(QUANTIZE_GLOBAL, allow_missing=True)
    if fn is not None:
        return fn("\n".join(args))
    emberc = find_emberc()
    if emberc is None:
        raise EmberError("ember.quantize needs the compiler (libember_compiler.so or emberc), "
                         "which was not found")
    with tempfile.TemporaryDirectory(prefix="ember-quantize-") as tmp:
        report = os.path.join(tmp, "report.json")
        extra = [] if "--report" in args else ["--report", report]
        proc = subprocess.run([emberc, "quantize"] + args + extra, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise EmberError("quantize %s failed: %s" % (
                os.path.basename(args[0]), proc.stderr.strip() or proc.stdout.strip()))
        path = args[args.index("--report") + 1] if "--report" in args else report
        if path.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                return f.read()
        # A .tsv report was asked for: return what it holds in the JSON shape.
        with open(path, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]
        layers = [{"node": r[0], "op": r[1], "tensor": r[2],
                   "sqnr_db": None if r[3] == "inf" else float(r[3]),
                   "max_abs_error": float(r[4]), "fp32_range": float(r[5]),
                   "max_error_of_range": float(r[6])} for r in rows]
        return json.dumps({"layers": layers})
