"""Tests of bench/int8_dots.py: the ARM int8 conv kernels' inner loops, counted.

Run:  /usr/bin/python3 -m pytest tests/models/test_int8_dots.py

The first test feeds the step counter instruction lists written by hand; the second compiles one
int8 conv case of tests/models/gen_int8_convs.py with build/'s emberc for aarch64 with and
without the dot product and for ARMv7, and reads the script's counts (llvm-objdump-19).
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "bench", "int8_dots.py")
EMBERC = os.environ.get("EMBERC") or os.path.join(ROOT, "build", "bin", "emberc")
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, HERE)
import gen_int8_convs  # noqa: E402
import int8_dots  # noqa: E402


def test_dot_steps_counts_each_form():
    assert int8_dots.dot_steps(["sdot", "sdot", "ldr", "add"]) == 2
    # The channels form: smull + smlal + sadalp per step; the pixels form: 2 smull + 2 sadalp.
    assert int8_dots.dot_steps(["smull"] * 3 + ["smlal"] * 3 + ["sadalp"] * 3 + ["dup"]) == 3
    assert int8_dots.dot_steps(["smull"] * 8 + ["sadalp"] * 8 + ["tbl"]) == 4
    assert int8_dots.dot_steps(["vmull.s8"] * 2 + ["vmlal.s8"] * 2 + ["vpadal.s16"] * 2) == 2
    assert int8_dots.dot_steps(["fmla", "ldr"]) == 0


@pytest.mark.skipif(not os.path.exists(EMBERC), reason="build/bin/emberc is not built")
def test_each_arm_target_counts_its_dot(tmp_path):
    graph, _, _ = gen_int8_convs.qlinear_conv_case(*gen_int8_convs.CONV_CASES[0])
    model = tmp_path / "conv.onnx"
    model.write_bytes(gen_int8_convs.model(graph).SerializeToString())
    report = tmp_path / "rows.json"
    out = subprocess.run(
        [sys.executable, SCRIPT, str(model), "--target", "aarch64", "--target", "aarch64-dotprod",
         "--target", "armv7", "--work", str(tmp_path / "work"), "--json", str(report)],
        check=True, capture_output=True, text=True, env=dict(os.environ, EMBERC=EMBERC)).stdout
    rows = {r["target"]: r for r in json.loads(report.read_text())}
    assert rows["aarch64-dotprod"]["schedule"].endswith("_neon_dotprod")
    assert rows["aarch64"]["schedule"].endswith("_neon")
    assert rows["armv7"]["schedule"].endswith("_neon32")
    # One sdot per step and little else; the widening forms take 3 or 4 multiply instructions
    # per step and their loads and broadcasts.
    assert 1 <= rows["aarch64-dotprod"]["per_step"] < 3
    for target in ("aarch64", "armv7"):
        assert 3 <= rows[target]["per_step"] < 10, rows[target]
    assert "conv2d_int8" in out and "MAC/insn" in out
