"""Tests of the model generator and of bench/compare_ort.py (Ember half faked with ORT).

Run:  /usr/bin/python3 -m pytest tests/models/test_models.py
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPARE = os.path.join(ROOT, "bench", "compare_ort.py")
FAKE = "%s %s" % (sys.executable, os.path.join(HERE, "fake_ember_ort.py"))
sys.path.insert(0, HERE)
import gen_models  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("models"))
    assert gen_models.main([out]) == 0
    return out


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_models_are_valid_and_shaped(models):
    expect = {"mlp": ([1, 784], [1, 10]), "mlp_batch64": ([64, 512], [64, 10]),
              "cnn": ([1, 3, 32, 32], [1, 10]),
              "resnet18": ([1, 3, 224, 224], [1, 1000]),
              "mobilenetv2": ([1, 3, 224, 224], [1, 1000]),
              "mobilenetv3": ([1, 3, 224, 224], [1, 1000])}
    for name, (in_shape, out_shape) in expect.items():
        model = onnx.load(os.path.join(models, name + ".onnx"))
        onnx.checker.check_model(model, full_check=True)
        assert model.opset_import[0].version == 13
        g = model.graph
        assert [i.name for i in g.input] == ["input"] and [o.name for o in g.output] == ["output"]
        dims = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
        assert dims(g.input[0]) == in_shape and dims(g.output[0]) == out_shape
        assert all(t.data_type == onnx.TensorProto.FLOAT for t in g.initializer)


def test_topologies(models):
    ops = {}
    for name in gen_models.MODELS:
        g = onnx.load(os.path.join(models, name + ".onnx")).graph
        ops[name] = [n.op_type for n in g.node]
    assert ops["mlp"] == ["Gemm", "Relu", "Gemm", "Relu", "Gemm", "Softmax"]
    assert ops["mlp_batch64"] == ["Gemm", "Relu", "Gemm", "Relu", "Gemm"]
    assert ops["cnn"].count("Conv") == 3 and ops["cnn"].count("MaxPool") == 3
    assert ops["resnet18"].count("Conv") == 20 and ops["resnet18"].count("Add") == 8
    assert ops["resnet18"].count("BatchNormalization") == 20
    assert ops["mobilenetv2"].count("Conv") == 52 and ops["mobilenetv2"].count("Add") == 10
    assert ops["mobilenetv2"].count("Clip") == 35
    g = onnx.load(os.path.join(models, "mobilenetv2.onnx")).graph
    depthwise = [n for n in g.node if n.op_type == "Conv" and
                 any(a.name == "group" and a.i > 1 for a in n.attribute)]
    assert len(depthwise) == 17
    assert ops["mobilenetv3"].count("Conv") == 62 and ops["mobilenetv3"].count("Gemm") == 2
    assert ops["mobilenetv3"].count("HardSigmoid") == 29  # 21 hard-swishes, 8 SE gates


def test_parameter_counts_match_torchvision(models):
    def params(name):
        g = onnx.load(os.path.join(models, name + ".onnx")).graph
        return sum(numpy_helper.to_array(t).size for t in g.initializer
                   if not t.name.startswith(("mean", "var", "relu6")))
    assert params("resnet18") == 11689512
    assert params("mobilenetv2") == 3504872
    assert params("mobilenetv3") == 5483032  # torchvision's mobilenet_v3_large


def test_generation_is_deterministic(models, tmp_path):
    assert gen_models.main([str(tmp_path), "--only", "cnn", "--only", "mobilenetv2"]) == 0
    for name in ("cnn", "mobilenetv2"):
        assert digest(os.path.join(models, name + ".onnx")) == \
            digest(str(tmp_path / (name + ".onnx")))


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node.js is not installed")


@needs_node
def test_mlp_in_numpy_matches_ort(models, tmp_path):
    """A hand-written NumPy forward pass of the MLP against ORT on ort_run.js's saved input."""
    ort_run = os.path.join(ROOT, "bench", "peer", "ort_run.js")
    subprocess.run(["node", ort_run, os.path.join(models, "mlp.onnx"), "--runs", "1", "--warmup",
                    "0", "--save-inputs", str(tmp_path / "in"), "--dump-outputs",
                    str(tmp_path / "out")], check=True, capture_output=True)
    g = onnx.load(os.path.join(models, "mlp.onnx")).graph
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in g.initializer}
    h = np.load(str(tmp_path / "in" / "input.npy"), allow_pickle=False).astype(np.float64)
    for node in g.node:
        if node.op_type == "Gemm":
            h = h @ w[node.input[1]].T + w[node.input[2]]
        elif node.op_type == "Relu":
            h = np.maximum(h, 0)
        else:
            assert node.op_type == "Softmax"
            e = np.exp(h - h.max(axis=1, keepdims=True))
            h = e / e.sum(axis=1, keepdims=True)
    got = np.load(str(tmp_path / "out" / "output_0.npy"), allow_pickle=False)
    assert got.dtype == np.float32 and got.shape == (1, 10)
    np.testing.assert_allclose(got, h, rtol=1e-4, atol=1e-6)


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def compare(models, tmp_path, *args, env_extra=None):
    env = dict(os.environ, EMBERC=FAKE, EMBER_RUN=FAKE)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, COMPARE, "--models", models, "--work",
                           str(tmp_path / "work"), "--model", "mlp", "--model", "cnn"] +
                          list(args), capture_output=True, text=True, env=env, timeout=600)


@needs_node
def test_compare_check_only_passes_on_matching_outputs(models, tmp_path):
    proc = compare(models, tmp_path, "--check-only")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mlp" in proc.stdout and "match ORT" in proc.stdout
    assert "all 2 model outputs match" in proc.stdout
    x = np.load(str(tmp_path / "work" / "mlp" / "in" / "input.npy"), allow_pickle=False)
    assert x.dtype == np.float32 and x.shape == (1, 784)
    assert -1.0 <= x.min() and x.max() < 1.0 and x.std() > 0.5


@needs_node
def test_compare_check_only_fails_on_wrong_outputs(models, tmp_path):
    proc = compare(models, tmp_path, "--check-only", env_extra={"FAKE_EMBER_PERTURB": "1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "DIFFER" in proc.stdout and "elements differ" in proc.stdout


@needs_node
def test_compare_timing_table(models, tmp_path):
    plot = [] if not _has_matplotlib() else ["--plot", str(tmp_path / "latency.png")]
    proc = compare(models, tmp_path, "--threads", "1", "--rounds", "1", "--runs", "2",
                   "--warmup", "0", "--json", str(tmp_path / "r.json"), *plot)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if plot:
        with open(plot[1], "rb") as f:
            assert f.read(4) == b"\x89PNG"
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| mlp | 1 |")]
    assert len(rows) == 1 and rows[0].count("|") == 7
    ratio = float(rows[0].split("|")[5])
    assert ratio > 0


@needs_node
def test_compare_tail_table_with_a_busy_core(models, tmp_path):
    cpu = max(os.sched_getaffinity(0))
    proc = compare(models, tmp_path, "--threads", "1", "--rounds", "2", "--runs", "5",
                   "--warmup", "0", "--busy-core", str(cpu), "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "with a busy loop on CPU %d" % cpu in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| cnn | 1 |")]
    assert len(rows) == 1 and rows[0].count("|") == 12, proc.stdout
    cells = [c.strip() for c in rows[0].split("|")[1:-1]]
    ember_median, ember_p99, ember_max = (float(c) for c in cells[2:5])
    assert 0 < ember_median <= ember_p99 <= ember_max
    with open(str(tmp_path / "r.json")) as f:
        row = json.load(f)["results"][1]["timing"]["1"]
    assert row["busy_core"] == cpu and len(row["ember_rounds"]) == 2
    assert row["ort_p99_ms"] <= row["ort_max_ms"]
    assert not busy_loops(cpu), "the busy loop outlived the timed rounds"


def run_suite(models, tmp_path, rows, *args):
    """check_suite.py on a manifest of `rows` (name, expect, note) with the fake emberc."""
    manifest = tmp_path / "manifest.tsv"
    manifest.write_text("# name, emberc_args, tolerance, expect, note\n" +
                        "".join("%s\t-\t-\t%s\t%s\n" % row for row in rows))
    env = dict(os.environ, EMBERC=FAKE, EMBER_RUN=FAKE)
    return subprocess.run([sys.executable, os.path.join(HERE, "check_suite.py"), str(manifest),
                           models, "--work", str(tmp_path / "work")] + list(args),
                          capture_output=True, text=True, env=env, timeout=600)


@needs_node
def test_suite_bench_times_the_models_that_matched(models, tmp_path):
    proc = run_suite(models, tmp_path, [("mlp", "ok", "matches"), ("cnn", "ok", "matches"),
                                        ("absent", "ok", "no such file: not timed")],
                     "--bench", "1", "--rounds", "1", "--runs", "2",
                     "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the absent model fails the check
    rows = [line for line in proc.stdout.splitlines()
            if line.startswith("| ") and not line.startswith("| model")]
    assert [r.split("|")[1].strip() for r in rows] == ["mlp", "cnn"], proc.stdout
    assert all(float(r.split("|")[5]) > 0 for r in rows)
    with open(str(tmp_path / "r.json")) as f:
        results = json.load(f)["results"]
    assert "timing" in results[0] and "timing" not in results[2]
    assert all("ember_argv" not in r for r in results)


@needs_node
def test_suite_checks_models_side_by_side_in_the_manifest_order(models, tmp_path):
    proc = run_suite(models, tmp_path, [("cnn", "ok", "matches"), ("absent", "ok", "no file"),
                                        ("mlp", "ok", "matches")], "-j", "3")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the absent model fails the check
    lines = [line.split() for line in proc.stdout.splitlines()[:3]]
    assert [(w[0], w[1]) for w in lines] == [("cnn", "ok"), ("absent", "FAIL:"), ("mlp", "ok")]
    assert "2 of 3 models as expected" in proc.stdout


def test_suite_bench_refuses_bad_thread_counts(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(HERE, "check_suite.py"), "m.tsv", "dir",
                           "--bench", "1,x"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--bench wants comma separated" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, os.path.join(HERE, "check_suite.py"), "m.tsv", "dir",
                           "-j", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--jobs wants a count >= 1" in proc.stderr, proc.stderr


def busy_loops(cpu):
    """PIDs of processes running compare_ort.py's busy loop on this CPU."""
    text = ("os.sched_setaffinity(0, {%d})" % cpu).encode()
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if text in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def test_compare_refuses_a_busy_core_it_may_not_use(tmp_path):
    proc = subprocess.run([sys.executable, COMPARE, "--busy-core", "4095", "--check-only"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--busy-core 4095" in proc.stderr, proc.stderr


@needs_node
def test_seeded_inputs_are_reproducible(models, tmp_path):
    ort_run = os.path.join(ROOT, "bench", "peer", "ort_run.js")
    for d in ("a", "b"):
        subprocess.run(["node", ort_run, os.path.join(models, "cnn.onnx"), "--runs", "1",
                        "--warmup", "0", "--seed", "7", "--save-inputs", str(tmp_path / d)],
                       check=True, capture_output=True)
    a = np.load(str(tmp_path / "a" / "input.npy"), allow_pickle=False)
    b = np.load(str(tmp_path / "b" / "input.npy"), allow_pickle=False)
    assert a.shape == (1, 3, 32, 32) and np.array_equal(a, b)


@needs_node
def test_ort_profile_lists_each_node_once_in_execution_order(models, tmp_path):
    """--profile writes ORT's per-node kernel times, the peer's side of `ember-run --trace`."""
    ort_run = os.path.join(ROOT, "bench", "peer", "ort_run.js")
    profile = tmp_path / "profile.json"
    proc = subprocess.run(["node", ort_run, os.path.join(models, "cnn.onnx"), "--runs", "3",
                           "--warmup", "1", "--profile", str(profile)],
                          check=True, capture_output=True, text=True)
    assert json.loads(proc.stdout)["profile"] == str(profile)
    rows = json.loads(profile.read_text())
    names = [r["node"] for r in rows]
    assert len(names) == len(set(names)) and names, rows
    # The model's order: conv, pool three times, then the classifier's Gemms.
    ops = [r["op"] for r in rows if r["op"] in ("Conv", "MaxPool", "Gemm", "FusedGemm")]
    assert ops[:6] == ["Conv", "MaxPool"] * 3 and ops[-1].endswith("Gemm"), ops
    assert all(r["runs"] == 4 and r["median_us"] >= 0 for r in rows), rows
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".ort-profile-")]
