"""Boards over ssh, end to end against real sshd "boards" on 127.0.0.1 (sshd_board.py):
ember-run --remote (x86-64, and aarch64 under qemu-user), ember-bench on a fleet with a board
that drops, and emberc --tune --remote keyed by the board's CPU."""

import csv
import getpass
import json
import os
import shutil
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from sshd_board import SshdBoard

QEMU_AARCH64 = "qemu-aarch64 -L /usr/aarch64-linux-gnu"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def remote_args(board, remote_dir=None):
    args = board.ssh_args()
    return args + (["--remote-dir", remote_dir] if remote_dir else [])


def test_remote_run_gives_the_local_outputs_and_copies_only_what_changed(tools, artifacts, board,
                                                                          work):
    art = artifacts["cnn"]
    local = os.path.join(work, "local-out")
    r = run([tools["ember_run"], art, "--seed", "3", "--output-dir", local])
    assert r.returncode == 0, r.stderr
    rdir = "/tmp/ember remote test"  # a space: every remote path goes through the quoting
    out = os.path.join(work, "remote-out")
    r = run([tools["ember_run"], art, "--seed", "3", "--output-dir", out, "--keep"]
            + remote_args(board, rdir))
    assert r.returncode == 0, r.stderr
    assert "copied 5 files" in r.stderr  # ember-run, the runtime library, the artifact's three
    with open(os.path.join(local, "output_0.npy"), "rb") as a, \
            open(os.path.join(out, "output_0.npy"), "rb") as b:
        assert a.read() == b.read()
    assert f"wrote {out}/output_0.npy" in r.stdout  # the board's paths read as the local ones

    # Again with an input file: only the input travels.
    x = np.random.RandomState(0).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    r = run([tools["ember_run"], art, "--input", f"input={work}/x.npy", "--output-dir", out,
             "--keep"] + remote_args(board, rdir))
    assert r.returncode == 0, r.stderr
    assert "copied 1 file " in r.stderr and "5 unchanged" in r.stderr, r.stderr
    r2 = run([tools["ember_run"], art, "--input", f"input={work}/x.npy", "--output-dir", local])
    assert np.array_equal(np.load(os.path.join(out, "output_0.npy")),
                          np.load(os.path.join(local, "output_0.npy"))), r2.stderr

    # Without --keep the board's directory is gone afterwards.
    assert board.ssh(["test", "-d", "'" + rdir + "'"]).returncode == 0
    r = run([tools["ember_run"], art, "--output-dir", out] + remote_args(board, rdir))
    assert r.returncode == 0, r.stderr
    assert "copied 0 files (0 bytes), 5 unchanged" in r.stderr, r.stderr
    assert board.ssh(["test", "-e", "'" + rdir + "'"]).returncode == 1


def test_concurrent_remote_runs_each_get_their_own_outputs(tools, artifacts, board, work):
    # Runs sharing one board directory once mixed each other's inputs and outputs (and exited 0).
    art, rdir = artifacts["mlp"], "/tmp/ember-concurrent-test"

    def one(i):
        x = np.random.RandomState(100 + i).uniform(-1, 1, (1, 784)).astype(np.float32)
        np.save(os.path.join(work, f"cx{i}.npy"), x)
        remote, local = os.path.join(work, f"cr{i}"), os.path.join(work, f"cl{i}")
        r = run([tools["ember_run"], art, "--input", f"input={work}/cx{i}.npy", "--output-dir",
                 remote] + remote_args(board, rdir))
        assert r.returncode == 0, r.stderr
        assert run([tools["ember_run"], art, "--input", f"input={work}/cx{i}.npy",
                    "--output-dir", local]).returncode == 0
        assert np.array_equal(np.load(os.path.join(remote, "output_0.npy")),
                              np.load(os.path.join(local, "output_0.npy"))), (i, r.stderr)
        return r.stderr

    with ThreadPoolExecutor(4) as pool:
        notes = list(pool.map(one, range(8)))
    assert any("this run works in " + rdir + "/run-" in n for n in notes), notes
    assert board.ssh(["test", "-e", rdir]).returncode == 1  # every run cleaned up after itself


def write_claim(rdir, claim):
    os.makedirs(os.path.join(rdir, ".lock"), exist_ok=True)
    with open(os.path.join(rdir, ".lock", "owner"), "w") as f:  # the board is this machine
        f.write(claim + "\n")


def test_a_busy_directory_refuses_keep_and_a_stale_claim_is_taken_over(tools, artifacts, board,
                                                                        work):
    art, rdir, out = artifacts["mlp"], "/tmp/ember-claim-test", os.path.join(work, "claim-out")
    shutil.rmtree(rdir, ignore_errors=True)
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    write_claim(rdir, f"lab-pc 4242 {boot}")  # another machine's session, still running
    r = run([tools["ember_run"], art, "--output-dir", out, "--keep"] + remote_args(board, rdir))
    assert r.returncode == 1, r.stderr
    assert f"{rdir} is in use by lab-pc pid 4242" in r.stderr, r.stderr
    assert f"remove {rdir}/.lock on the board" in r.stderr, r.stderr
    assert sorted(os.listdir(rdir)) == [".lock"]  # nothing of the holder's touched
    # Without --keep the run goes to a directory of its own and removes only that.
    r = run([tools["ember_run"], art, "--output-dir", out] + remote_args(board, rdir))
    assert r.returncode == 0, r.stderr
    assert f"{rdir} is in use by lab-pc pid 4242; this run works in {rdir}/run-" in r.stderr
    assert sorted(os.listdir(rdir)) == [".lock"]

    # A process of this machine that is gone gives its claim up to the next session.
    gone = subprocess.Popen(["true"])
    gone.wait()
    write_claim(rdir, f"{socket.gethostname()} {gone.pid} {boot}")
    r = run([tools["ember_run"], art, "--output-dir", out, "--keep"] + remote_args(board, rdir))
    assert r.returncode == 0, r.stderr
    assert "copied 5 files" in r.stderr, r.stderr
    assert ".lock" not in os.listdir(rdir) and "art" in os.listdir(rdir)  # released, kept
    r = run([tools["ember_run"], art, "--output-dir", out] + remote_args(board, rdir))
    assert r.returncode == 0 and "5 unchanged" in r.stderr, r.stderr
    assert not os.path.exists(rdir)


def test_remote_bench_json_and_profile_come_back(tools, artifacts, board, work):
    # A quote and a backslash in the local path: they come back escaped in the JSON.
    out = os.path.join(work, 'bench "out" \\ here')
    r = run([tools["ember_run"], artifacts["mlp"], "--bench", "--json", "--repeat", "5",
             "--warmup", "1", "--threads", "2", "--profile", "--output-dir", out]
            + remote_args(board))
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["threads"] == 2 and result["repeat"] == 5
    assert 0 < result["median_ms"] <= result["p99_ms"]
    assert result["profile"], "the per-operator profile"
    assert result["outputs"] == [f"{out}/output_0.npy"]
    assert result["artifact"] == artifacts["mlp"]
    assert os.path.exists(os.path.join(out, "output_0.npy"))


def test_remote_run_of_an_aarch64_artifact_under_qemu(tools, aarch64_cnn, artifacts, board,
                                                       work):
    art = aarch64_cnn
    out_arm, out_x86 = os.path.join(work, "out-arm"), os.path.join(work, "out-x86")
    r = run([tools["ember_run"], art, "--output-dir", out_arm, "--remote-exec-wrapper",
             QEMU_AARCH64, "--runtime-dir", tools["cross_root"]] + remote_args(board))
    assert r.returncode == 0, r.stderr
    assert run([tools["ember_run"], artifacts["cnn"], "--output-dir", out_x86]).returncode == 0
    np.testing.assert_allclose(np.load(os.path.join(out_arm, "output_0.npy")),
                               np.load(os.path.join(out_x86, "output_0.npy")),
                               rtol=1e-3, atol=1e-4)


def test_the_boards_errors_come_back_with_local_paths(tools, artifacts, board, work):
    np.save(os.path.join(work, "y.npy"), np.zeros((1, 784), np.float32))
    r = run([tools["ember_run"], artifacts["mlp"], "--input", f"nope={work}/y.npy"]
            + remote_args(board, "/tmp/ember-err-test"))
    assert r.returncode == 1, r.stderr
    assert f'--input nope={work}/y.npy: the model has no input named "nope"' in r.stderr, r.stderr
    assert board.ssh(["test", "-e", "/tmp/ember-err-test"]).returncode == 1  # cleaned anyway


def test_remote_errors_name_the_board_and_the_fix(tools, artifacts, aarch64_cnn, work):
    gone = SshdBoard(work, "board-gone")
    gone.stop()
    r = run([tools["ember_run"], artifacts["mlp"], "--output-dir", work] + gone.ssh_args())
    assert r.returncode == 3, r.stderr
    assert f"--remote {gone.spec}: ssh failed (exit 255)" in r.stderr
    assert "command: ssh -F" in r.stderr
    r = run([tools["ember_run"], artifacts["mlp"], "--keep"])
    assert r.returncode == 2 and "only apply with --remote" in r.stderr
    r = run([tools["ember_run"], artifacts["mlp"], "--remote", "-oProxyCommand=x"])
    assert r.returncode != 0 and "expected USER@HOST[:PORT]" in r.stderr
    r = run([tools["ember_run"], aarch64_cnn, "--runtime-dir", "/nonexistent"] + gone.ssh_args())
    assert r.returncode == 1 and "no ember-run built for aarch64" in r.stderr, r.stderr


def test_fleet_bench_reports_a_board_that_drops_and_the_rest_finish(tools, models, board,
                                                                     board2, work):
    # Board q is an aarch64 board emulated on a's machine: the .onnx models are compiled for
    # each target, and two boards on one machine keep to directories of their own.
    hosts = os.path.join(work, "hosts.txt")
    with open(hosts, "w") as f:
        f.write("# name destination target threads [exec wrapper]\n"
                f"a {board.spec} x86_64-linux-gnu 1,2\n"
                f"b {board2.spec} x86_64-linux-gnu 1,2,3,4\n"
                f"q {board.spec} aarch64-linux-gnu 1 {QEMU_AARCH64}\n")
    prefix = os.path.join(work, "fleet")
    p = subprocess.Popen([tools["ember_bench"], "--hosts", hosts, models["mlp"],
                          models["cnn"], "--out", prefix, "--repeat", "20", "--warmup", "2",
                          "--ssh-config", board.ssh_config, "--runtime-dir", tools["cross_root"]],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    progress = []
    for line in p.stderr:
        progress.append(line)
        if line.startswith("[b] 1/"):
            board2.stop()  # b drops off the network after its first job
    table = p.stdout.read()
    assert p.wait() == 1, "".join(progress)
    text = "".join(progress)
    assert "[b]" in text and "board dropped" in text and "retrying once" in text, text
    assert "[a] done" in text and "[q] done" in text, text
    with open(prefix + ".csv") as f:
        rows = list(csv.DictReader(f))
    a_rows = [r for r in rows if r["board"] in ("a", "q")]
    b_rows = [r for r in rows if r["board"] == "b"]
    assert len(a_rows) == 6 and all(r["status"] == "ok" for r in a_rows), rows
    assert len(b_rows) == 8 and any(r["status"] == "ok" for r in b_rows), rows
    assert any(r["status"].startswith(("failed: board dropped", "not run")) for r in b_rows)
    assert list(rows[0]) == ["model", "board", "threads", "median_ms", "p90_ms", "p99_ms", "status"]
    with open(prefix + ".json") as f:
        assert len(json.load(f)) == 14
    assert "median_ms" in table and os.path.getsize(prefix + ".png") > 1000
    with open(prefix + ".png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    # a and q cleaned up after their last job; b dropped before it could (the boards are local).
    user = getpass.getuser()
    assert not os.path.exists(f"/tmp/ember-bench-{user}-a")
    assert not os.path.exists(f"/tmp/ember-bench-{user}-q")
    shutil.rmtree(f"/tmp/ember-bench-{user}-b", ignore_errors=True)


def board_cpu_of_this_machine():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    raise AssertionError("no model name in /proc/cpuinfo")


def tune(tools, model, board, log, out, extra=()):
    return run([tools["emberc"], "compile", model, "-o", out, "--tune", "--tuning-log", log,
                "--tune-candidates", "2", "--tune-repeat", "1"] + list(extra)
               + remote_args(board))


def test_remote_tuning_keys_the_log_by_the_boards_cpu(tools, models, board, board2, work):
    log = os.path.join(work, "tuning.log")
    r = tune(tools, models["mlp"], board, log, os.path.join(work, "tuned"))
    assert r.returncode == 0, r.stderr
    cpu = board_cpu_of_this_machine()
    assert f"board {board.spec}: CPU {cpu}" in r.stderr
    with open(log) as f:
        records = [l for l in f if not l.startswith("#")]
    assert records and all(f" board={cpu}\t" in l for l in records), records
    assert "tuned 0 of" not in r.stderr, r.stderr
    # Another board with the same CPU reuses every record and measures nothing.
    if board2.proc is None:
        board2.start()
    r = tune(tools, models["mlp"], board2, log, os.path.join(work, "tuned2"))
    assert r.returncode == 0, r.stderr
    assert f"tuned 0 of {len(records)} tunable workloads ({len(records)} already in the log" \
        in r.stderr, r.stderr
    # Without --tune, --remote picks that CPU's records; without a board none of them fits.
    n = len(records)
    out = os.path.join(work, "untuned")
    r = run([tools["emberc"], "compile", models["mlp"], "-o", out, "--tuning-log", log, "-v"]
            + remote_args(board2))
    assert r.returncode == 0 and f"{n} records, {n} used" in r.stderr, r.stderr
    r = run([tools["emberc"], "compile", models["mlp"], "-o", out, "--tuning-log", log, "-v"])
    assert r.returncode == 0 and f"{n} records, 0 used" in r.stderr, r.stderr


def test_remote_tuning_of_an_aarch64_target_under_qemu(tools, models, board, work):
    log = os.path.join(work, "tuning-aarch64.log")
    r = tune(tools, models["cnn"], board, log, os.path.join(work, "tuned-arm"),
             ["--target", "llvm -mtriple=aarch64-linux-gnu", "--remote-exec-wrapper",
              QEMU_AARCH64, "--runtime-dir", tools["cross_root"]])
    assert r.returncode == 0, r.stderr
    with open(log) as f:
        records = [l for l in f if not l.startswith("#")]
    cpu = board_cpu_of_this_machine()
    assert records and all("target=aarch64" in l and f" board={cpu}\t" in l for l in records), \
        records


def test_fleet_tuning_measures_each_cpu_once(tools, models, board, board2, work):
    if board2.proc is None:
        board2.start()
    hosts = os.path.join(work, "tune-hosts.txt")
    with open(hosts, "w") as f:
        f.write(f"a {board.spec} x86_64-linux-gnu 1\n"
                f"q {board.spec} aarch64-linux-gnu 1 {QEMU_AARCH64}\n"  # not the target's arch
                f"b {board2.spec} x86_64-linux-gnu 1\n")
    log = os.path.join(work, "fleet-tuning.log")
    r = run([tools["emberc"], "compile", models["mlp"], "-o", os.path.join(work, "tuned-fleet"),
             "--tune", "--tuning-log", log, "--tune-candidates", "2", "--tune-repeat", "1",
             "--fleet", hosts, "--ssh-config", board.ssh_config])
    assert r.returncode == 0, r.stderr
    with open(log) as f:
        n = len([l for l in f if not l.startswith("#")])
    assert n > 0
    assert f"on {board.spec}; winners in {log}" in r.stderr, r.stderr
    assert f"tuned 0 of {n} tunable workloads ({n} already in the log" in r.stderr, r.stderr
    assert r.stderr.count("emberc: board ") == 2, r.stderr  # q was left out
    r = run([tools["emberc"], "compile", models["mlp"], "-o", os.path.join(work, "tuned-fleet"),
             "--tune", "--fleet", hosts, "--target", "llvm -mtriple=armv7a-linux-gnueabihf",
             "--ssh-config", board.ssh_config])
    assert r.returncode != 0 and "no board has the target's architecture" in r.stderr, r.stderr
