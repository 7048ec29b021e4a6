"""pip install ./python into a fresh venv gives a package that carries its native code: compile,
load and benchmark from a directory outside the source tree, with no EMBER_* variables; pip wheel
gives a wheel tagged for this machine.

The native files come from the build the other tests use (EMBER_BUILD_DIR: the parent of
EMBER_LIBRARY_PATH, else build/), so nothing is compiled here.
"""
import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

from conftest import REPO

PIP_OFFLINE = ["--no-build-isolation", "--no-index", "--no-deps", "--quiet"]


def _build_dir():
    lib = os.environ.get("EMBER_LIBRARY_PATH")
    build = os.path.dirname(os.path.abspath(lib)) if lib else os.path.join(REPO, "build")
    if not os.path.isfile(os.path.join(build, "bin", "emberc")):
        pytest.skip("no host build with emberc at %s" % build)
    return build


def _clean_env(build_dir):
    """The environment of a user who never heard of Ember's variables."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("EMBER") and k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["EMBER_BUILD_DIR"] = build_dir  # read by setup.py only
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    build = _build_dir()
    root = tmp_path_factory.mktemp("venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(root / "v")],
                   check=True)
    python = str(root / "v" / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install"] + PIP_OFFLINE + [os.path.join(REPO, "python")],
                   check=True, env=_clean_env(build), cwd=str(root))
    return python, build


def test_installed_package_compiles_loads_and_benchmarks_anywhere(venv, tmp_path):
    python, _ = venv
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "models", "gen_models.py"),
                    str(tmp_path), "--only", "mlp"], check=True, stdout=subprocess.DEVNULL)
    script = textwrap.dedent("""
        import os, numpy as np, ember
        package = os.path.dirname(ember.__file__)
        assert "site-packages" in package, package
        from ember._ffi.base import RUNTIME_LIB_PATH
        assert RUNTIME_LIB_PATH.startswith(package), RUNTIME_LIB_PATH
        import subprocess
        from ember.compiler import find_emberc
        assert find_emberc().startswith(package), find_emberc()
        subprocess.run([find_emberc(), "--help"], check=True, stdout=subprocess.DEVNULL)
        art = ember.compile("mlp.onnx")
        # In process, through the package's compiler library, against one copy of the runtime.
        assert ember.get_global_func("ember.compile", allow_missing=True) is not None
        mapped = {line.split()[-1] for line in open("/proc/self/maps") if "libember_" in line}
        assert len([m for m in mapped if "libember_runtime" in m]) == 1, mapped
        art.export_library("mlp.so")
        gmod = ember.load_artifact("mlp.so")
        (name, shape), = gmod.get_input_info()["shape"].items()
        gmod.set_input(name, np.ones(shape, dtype="float32"))
        gmod.run()
        print("output", gmod.get_output(0).numpy().shape)
        print("median_ms", gmod.benchmark(repeat=3, number=2).median)
        """)
    env = {k: v for k, v in _clean_env("").items() if k != "EMBER_BUILD_DIR"}
    out = subprocess.run([python, "-c", script], cwd=str(tmp_path), env=env, check=True,
                         capture_output=True, text=True).stdout
    assert "output (1, 10)" in out and "median_ms" in out, out


def test_wheel_carries_the_libraries_and_the_platform_tag(venv, tmp_path):
    python, build = venv
    subprocess.run([python, "-m", "pip", "wheel"] + PIP_OFFLINE +
                   ["--wheel-dir", str(tmp_path), os.path.join(REPO, "python")],
                   check=True, env=_clean_env(build), cwd=str(tmp_path))
    (wheel,) = [f for f in os.listdir(str(tmp_path)) if f.endswith(".whl")]
    assert wheel.endswith("-py3-none-linux_x86_64.whl"), wheel
    names = zipfile.ZipFile(str(tmp_path / wheel)).namelist()
    for want in ("ember/lib/libember_runtime.so", "ember/lib/libember_compiler.so",
                 "ember/bin/emberc", "ember/runtime.py"):
        assert want in names, names
    print("%s: %d bytes" % (wheel, os.path.getsize(str(tmp_path / wheel))))
