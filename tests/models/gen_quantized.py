#!/usr/bin/python3
"""Write int8 models made by `emberc quantize`, and their suite manifest.

Usage:  gen_quantized.py OUTDIR [--emberc PATH]

MobileNetV2 of gen_models.py is quantized on a few seeded random images (the calibration set,
OUTDIR/calibration/*.npy) into OUTDIR/mobilenetv2_int8.onnx, a QDQ model whose 52 convs Ember
runs as integer QLinearConvs; check_suite.py then compares Ember with ONNX Runtime on it
(OUTDIR/manifest.tsv, check_suite.py's format). Both run the convs exactly; the float ops between
the Q/DQ pairs (residual Add, GlobalAveragePool, the final Gemm) round differently, and a
requantization can turn that into one step, so the tolerance is a share of the output's range.
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen_models  # noqa: E402

CALIBRATION_SAMPLES = 4
SEED = 18
# Measured 2026-11-26 (818b42a): max 0.36% of the range, mean 0.09%.
TOLERANCE = "range=0.01,mean=0.002"


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 0 if argv in (["-h"], ["--help"]) else 2
    outdir = argv[0]
    emberc = argv[argv.index("--emberc") + 1] if "--emberc" in argv else (
        os.environ.get("EMBERC") or os.path.join(ROOT, "build", "bin", "emberc"))
    os.makedirs(outdir, exist_ok=True)
    gen_models.main([outdir, "--only", "mobilenetv2"])
    cal = os.path.join(outdir, "calibration")
    os.makedirs(cal, exist_ok=True)
    rs = np.random.RandomState(SEED)
    for i in range(CALIBRATION_SAMPLES):
        np.save(os.path.join(cal, "%02d.npy" % i),
                rs.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32))
    subprocess.run([emberc, "quantize", os.path.join(outdir, "mobilenetv2.onnx"), "-o",
                    os.path.join(outdir, "mobilenetv2_int8.onnx"), "--calibration", cal,
                    "--report", os.path.join(outdir, "mobilenetv2_int8_report.tsv")],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(outdir, "manifest.tsv"), "w") as f:
        f.write("# Written by tests/models/gen_quantized.py: name, emberc arguments, tolerance, "
                "expected result, note\n")
        f.write("\t".join(["mobilenetv2_int8", "-", TOLERANCE, "ok",
                           "MobileNetV2 quantized by emberc quantize (%d random calibration "
                           "images): QDQ, 52 integer convs" % CALIBRATION_SAMPLES]) + "\n")
    print("gen_quantized.py: mobilenetv2_int8 in %s" % outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
