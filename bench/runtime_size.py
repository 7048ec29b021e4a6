#!/usr/bin/python3
"""Stripped size of libember_runtime.so per target and build flavour, and where the bytes go.

    bench/runtime_size.py [--build-root DIR] [--targets x86-64,aarch64,armv7]
                          [--flavours default,minimal] [--breakdown TARGET:FLAVOUR] [--top N]

For each target and flavour it configures a runtime-only build (no compiler, tests or benchmarks;
the cross targets through toolchains/*.cmake, the minimal flavour with EMBER_RUNTIME_MINIMAL=ON)
in BUILD_ROOT/<target>-<flavour> (default build/runtime-size), builds ember_runtime, strips a
copy with the target's strip and prints a Markdown table of the sizes, stamped with the date and
commit. For one of them (--breakdown, default aarch64:default) it then builds it once more with
each source compiled on its own (EMBER_RUNTIME_UNITY=OFF; the shipped build is one translation
unit, whose map names a single object), reads the linker map the build writes
(runtime/CMakeLists.txt: libember_runtime.so.map, lld's format) and prints the contributors:
each object file's code, unwind tables and data, and what the linker itself makes (dynamic
symbols, PLT, relocations, merged strings). --top N also lists the N largest symbols.
README's size tables come from this script.
"""
import argparse
import collections
import datetime
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {
    "x86-64": {"toolchain": None, "tools": ""},
    "aarch64": {"toolchain": "aarch64-linux-gnu.cmake", "tools": "aarch64-linux-gnu-"},
    "armv7": {"toolchain": "arm-linux-gnueabihf.cmake", "tools": "arm-linux-gnueabihf-"},
}
FLAVOURS = {"default": [], "minimal": ["-DEMBER_RUNTIME_MINIMAL=ON"]}
LIB = "lib/libember_runtime.so"
MAP = "runtime/libember_runtime.so.map"

# Output sections the linker fills itself, grouped as the table prints them.
LINKER_GROUPS = {
    ".dynsym": "dynamic symbols (.dynsym, .dynstr, .gnu.hash, .gnu.version*)",
    ".dynstr": "dynamic symbols (.dynsym, .dynstr, .gnu.hash, .gnu.version*)",
    ".gnu.hash": "dynamic symbols (.dynsym, .dynstr, .gnu.hash, .gnu.version*)",
    ".gnu.version": "dynamic symbols (.dynsym, .dynstr, .gnu.hash, .gnu.version*)",
    ".gnu.version_r": "dynamic symbols (.dynsym, .dynstr, .gnu.hash, .gnu.version*)",
    ".plt": "calls into libstdc++/libc (.plt, .got*, .rela.plt)",
    ".got": "calls into libstdc++/libc (.plt, .got*, .rela.plt)",
    ".got.plt": "calls into libstdc++/libc (.plt, .got*, .rela.plt)",
    ".rela.plt": "calls into libstdc++/libc (.plt, .got*, .rela.plt)",
    ".rela.dyn": "relocations (.rela.dyn / .rel.dyn)",
    ".rel.dyn": "relocations (.rela.dyn / .rel.dyn)",
    ".rel.plt": "calls into libstdc++/libc (.plt, .got*, .rela.plt)",
    ".rodata": "merged strings and constants (.rodata)",
    ".eh_frame_hdr": "unwind index (.eh_frame_hdr, .ARM.exidx)",
    ".ARM.exidx": "unwind index (.eh_frame_hdr, .ARM.exidx)",
}
# Sections strip removes: not counted.
STRIPPED = {".symtab", ".strtab", ".shstrtab", ".comment"}


def run(cmd, log=None, **kw):
    if log is None:
        return subprocess.run(cmd, check=True, **kw)
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, **kw)
    if r.returncode != 0:
        with open(log) as f:
            sys.stderr.write("".join(f.readlines()[-30:]))
        sys.exit("runtime_size.py: %s failed (log: %s)" % (" ".join(cmd[:3]), log))


def build(target, flavour, build_root, per_file=False):
    """Configures and builds ember_runtime; per_file compiles each source on its own
    (EMBER_RUNTIME_UNITY=OFF), which the breakdown needs to name the file a byte came from."""
    d = os.path.join(build_root, "%s-%s%s" % (target, flavour, "-per-file" if per_file else ""))
    os.makedirs(d, exist_ok=True)
    args = ["cmake", "-S", ROOT, "-B", d, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
            "-DEMBER_BUILD_COMPILER=OFF", "-DEMBER_BUILD_TESTS=OFF", "-DEMBER_BUILD_BENCH=OFF"]
    tc = TARGETS[target]["toolchain"]
    if tc:
        args.append("-DCMAKE_TOOLCHAIN_FILE=" + os.path.join(ROOT, "toolchains", tc))
    args += FLAVOURS[flavour]
    args.append("-DEMBER_RUNTIME_UNITY=%s" % ("OFF" if per_file else "ON"))
    run(args, log=d + ".configure.log")
    run(["nice", "cmake", "--build", d, "-j", os.environ.get("EMBER_SIZE_JOBS", "2"), "--target",
         "ember_runtime"], log=d + ".build.log")
    return d


def stripped_size(target, d):
    out = os.path.join(d, "libember_runtime.stripped.so")
    run([TARGETS[target]["tools"] + "strip", "--strip-unneeded", "-o", out, os.path.join(d, LIB)])
    return os.path.getsize(out), out


def section_sizes(target, path):
    """{section: size} of the allocated sections of a (stripped) ELF file."""
    text = subprocess.run([TARGETS[target]["tools"] + "readelf", "-SW", path], check=True,
                          capture_output=True, text=True).stdout
    sizes = {}
    for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", text):
        sizes[m.group(1)] = int(m.group(2), 16)
    return sizes


def map_contributors(map_path):
    """{(object, output section): bytes} from an lld map file."""
    by = collections.Counter()
    with open(map_path) as f:
        header = f.readline()
        if "Out" not in header or "In" not in header:
            sys.exit("runtime_size.py: %s is not an lld map (is ld.lld installed?)" % map_path)
        col_out, col_in = header.index("Out"), header.index("In ")
        out = None
        for line in f:
            if len(line) <= col_out:
                continue
            size = int(line[:col_out].split()[2], 16)
            if line[col_out] != " ":
                out = line[col_out:].split()[0]
            elif len(line) > col_in and line[col_in] != " ":
                entry = line[col_in:].strip()
                obj = entry.split(":(")[0] if ":(" in entry else entry
                obj = re.sub(r".*CMakeFiles/ember_runtime_objects\.dir/", "", obj)
                obj = re.sub(r"\.o$", "", obj)
                by[(obj, out)] += size
    return by


def breakdown(target, d, stripped_path, top):
    sizes = section_sizes(target, stripped_path)
    by = map_contributors(os.path.join(d, MAP))
    code = collections.Counter()
    unwind = collections.Counter()
    data = collections.Counter()
    linker = collections.Counter()
    for (obj, out), n in by.items():
        if out in STRIPPED or out is None or out == ".tbss" or out == ".bss":
            continue
        if obj.startswith("<internal>") or obj.startswith("<"):
            group = LINKER_GROUPS.get(out, "other linker-made sections (%s)" % out)
            if out == ".eh_frame":
                group = "unwind tables: CIEs and padding (.eh_frame)"
            linker[group] += n
        elif out.startswith(".text") or out in (".init", ".fini"):
            code[obj] += n
        elif out in (".eh_frame", ".gcc_except_table", ".ARM.extab", ".ARM.exidx"):
            unwind[obj] += n
        else:
            data[obj] += n
    objects = sorted(set(code) | set(unwind) | set(data),
                     key=lambda o: -(code[o] + unwind[o] + data[o]))
    total = sum(sizes.values())
    lines = ["| where (%s) | code | unwind + EH tables | data | total |" % os.path.basename(d),
             "|---|---:|---:|---:|---:|"]
    shown = 0
    small = collections.Counter()
    for o in objects:
        t = code[o] + unwind[o] + data[o]
        if shown < 14:
            lines.append("| %s | %s | %s | %s | %s |" % (
                o, fmt(code[o]), fmt(unwind[o]), fmt(data[o]), fmt(t)))
            shown += 1
        else:
            small["code"] += code[o]
            small["unwind"] += unwind[o]
            small["data"] += data[o]
    if small:
        rest = len(objects) - shown
        lines.append("| %d smaller objects and crt files | %s | %s | %s | %s |" % (
            rest, fmt(small["code"]), fmt(small["unwind"]), fmt(small["data"]),
            fmt(sum(small.values()))))
    for g, n in linker.most_common():
        lines.append("| linker: %s | | | | %s |" % (g, fmt(n)))
    lines.append("| **allocated sections** (file: headers and alignment on top) | | | | **%s** |"
                 % fmt(total))
    print("\n".join(lines))
    if top:
        nm = subprocess.run([TARGETS[target]["tools"] + "nm", "-S", "--size-sort", "-C",
                             os.path.join(d, LIB)], check=True, capture_output=True,
                            text=True).stdout.splitlines()
        print("\nlargest %d symbols:" % top)
        seen = set()  # aliases (GCC's .localalias clones) share an address
        for line in nm[::-1]:
            parts = line.split(None, 3)
            if len(parts) != 4 or parts[0] in seen:
                continue
            seen.add(parts[0])
            print("%7d  %s" % (int(parts[1], 16), parts[3][:110]))
            if len(seen) == top:
                break


def fmt(n):
    return "{:,}".format(n) if n else ""


def commit():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               check=True, capture_output=True, text=True).stdout.strip()
        return rev + ("+uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-root", default=os.path.join(ROOT, "build", "runtime-size"))
    ap.add_argument("--targets", default="x86-64,aarch64,armv7")
    ap.add_argument("--flavours", default="default,minimal")
    ap.add_argument("--breakdown", default="aarch64:default",
                    help="TARGET:FLAVOUR whose contributors to list, or 'none'")
    ap.add_argument("--top", type=int, default=0, help="also list the N largest symbols")
    a = ap.parse_args()
    targets = a.targets.split(",")
    flavours = a.flavours.split(",")
    for t in targets:
        if t not in TARGETS:
            sys.exit("runtime_size.py: unknown target %s (%s)" % (t, ", ".join(TARGETS)))
        if not shutil.which(TARGETS[t]["tools"] + "strip"):
            sys.exit("runtime_size.py: %sstrip not found (scripts/bootstrap.sh installs the "
                     "cross tools)" % TARGETS[t]["tools"])
    for f in flavours:
        if f not in FLAVOURS:
            sys.exit("runtime_size.py: unknown flavour %s (%s)" % (f, ", ".join(FLAVOURS)))
    results = {}
    for t in targets:
        for f in flavours:
            d = build(t, f, a.build_root)
            results[(t, f)] = (d,) + stripped_size(t, d)
            print("built %s %s: %d bytes stripped" % (t, f, results[(t, f)][1]), file=sys.stderr)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print("Stripped libember_runtime.so, bytes (%s, commit %s; bench/runtime_size.py):\n"
          % (stamp, commit()))
    print("| target | " + " | ".join(flavours) + " |")
    print("|---|" + "---:|" * len(flavours))
    for t in targets:
        print("| %s | %s |" % (t, " | ".join(fmt(results[(t, f)][1]) for f in flavours)))
    if a.breakdown != "none":
        t, _, f = a.breakdown.partition(":")
        if t not in TARGETS or f not in FLAVOURS:
            sys.exit("runtime_size.py: --breakdown wants TARGET:FLAVOUR, got %s" % a.breakdown)
        d = build(t, f, a.build_root, per_file=True)
        size, stripped = stripped_size(t, d)
        print("\nWhere the bytes go, %s %s (linker map, allocated sections), from a build that "
              "compiles each source on its own (EMBER_RUNTIME_UNITY=OFF, %s bytes stripped) so "
              "that the map names the file a byte came from:\n" % (t, f, fmt(size)))
        breakdown(t, d, stripped, a.top)


if __name__ == "__main__":
    main()
