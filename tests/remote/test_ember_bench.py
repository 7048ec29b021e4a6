"""ember-bench's own logic, without boards: the hosts file, targets, results and the table."""

import importlib.util
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
spec = importlib.util.spec_from_file_location(
    "ember_bench", os.path.join(ROOT, "runtime", "cli", "ember_bench.py"))
ember_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ember_bench)


def hosts(tmp_path, text):
    p = tmp_path / "hosts.txt"
    p.write_text(text)
    return str(p)


def test_hosts_file_columns_and_wrapper(tmp_path):
    boards = ember_bench.parse_hosts(hosts(tmp_path, "# c\npi pi@h aarch64-linux-gnu 1,4 # desk\n"
                                           "bb d@b armv7a-linux-gnueabihf 1 qemu-arm -L /x\n"))
    assert [b["name"] for b in boards] == ["pi", "bb"]
    assert boards[0]["threads"] == [1, 4] and boards[0]["arch"] == "aarch64"
    assert boards[1]["wrapper"] == "qemu-arm -L /x" and boards[1]["arch"] == "armhf"
    assert ember_bench.emberc_target("armv7a-linux-gnueabihf").endswith("-mattr=+neon")


@pytest.mark.parametrize("text,message", [
    ("pi pi@h aarch64-linux-gnu\n", "hosts.txt:1: expected NAME DESTINATION TARGET THREADS"),
    ("pi pi@h aarch64-linux-gnu 0\n", "THREADS must be a comma list of positive integers"),
    ("pi pi@h mips-linux-gnu 1\n", "target 'mips-linux-gnu' is not one Ember builds for"),
    ("a h x86_64-linux-gnu 1\na h x86_64-linux-gnu 1\n", "board name 'a' is used twice"),
    ("# none\n", "no boards listed"),
])
def test_hosts_file_errors_name_file_and_line(tmp_path, text, message):
    with pytest.raises(ember_bench.UsageError, match=message.replace("(", r"\(")):
        ember_bench.parse_hosts(hosts(tmp_path, text))


def test_a_result_without_bench_json_is_a_failure():
    ok = subprocess.CompletedProcess([], 0, '{"median_ms": 1, "p90_ms": 2, "p99_ms": 3}', "")
    assert ember_bench.parse_result(ok)["p99_ms"] == 3
    assert ember_bench.parse_result(subprocess.CompletedProcess([], 0, "wrote x", "")) is None


def test_table_text_csv_json(tmp_path):
    rows = [{"model": "m", "board": "pi", "threads": 1, "median_ms": 1.5, "p90_ms": 2.0,
             "p99_ms": 2.5, "status": "ok"},
            {"model": "m", "board": "bb", "threads": 1, "median_ms": None, "p90_ms": None,
             "p99_ms": None, "status": "not run: board dropped"}]
    text = ember_bench.write_table(rows, str(tmp_path / "t"))
    assert text.splitlines()[0].split() == list(ember_bench.COLUMNS)
    assert "1.500" in text and "not run: board dropped" in text
    assert (tmp_path / "t.csv").read_text().splitlines()[2] == "m,bb,1,,,,not run: board dropped"
    ember_bench.write_plot(rows, str(tmp_path / "t.png"))
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_a_job_past_its_timeout_counts_as_a_drop():
    r = ember_bench.run_with_timeout(["sh", "-c", "sleep 30 & sleep 30"], 0.5)
    assert r.returncode == ember_bench.TRANSPORT_FAILED
    assert "no answer within --job-timeout 0.5 s" in r.stderr
    assert ember_bench.run_with_timeout(["sh", "-c", "echo hi"], 5).stdout == "hi\n"
