"""Tests of bench/conv_gflops.py: Conv FLOP counting, matching kernels to Convs, the report.

Run:  /usr/bin/python3 -m pytest tests/models/test_conv_gflops.py

The counting tests use a small hand-built ONNX model and figures worked out by hand; the
report tests use a hand-written graph.json with stand-ins for ember-run and bench_peak; the
last test runs the real emberc and ember-run of build/ when they are built.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "bench", "conv_gflops.py")
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, HERE)
import conv_gflops  # noqa: E402
import gen_models  # noqa: E402


def tiny_model():
    """x[2,3,10,12] -> stem (3x3 pad 1) -> Relu -> Conv (group 2, 1x3, stride 2)
    -> Conv (depthwise 3x3, dilation 2, pad 2); the last three nodes are unnamed."""
    rs = np.random.RandomState(0)

    def w(name, shape):
        return numpy_helper.from_array(rs.uniform(-0.5, 0.5, shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w_stem", "b_stem"], ["a"], name="stem",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Conv", ["r", "w_g"], ["g"], group=2, kernel_shape=[1, 3],
                         strides=[2, 2]),
        helper.make_node("Conv", ["g", "w_dw"], ["y"], group=6, kernel_shape=[3, 3],
                         dilations=[2, 2], pads=[2, 2, 2, 2]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 10, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, 5, 5])],
        initializer=[w("w_stem", (8, 3, 3, 3)), w("b_stem", (8,)), w("w_g", (6, 4, 1, 3)),
                     w("w_dw", (6, 1, 3, 3))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


# By hand: 2 * N * OC * OH * OW * (IC / group) * KH * KW.
STEM_FLOPS = 2 * 2 * 8 * 10 * 12 * 3 * 3 * 3          # 103680: same-size 3x3
GROUP_FLOPS = 2 * 2 * 6 * 5 * 5 * 4 * 1 * 3           # 7200: OH (10-1)//2+1, OW (12-3)//2+1
DEPTHWISE_FLOPS = 2 * 2 * 6 * 5 * 5 * 1 * 3 * 3       # 5400: dilation 2 with pad 2 keeps 5x5


def test_counts_conv_flops_by_hand():
    layers = conv_gflops.conv_layers(tiny_model())
    # Unnamed nodes get emberc's names: OPTYPE_K, K counting unnamed nodes of any type.
    assert sorted(layers) == ["Conv_1", "Conv_2", "stem"]
    assert layers["stem"]["flops"] == STEM_FLOPS == 103680
    assert layers["stem"]["output_shape"] == [2, 8, 10, 12]
    assert layers["Conv_1"]["flops"] == GROUP_FLOPS == 7200
    assert layers["Conv_1"]["output_shape"] == [2, 6, 5, 5]
    assert layers["Conv_1"]["group"] == 2 and layers["Conv_1"]["strides"] == [2, 2]
    assert layers["Conv_2"]["flops"] == DEPTHWISE_FLOPS == 5400
    assert layers["Conv_2"]["output_shape"] == [2, 6, 5, 5]


def test_conv_flops_agree_with_the_model_generator(tmp_path):
    # gen_models.py counts 2 x MACs of Conv and Gemm on its own; the cnn's Gemms are
    # 1024x64 and 64x10.
    gen_models.main([str(tmp_path), "--only", "cnn"])
    layers = conv_gflops.conv_layers(str(tmp_path / "cnn.onnx"))
    net, _ = gen_models.cnn()
    assert len(layers) == 3
    assert sum(l["flops"] for l in layers.values()) == 2 * net.macs - 2 * (1024 * 64 + 64 * 10)


def test_a_kernel_of_two_convs_counts_both():
    # emberc fuses a 1x1 conv with the depthwise conv it feeds into one kernel and names the
    # second conv `fused_anchor`; the row then holds both convs' FLOPs and the second's output.
    layers = conv_gflops.conv_layers(tiny_model())
    assert layers["Conv_2"]["fed_by"] == "Conv_1"
    assert layers["Conv_1"]["fed_by"] == "stem"  # through the Relu
    assert layers["stem"]["fed_by"] is None  # a graph input
    kernels = {7: {"name": "fused_conv_conv", "anchor": "Conv_1", "fused_anchor": "Conv_2",
                   "output_shape": [2, 6, 5, 5], "winograd_tile": None}}
    (row,) = conv_gflops.conv_rows(kernels, layers, {7: 1.0}, {7: {"percent": 100.0}}, 100.0)
    assert row["conv"] == "Conv_1+Conv_2" and row["fused_with"] == "Conv_2"
    assert row["flops"] == GROUP_FLOPS + DEPTHWISE_FLOPS
    kernels[7]["fused_anchor"] = "stem"  # not fed by Conv_1: a mismatch, not a silent count
    with pytest.raises(conv_gflops.MatchError, match="stem"):
        conv_gflops.conv_rows(kernels, layers, {7: 1.0}, {7: {"percent": 100.0}}, 100.0)


def test_a_hard_swish_diamond_between_the_convs_is_walked():
    # x * HardSigmoid(x) after the 1x1 conv (MobileNetV3): the Mul has two computed inputs, both
    # from the one conv; an Add of two different convs feeds neither.
    rs = np.random.RandomState(1)

    def w(name, shape):
        return numpy_helper.from_array(rs.uniform(-0.5, 0.5, shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w_a"], ["a"], name="expand", kernel_shape=[1, 1]),
        helper.make_node("HardSigmoid", ["a"], ["s"]),
        helper.make_node("Mul", ["a", "s"], ["h"]),
        helper.make_node("Conv", ["h", "w_dw"], ["d"], name="dw", group=8, kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "w_b"], ["b"], name="other", kernel_shape=[1, 1]),
        helper.make_node("Add", ["d", "b"], ["e"]),
        helper.make_node("Conv", ["e", "w_dw2"], ["y"], name="dw2", group=8,
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "diamond",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])],
        initializer=[w("w_a", (8, 4, 1, 1)), w("w_dw", (8, 1, 3, 3)), w("w_b", (8, 4, 1, 1)),
                     w("w_dw2", (8, 1, 3, 3))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 7
    layers = conv_gflops.conv_layers(model)
    assert layers["dw"]["fed_by"] == "expand"
    assert layers["dw2"]["fed_by"] is None


def test_rejects_a_group_that_does_not_divide_the_channels():
    model = tiny_model()
    model.graph.node[2].attribute[0].i = 3  # group 3: 8 channels in, weight wants 12
    with pytest.raises(conv_gflops.MatchError, match="Conv_1.*8 channels"):
        conv_gflops.conv_layers(model)


# The report with stand-ins ------------------------------------------------------------------

def write_artifact(folder, anchors=True):
    """graph.json of three kernels for the tiny model (a conv+relu, two convs); no lib.so."""
    def op(name, inputs, anchor, winograd_tile=None):
        attrs = {"func_name": name, "num_inputs": str(len(inputs)), "num_outputs": "1",
                 "flatten_data": "0"}
        if anchors:
            attrs["anchor"] = anchor
        if winograd_tile:
            attrs["winograd_tile"] = winograd_tile
        return {"op": "tvm_op", "name": name, "attrs": attrs,
                "inputs": [[i, 0, 0] for i in inputs]}
    nodes = [{"op": "null", "name": n, "inputs": []}
             for n in ("x", "w_stem", "b_stem", "w_g", "w_dw")]
    nodes += [op("fused_conv_relu", [0, 1, 2], "stem", "2"), op("fused_conv", [5, 3], "Conv_1"),
              op("fused_conv_1", [6, 4], "Conv_2")]
    shapes = [[2, 3, 10, 12], [8, 3, 3, 3], [8], [6, 4, 1, 3], [6, 1, 3, 3], [2, 8, 10, 12],
              [2, 6, 5, 5], [2, 6, 5, 5]]
    graph = {"nodes": nodes, "arg_nodes": [0, 1, 2, 3, 4], "heads": [[7, 0, 0]],
             "attrs": {"dltype": ["list_str", ["float32"] * 8], "shape": ["list_shape", shapes],
                       "storage_id": ["list_int", list(range(8))]},
             "node_row_ptr": list(range(9))}
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "graph.json"), "w") as f:
        json.dump(graph, f)


FAKE_EMBER_RUN = textwrap.dedent("""\
    import json, sys
    args = sys.argv[2:]
    assert args[:4] == ["--profile", "--json", "--threads", "1"], sys.argv
    # Outputs go to a scratch folder, never into the caller's current directory.
    assert args[4] == "--output-dir" and args[5] != "." and len(args) == 6, sys.argv
    rows = [(5, "fused_conv_relu", 2.0), (6, "fused_conv", 1.0), (7, "fused_conv_1", 0.5)]
    total = sum(t for _, _, t in rows)
    print("{}")  # only the last JSON line counts
    print(json.dumps({"threads": 1, "profile": {"total_us": total, "number": 1, "repeat": 3,
        "nodes": [{"node_id": i, "name": n, "func_name": n, "time_us": t,
                   "percent": 100 * t / total} for i, n, t in rows]}}))
    """)

FAKE_BENCH_PEAK = textwrap.dedent("""\
    import json
    print(json.dumps({"context": {}, "benchmarks": [
        {"name": "BM_PeakFp32/avx2_fma/threads:1", "run_type": "iteration", "threads": 1,
         "GFLOP/s": 40.0, "label": "avx2_fma"},
        {"name": "BM_PeakFp32/avx512f/threads:1", "run_type": "iteration", "threads": 1,
         "GFLOP/s": 80.0, "label": "avx512f"},
        {"name": "BM_PeakFp32/avx512f/threads:1_mean", "run_type": "aggregate", "threads": 1,
         "GFLOP/s": 500.0, "label": "avx512f"}]}))
    """)


@pytest.fixture()
def fakes(tmp_path):
    model = tmp_path / "tiny.onnx"
    onnx.save(tiny_model(), str(model))
    art = tmp_path / "art"
    write_artifact(str(art))
    run = tmp_path / "fake_run.py"
    run.write_text(FAKE_EMBER_RUN)
    peak = tmp_path / "fake_peak.py"
    peak.write_text(FAKE_BENCH_PEAK)
    return {"model": str(model), "art": str(art),
            "ember_run": "%s %s" % (sys.executable, run),
            "bench_peak": "%s %s" % (sys.executable, peak)}


def run_script(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)


def test_report_from_a_profile(fakes):
    proc = run_script(fakes["art"], "--onnx", fakes["model"], "--ember-run", fakes["ember_run"],
                      "--bench-peak", fakes["bench_peak"], "--rounds", "2", "--top", "2",
                      "--json", "-")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    # The best single-thread iteration line, not the aggregate.
    assert res["peak_gflops"] == 80.0 and "avx512f" in res["peak_source"]
    assert [r["conv"] for r in res["top"]] == ["stem", "Conv_1"]
    assert [r["kernel"] for r in res["convs"]] == ["fused_conv_relu", "fused_conv",
                                                  "fused_conv_1"]
    stem = res["top"][0]
    assert stem["flops"] == STEM_FLOPS and stem["time_us"] == 2.0
    assert stem["winograd_tile"] == 2 and res["top"][1]["winograd_tile"] == 0
    assert stem["gflops"] == pytest.approx(STEM_FLOPS / 2000.0)  # FLOP per us / 1e3
    assert stem["percent_of_peak"] == pytest.approx(100 * STEM_FLOPS / 2000.0 / 80.0)
    assert res["conv_flops"] == STEM_FLOPS + GROUP_FLOPS + DEPTHWISE_FLOPS
    assert res["conv_time_us"] == pytest.approx(3.5)
    assert res["unmatched_convs"] == [] and "warning" not in proc.stderr


def test_table_and_given_peak(fakes):
    proc = run_script(fakes["art"], "--onnx", fakes["model"], "--ember-run", fakes["ember_run"],
                      "--peak-gflops", "10", "--rounds", "1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "peak 10.0 GFLOP/s (--peak-gflops)" in lines[0]
    rows = [l for l in lines if l.startswith("| 1 ") or l.startswith("| 3 ")]
    # stem: 0.10368 MFLOP in 2 us = 51.84 GFLOP/s = 518.4% of a 10 GFLOP/s peak; graph.json
    # says it runs as Winograd F(2x2), so the table says so and that the figure is effective.
    assert rows[0] == ("| 1 | stem | fused_conv_relu | Winograd F(2x2) | 2x3x10x12 | 8x3x3x3 | "
                       "1x1 | 0.1 | 2.0 | 51.8 | 518.4 |")
    assert rows[1].startswith("| 3 | Conv_2 | fused_conv_1 | direct | 2x6x5x5 | 6x1x3x3 g6 | 1x1 |")
    assert any(l.startswith("note: Winograd") for l in lines)


def test_graph_without_anchors_is_refused(fakes):
    write_artifact(fakes["art"], anchors=False)
    proc = run_script(fakes["art"], "--onnx", fakes["model"], "--ember-run", fakes["ember_run"],
                      "--peak-gflops", "10")
    assert proc.returncode == 1
    assert "no 'anchor' attrs" in proc.stderr and "graph.json" in proc.stderr


def test_artifact_without_model_is_refused(fakes):
    proc = run_script(fakes["art"], "--ember-run", fakes["ember_run"], "--peak-gflops", "10")
    assert proc.returncode == 1 and "--onnx" in proc.stderr


# The real compiler and runtime --------------------------------------------------------------

def built_tool(env, name):
    path = os.environ.get(env) or os.path.join(ROOT, "build", "bin", name)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


@pytest.mark.skipif(not (built_tool("EMBERC", "emberc") and built_tool("EMBER_RUN", "ember-run")),
                    reason="build/bin/emberc and ember-run are not built")
def test_real_compile_and_profile(tmp_path):
    model = tmp_path / "tiny.onnx"
    onnx.save(tiny_model(), str(model))
    proc = run_script(str(model), "--emberc", built_tool("EMBERC", "emberc"),
                      "--ember-run", built_tool("EMBER_RUN", "ember-run"),
                      "--peak-gflops", "100", "--rounds", "1", "--work", str(tmp_path / "work"),
                      "--json", "-")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    flops = {r["conv"]: r["flops"] for r in res["convs"]}
    assert flops == {"stem": STEM_FLOPS, "Conv_1": GROUP_FLOPS, "Conv_2": DEPTHWISE_FLOPS}
    assert all(r["time_us"] > 0 for r in res["convs"])
