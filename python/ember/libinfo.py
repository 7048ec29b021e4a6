"""Where Ember's shared libraries are and how they are found.

Search order for each library (the first hit wins):
  1. ``EMBER_LIBRARY_PATH``: a library file, or a list of directories separated by ``os.pathsep``.
     When it is set, only it is searched, so a stale system install can never shadow it.
  2. Next to the package (``ember/`` and ``ember/lib/``), for wheels and ``pip install`` copies.
  3. ``build/lib`` of the source tree the package lives in
     (``<repo>/python/ember`` -> ``<repo>/build/lib``).
  4. ``LD_LIBRARY_PATH``, /usr/local/lib, /usr/lib, then the dynamic loader's own search (ldconfig).
"""
import os

RUNTIME_LIB = "libember_runtime.so"
COMPILER_LIB = "libember_compiler.so"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_DIR = os.path.dirname(os.path.dirname(_PACKAGE_DIR))
# Only a package living at <repo>/python/ember looks into <repo>/build (not a pip-installed copy).
_IN_SOURCE_TREE = (os.path.basename(os.path.dirname(_PACKAGE_DIR)) == "python"
                   and os.path.isfile(os.path.join(_REPO_DIR, "include", "ember", "runtime",
                                                   "c_runtime_api.h")))


def _override_candidates(name, value):
    """Candidates named by EMBER_LIBRARY_PATH: a file stands for itself, a directory holds
    ``name``."""
    out = []
    for entry in value.split(os.pathsep):
        if not entry:
            continue
        if os.path.isdir(entry):
            out.append(os.path.join(entry, name))
        elif os.path.basename(entry) == name:
            out.append(entry)
        else:
            # A file meant for the other library: look for ours beside it.
            out.append(os.path.join(os.path.dirname(entry), name))
    return out


def candidate_paths(name):
    """Every path searched for ``name``, in order. With EMBER_LIBRARY_PATH set, only those."""
    override = os.environ.get("EMBER_LIBRARY_PATH")
    if override:
        return _override_candidates(name, override)
    dirs = [_PACKAGE_DIR, os.path.join(_PACKAGE_DIR, "lib")]
    if _IN_SOURCE_TREE:
        dirs.append(os.path.join(_REPO_DIR, "build", "lib"))
    dirs += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    dirs += ["/usr/local/lib", "/usr/lib", "/usr/lib64"]
    return [os.path.join(d, name) for d in dirs]


def find_lib_path(name=RUNTIME_LIB, optional=False):
    """The first existing path of library ``name``; None when ``optional`` and nothing exists.

    Raises OSError listing every place searched otherwise.
    """
    paths = candidate_paths(name)
    for path in paths:
        if os.path.isfile(path):
            return os.path.abspath(path)
    if optional:
        return None
    hint = ("EMBER_LIBRARY_PATH is set; it must name the library or the directory holding it"
            if os.environ.get("EMBER_LIBRARY_PATH") else
            "build it (cmake -S . -B build -G Ninja && cmake --build build) or set "
            "EMBER_LIBRARY_PATH to the directory holding it")
    raise OSError("cannot find %s; searched:\n  %s\n%s" % (name, "\n  ".join(paths), hint))
