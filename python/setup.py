"""Builds the ember package with Ember's native code inside it, so that an installed package needs
no build tree and no environment variables.

The package carries ember/lib/libember_runtime.so and, where the native build has the compiler,
ember/lib/libember_compiler.so, ember/bin/emberc (whose run path points at ember/lib) and a copy
of the runtime under its SONAME, which those two are linked against. The files are stripped.

The native build is $EMBER_BUILD_DIR (a configured and built CMake build directory of this
repository, e.g. ``build`` or a cross build such as ``build/cross-aarch64`` for a runtime-only
wheel), or else one this script configures and builds with CMake in python/build/native. The
files are taken through ``cmake --install``, which gives emberc its installed run path. The wheel's
platform tag is the machine of the library it carries.
"""
import glob
import os
import shutil
import subprocess
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RUNTIME_LIB = "libember_runtime.so"
COMPILER_LIB = "libember_compiler.so"
# ELF e_machine -> the platform tag pip expects on that machine.
ELF_MACHINE_TAGS = {0x3E: "linux_x86_64", 0xB7: "linux_aarch64", 0x28: "linux_armv7l"}


def _cache_value(build_dir, key):
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        for line in f:
            name, sep, value = line.rstrip("\n").partition("=")
            if sep and name.split(":")[0] == key:
                return value
    return None


def _native_build_dir():
    build_dir = os.environ.get("EMBER_BUILD_DIR")
    if build_dir:
        build_dir = os.path.abspath(build_dir)
        if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
            raise SystemExit("EMBER_BUILD_DIR=%s is not a CMake build directory of Ember (no "
                             "CMakeCache.txt)" % build_dir)
        return build_dir
    build_dir = os.path.join(HERE, "build", "native")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.check_call(["cmake", "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                           "-DEMBER_BUILD_TESTS=OFF", "-DEMBER_BUILD_BENCH=OFF"] + generator)
    subprocess.check_call(["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 2)])
    return build_dir


def _install_components(build_dir, prefix):
    """The runtime (and compiler) components of ``build_dir`` installed under ``prefix``; returns
    the library directory and whether the compiler is there."""
    with_compiler = _cache_value(build_dir, "EMBER_BUILD_COMPILER") == "ON"
    for component in ["runtime"] + (["compiler"] if with_compiler else []):
        # --strip uses the build's own strip, the cross one for a cross build.
        subprocess.check_call(["cmake", "--install", build_dir, "--prefix", prefix, "--strip",
                               "--component", component], stdout=subprocess.DEVNULL)
    return os.path.join(prefix, _cache_value(build_dir, "CMAKE_INSTALL_LIBDIR")), with_compiler


def _platform_tag(library):
    with open(library, "rb") as f:
        header = f.read(20)
    if header[:4] != b"\x7fELF":
        raise SystemExit("%s is not an ELF shared library" % library)
    machine = int.from_bytes(header[18:20], "little")
    if machine not in ELF_MACHINE_TAGS:
        raise SystemExit("%s: no wheel platform tag for ELF machine 0x%x" % (library, machine))
    return ELF_MACHINE_TAGS[machine]


class BuildPyWithNative(build_py):
    """build_py, then the native files copied into the built package."""

    def run(self):
        super().run()
        package = os.path.join(self.build_lib, "ember")
        for sub in ("lib", "bin"):  # never ship what an earlier build (another machine) left
            shutil.rmtree(os.path.join(package, sub), ignore_errors=True)
        os.makedirs(os.path.join(package, "lib"), exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="ember-stage-") as stage:
            libdir, with_compiler = _install_components(_native_build_dir(), stage)
            # libember_runtime.so.MAJOR (the SONAME link) and .so.MAJOR.MINOR.PATCH (the file).
            versioned = sorted(glob.glob(os.path.join(libdir, RUNTIME_LIB + ".[0-9]*")), key=len)
            if not versioned:
                raise SystemExit("cmake --install put no %s.N in %s" % (RUNTIME_LIB, libdir))
            soname = os.path.basename(versioned[0])
            # ctypes opens the plain name; emberc and the compiler library ask for the SONAME.
            for name in (RUNTIME_LIB, soname) if with_compiler else (RUNTIME_LIB,):
                shutil.copyfile(os.path.realpath(versioned[0]), os.path.join(package, "lib", name))
            if with_compiler:
                shutil.copyfile(os.path.join(libdir, COMPILER_LIB),
                                os.path.join(package, "lib", COMPILER_LIB))
                os.makedirs(os.path.join(package, "bin"), exist_ok=True)
                shutil.copy2(os.path.join(stage, "bin", "emberc"),
                             os.path.join(package, "bin", "emberc"))
        self.distribution.native_platform_tag = _platform_tag(
            os.path.join(package, "lib", RUNTIME_LIB))


class NativeDistribution(Distribution):
    """Native code inside: installed to platlib and packed as a platform wheel."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for one machine, for any Python 3: the code is loaded through ctypes, so it does
    not depend on Python's ABI."""

    def get_tag(self):
        return "py3", "none", self.distribution.native_platform_tag


setup(distclass=NativeDistribution,
      cmdclass={"build_py": BuildPyWithNative, "bdist_wheel": PlatformWheel})
