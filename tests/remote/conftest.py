"""Fixtures of the board tests: built programs, models, artifacts and sshd "boards".

Environment: EMBER_BUILD_DIR (host build, default build), EMBER_CROSS_BUILD_ROOT (parent of
cross-aarch64, default: the host build directory), EMBER_REMOTE_WORK (scratch, default
BUILD/remote-work; a subdirectory per pytest-xdist worker).
"""

import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from sshd_board import SshdBoard  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = "/usr/bin/python3"


def build_dir():
    return os.path.abspath(os.environ.get("EMBER_BUILD_DIR", os.path.join(ROOT, "build")))


@pytest.fixture(scope="session")
def tools():
    b = build_dir()
    t = {"emberc": os.path.join(b, "bin", "emberc"),
         "ember_run": os.path.join(b, "bin", "ember-run"),
         "ember_bench": os.path.join(b, "bin", "ember-bench"),
         "cross_root": os.path.abspath(os.environ.get("EMBER_CROSS_BUILD_ROOT", b))}
    for k in ("emberc", "ember_run", "ember_bench"):
        assert os.access(t[k], os.X_OK), f"{t[k]} is missing: build the host tree first"
    return t


@pytest.fixture(scope="session")
def work():
    w = os.path.abspath(os.environ.get("EMBER_REMOTE_WORK",
                                       os.path.join(build_dir(), "remote-work")))
    # Under pytest-xdist each worker has its own boards and scratch (gw0, gw1, ...).
    w = os.path.join(w, os.environ.get("PYTEST_XDIST_WORKER", ""))
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    return w


@pytest.fixture(scope="session")
def models(work):
    out = os.path.join(work, "models")
    subprocess.run([PY, os.path.join(ROOT, "tests", "models", "gen_models.py"), out,
                    "--only", "mlp", "--only", "cnn"], check=True, capture_output=True)
    return {"mlp": os.path.join(out, "mlp.onnx"), "cnn": os.path.join(out, "cnn.onnx")}


def compile_model(tools, model, out, target=None):
    cmd = [tools["emberc"], "compile", model, "-o", out]
    if target:
        cmd += ["--target", target]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="session")
def artifacts(tools, models, work):
    return {name: compile_model(tools, path, os.path.join(work, "art", name))
            for name, path in models.items()}


@pytest.fixture(scope="session")
def aarch64_cnn(tools, models, work):
    return compile_model(tools, models["cnn"], os.path.join(work, "art-aarch64", "cnn"),
                         "llvm -mtriple=aarch64-linux-gnu")


@pytest.fixture(scope="session")
def board(work):
    b = SshdBoard(work, "board-a")
    yield b
    b.stop()


@pytest.fixture(scope="session")
def board2(work):
    b = SshdBoard(work, "board-b")
    yield b
    b.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A skipped board test is a failed one: nothing here may pass by not running."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} was skipped; the board tests never skip: "
                           f"{report.longrepr}")
