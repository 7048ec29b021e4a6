#!/usr/bin/python3
"""ember-bench: benchmark models on a fleet of boards over ssh (or adb), in parallel.

Usage: ember-bench --hosts FILE MODEL... [--out PREFIX] [--warmup W] [--repeat R]
                   [--ssh-config FILE] [--ssh-option OPT]... [--runtime-dir DIR]...

MODEL is an ONNX file (compiled here once per target of the hosts file, with emberc) or an
artifact directory / single .so (run on the boards whose architecture it was built for).

The hosts file has one board per line, '#' starts a comment:
    NAME  DESTINATION          TARGET               THREADS  [EXEC-WRAPPER...]
    pi4-a pi@192.168.1.20      aarch64-linux-gnu    1,4
    pixel adb:R58M123          aarch64-linux-android 1,2,4
    emu   me@127.0.0.1:2222    aarch64-linux-gnu    1        qemu-aarch64 -L /usr/aarch64-linux-gnu
DESTINATION is what `ember-run --remote` takes; THREADS the thread counts to run (comma list);
the optional rest of the line is the board's --remote-exec-wrapper.

Every board runs its jobs (model x threads) one after another, all boards at once, with one
progress line per job, in /tmp/ember-bench-USER-NAME on the board (removed after its last job).
A board that drops (ember-run exit 3: ssh failed; or a job longer than --job-timeout, as when a
board leaves the network without a reset) is retried once; if it fails again its remaining jobs
are reported as not run and the other boards finish. Writes
PREFIX.txt, PREFIX.json, PREFIX.csv (model, board, threads, median_ms, p90_ms, p99_ms, status)
and PREFIX.png (median latency per model per board and thread count, p90 as a whisker).
Exit status: 0 when every job ran, 1 when some did not (the table says which), 2 on bad usage.
"""

import argparse
import csv
import getpass
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

TRANSPORT_FAILED = 3  # ember-run --remote: the board could not be reached or dropped
ARCH_OF_TRIPLE = (("aarch64", "aarch64"), ("arm", "armhf"), ("x86_64", "x86_64"))
ELF_MACHINES = {62: "x86_64", 183: "aarch64", 40: "armhf"}
COLUMNS = ("model", "board", "threads", "median_ms", "p90_ms", "p99_ms", "status")


class UsageError(Exception):
    pass


def parse_hosts(path):
    boards = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) < 4:
                raise UsageError(f"{path}:{number}: expected NAME DESTINATION TARGET THREADS "
                                 f"[EXEC-WRAPPER...], got {line.strip()!r}")
            name, dest, triple, threads = words[:4]
            try:
                counts = [int(t) for t in threads.split(",")]
            except ValueError:
                counts = []
            if not counts or min(counts) < 1:
                raise UsageError(f"{path}:{number}: THREADS must be a comma list of positive "
                                 f"integers, got {threads!r}")
            if any(b["name"] == name for b in boards):
                raise UsageError(f"{path}:{number}: board name {name!r} is used twice")
            boards.append({"name": name, "dest": dest, "triple": triple, "threads": counts,
                           "wrapper": " ".join(words[4:]),
                           "arch": triple_arch(triple, path, number)})
    if not boards:
        raise UsageError(f"{path}: no boards listed")
    return boards


def triple_arch(triple, path, number):
    for prefix, arch in ARCH_OF_TRIPLE:
        if triple.startswith(prefix):
            return arch
    raise UsageError(f"{path}:{number}: target {triple!r} is not one Ember builds for "
                     "(aarch64-*, armv7a-*-gnueabihf, x86_64-*)")


def emberc_target(triple):
    arm32 = triple.startswith("arm")
    return f"llvm -mtriple={triple}" + (" -mattr=+neon" if arm32 else "")


def elf_arch(path):
    lib = os.path.join(path, "lib.so") if os.path.isdir(path) else path
    with open(lib, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        raise UsageError(f"{lib} is not an ELF file: give an artifact or an .onnx model")
    return ELF_MACHINES.get(int.from_bytes(head[18:20], "little"), "unknown")


def model_name(path):
    base = os.path.basename(os.path.normpath(path))
    return base[:-5] if base.endswith(".onnx") else base


def prepare_artifacts(models, boards, work, emberc):
    """{(model, arch): artifact}: ONNX models compiled once per board target, artifacts as given."""
    artifacts = {}
    for m in models:
        if m.endswith(".onnx"):
            for triple in sorted({b["triple"] for b in boards}):
                arch = next(b["arch"] for b in boards if b["triple"] == triple)
                out = os.path.join(work, "artifacts", triple, model_name(m))
                cmd = [emberc, "compile", m, "-o", out, "--target", emberc_target(triple)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    raise UsageError(f"compiling {m} for {triple} failed: {r.stderr.strip()} "
                                     f"(command: {' '.join(cmd)})")
                artifacts[(model_name(m), arch)] = out
        else:
            artifacts[(model_name(m), elf_arch(m))] = m
    return artifacts


def run_with_timeout(cmd, timeout_s):
    """Runs cmd; past timeout_s its whole process group (ember-run and its ssh) is killed and
    the job counts as a drop: a board that vanishes from the network (no reset, no
    ServerAliveInterval in the ssh config) would otherwise hold its thread for TCP's timeout."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout_s)
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return subprocess.CompletedProcess(
            cmd, TRANSPORT_FAILED, out, err + f"no answer within --job-timeout {timeout_s} s\n")


def parse_result(r):
    """ember-run --bench --json's object, or None when stdout is not one."""
    try:
        result = json.loads(r.stdout)
        return result if all(k in result for k in ("median_ms", "p90_ms", "p99_ms")) else None
    except ValueError:
        return None


class Fleet:
    def __init__(self, args, boards, artifacts):
        self.args, self.boards, self.artifacts = args, boards, artifacts
        self.rows, self.lock = [], threading.Lock()

    def say(self, board, text):
        with self.lock:
            print(f"[{board['name']}] {text}", file=sys.stderr, flush=True)

    def jobs(self, board):
        models = sorted({m for (m, arch) in self.artifacts if arch == board["arch"]})
        return [(m, t) for m in models for t in board["threads"]]

    def ember_run(self, board, artifact, threads, keep):
        a = self.args
        cmd = [a.ember_run, artifact, "--remote", board["dest"], "--remote-dir",
               remote_dir(board), "--bench", "--json",
               "--threads", str(threads), "--warmup", str(a.warmup), "--repeat", str(a.repeat),
               "--output-dir", os.path.join(a.work, "outputs", board["name"])]
        if keep:
            cmd.append("--keep")
        if board["wrapper"]:
            cmd += ["--remote-exec-wrapper", board["wrapper"]]
        if a.ssh_config:
            cmd += ["--ssh-config", a.ssh_config]
        for o in a.ssh_option:
            cmd += ["--ssh-option", o]
        for d in a.runtime_dir:
            cmd += ["--runtime-dir", d]
        return run_with_timeout(cmd, a.job_timeout), cmd

    def run_board(self, board):
        jobs = self.jobs(board)
        if not jobs:
            self.say(board, f"no model built for {board['arch']}; nothing to run")
        dropped = None
        for i, (model, threads) in enumerate(jobs, 1):
            row = {"model": model, "board": board["name"], "threads": threads,
                   "median_ms": None, "p90_ms": None, "p99_ms": None}
            if dropped:
                row["status"] = "not run: board dropped"
                self.add(row)
                continue
            keep = i < len(jobs)  # the last job cleans the board's directory
            for attempt in (1, 2):
                artifact = self.artifacts[(model, board["arch"])]
                r, cmd = self.ember_run(board, artifact, threads, keep)
                if r.returncode != TRANSPORT_FAILED:
                    break
                err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "(no message)"
                self.say(board, f"{i}/{len(jobs)} {model} threads={threads}: board dropped "
                         f"({err})" + ("; retrying once" if attempt == 1 else "; giving up"))
            result = parse_result(r) if r.returncode == 0 else None
            if result:
                row.update({k: result[k] for k in ("median_ms", "p90_ms", "p99_ms")}, status="ok")
                self.say(board, f"{i}/{len(jobs)} {model} threads={threads}: median "
                         f"{row['median_ms']:.3f} ms, p90 {row['p90_ms']:.3f}, "
                         f"p99 {row['p99_ms']:.3f}")
            elif r.returncode == TRANSPORT_FAILED:
                dropped = True
                row["status"] = "failed: board dropped"
            else:
                why = f"exit {r.returncode}" if r.returncode else "no bench JSON printed"
                row["status"] = f"failed: {why}"
                self.say(board, f"{i}/{len(jobs)} {model} threads={threads}: ember-run failed "
                         f"({why}): {r.stderr.strip()} (command: {' '.join(cmd)})")
            self.add(row)
        self.say(board, "dropped; its remaining jobs were not run" if dropped else "done")

    def add(self, row):
        with self.lock:
            self.rows.append(row)

    def run(self):
        threads = [threading.Thread(target=self.run_board, args=(b,)) for b in self.boards]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        order = {b["name"]: i for i, b in enumerate(self.boards)}
        self.rows.sort(key=lambda r: (r["model"], order[r["board"]], r["threads"]))
        return self.rows


def remote_dir(board):
    """A directory per board and local user: boards that are one machine (two users' fleets,
    or two emulated boards on one host) must not share one."""
    user = getpass.getuser()
    if board["dest"].startswith("adb:"):
        return f"/data/local/tmp/ember-bench-{user}-{board['name']}"
    return f"/tmp/ember-bench-{user}-{board['name']}"


def fmt(v):
    return "-" if v is None else f"{v:.3f}"


def write_table(rows, prefix):
    widths = [max(len(c), *(len(str(r[c]) if c in ("model", "board", "threads", "status")
                                else fmt(r[c])) for r in rows)) for c in COLUMNS]
    lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))]
    for r in rows:
        cells = [str(r[c]) if c in ("model", "board", "threads", "status") else fmt(r[c])
                 for c in COLUMNS]
        lines.append("  ".join(v.ljust(w) for v, w in zip(cells, widths)).rstrip())
    text = "\n".join(lines) + "\n"
    with open(prefix + ".txt", "w") as f:
        f.write(text)
    with open(prefix + ".json", "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return text


def fmt_ms(v):
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def write_plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = [r for r in rows if r["median_ms"] is not None]
    models = sorted({r["model"] for r in ok})
    series = sorted({(r["board"], r["threads"]) for r in ok})
    boards = sorted({b for b, _ in series})
    colors = {b: f"C{i}" for i, b in enumerate(boards)}  # one colour per board in every panel
    fig, axes = plt.subplots(1, max(len(models), 1), figsize=(3.2 * max(len(models), 1) + 1, 3),
                             squeeze=False)
    for ax, model in zip(axes[0], models):
        for i, (board, threads) in enumerate(series):
            r = next((r for r in ok if (r["model"], r["board"], r["threads"]) ==
                      (model, board, threads)), None)
            if r:
                ax.bar(i, r["median_ms"], yerr=[[0], [r["p90_ms"] - r["median_ms"]]], capsize=3,
                       color=colors[board])
                ax.annotate(fmt_ms(r["median_ms"]), (i, r["p90_ms"] * 1.08), ha="center",
                            va="bottom", fontsize=6)
        # Boards differ by orders of magnitude (a phone and a server, or qemu), so: log scale.
        ax.set_yscale("log")
        ax.margins(y=0.15)
        ax.set_xticks(range(len(series)))
        ax.set_xticklabels([f"{b}\n{t} thr" for b, t in series], fontsize=7)
        ax.set_title(model, fontsize=9)
        ax.set_ylabel("median ms (whisker: p90)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(prog="ember-bench", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("models", nargs="+", metavar="MODEL", help=".onnx files or artifacts")
    ap.add_argument("--hosts", required=True, metavar="FILE", help="the hosts file")
    ap.add_argument("--out", default="ember-bench", metavar="PREFIX",
                    help="output prefix (default ember-bench)")
    ap.add_argument("--work", default=None, help="artifacts and outputs (default PREFIX.work)")
    ap.add_argument("--warmup", type=int, default=10, help="ember-run --warmup (default 10)")
    ap.add_argument("--repeat", type=int, default=50, help="ember-run --repeat (default 50)")
    ap.add_argument("--job-timeout", type=float, default=900, metavar="S",
                    help="seconds one ember-run may take before the board counts as dropped "
                    "(default 900)")
    ap.add_argument("--ssh-config", metavar="FILE", help="ssh -F FILE, for every board")
    ap.add_argument("--ssh-option", action="append", default=[], metavar="OPT",
                    help="ssh -o OPT, for every board (repeatable)")
    ap.add_argument("--runtime-dir", action="append", default=[], metavar="DIR",
                    help="where the boards' runtimes were built (ember-run --runtime-dir)")
    ap.add_argument("--ember-run", default=shutil.which("ember-run", path=here) or "ember-run",
                    help="the host's ember-run (default: the one beside ember-bench)")
    ap.add_argument("--emberc", default=shutil.which("emberc", path=here) or "emberc",
                    help="the emberc that compiles .onnx models (default: beside ember-bench)")
    args = ap.parse_args(argv)
    args.work = args.work or args.out + ".work"
    try:
        boards = parse_hosts(args.hosts)
        artifacts = prepare_artifacts(args.models, boards, args.work, args.emberc)
    except (UsageError, OSError) as e:
        print(f"ember-bench: {e}", file=sys.stderr)
        return 2
    rows = Fleet(args, boards, artifacts).run()
    sys.stdout.write(write_table(rows, args.out))
    write_plot(rows, args.out + ".png")
    print(f"wrote {args.out}.txt, .json, .csv, .png", file=sys.stderr)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
