"""tests/lib/in_parallel.sh, the shell helper that runs the ARM stage's int8 cases and the fuzzers
side by side: outputs in input order, failures reported, at most JOBS runs at once, and the next
run started as soon as any run ends."""

import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HELPER = os.path.join(ROOT, "tests", "lib", "in_parallel.sh")


def in_parallel(tmp_path, jobs, function_body, lines):
    """Runs `printf LINES | in_parallel JOBS job` with job() defined by FUNCTION_BODY."""
    script = (f'. "{HELPER}"\nD="{tmp_path}"\njob() {{\n{function_body}\n}}\n'
              f'printf "%s\\n" {" ".join(repr(line) for line in lines)} | in_parallel {jobs} job\n')
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def test_outputs_come_in_the_order_of_the_lines_with_the_lines_words_as_arguments(tmp_path):
    # The first run ends last; its output still comes first.
    r = in_parallel(tmp_path, 3, 'sleep "$2"; echo "run $1 of $#"; echo "to stderr $1" >&2',
                    ["a 0.4", "b 0.2", "c 0"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["run a of 2", "to stderr a", "run b of 2", "to stderr b",
                                     "run c of 2", "to stderr c"]


def test_a_failing_run_fails_the_whole_and_the_others_still_run_and_print(tmp_path):
    r = in_parallel(tmp_path, 2, '[ "$1" != bad ] || { echo "bad failed"; return 3; }; echo "$1 ok"',
                    ["one", "bad", "three", "four"])
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["one ok", "bad failed", "three ok", "four ok"]


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_no_more_than_jobs_runs_at_once(tmp_path, jobs):
    # Each run counts the runs alive beside it (a file per run, made at its start and removed at
    # its end, so the count never exceeds the runs actually alive).
    body = ('touch "$D/alive.$1"; ls "$D" | grep -c "^alive\\." > "$D/count.$1"; sleep 0.2; '
            'rm "$D/alive.$1"')
    r = in_parallel(tmp_path, jobs, body, [str(i) for i in range(6)])
    assert r.returncode == 0, r.stdout + r.stderr
    counts = [int((tmp_path / f"count.{i}").read_text()) for i in range(6)]
    assert max(counts) <= jobs, counts
    if jobs > 1:
        assert max(counts) > 1, counts  # and they did run side by side


def test_a_slow_run_does_not_hold_the_other_slot(tmp_path):
    # Two slots: the first run waits for the last of the lines to have run. That happens only if
    # the runs after it take the other slot one after another while it is still running; a helper
    # that waits for its oldest run before starting the next one never gets there.
    body = ('if [ "$1" = first ]; then\n'
            '  for _ in $(seq 200); do [ -e "$D/last.done" ] && { echo first ended; return 0; }; '
            'sleep 0.05; done\n'
            '  echo "first gave up waiting"; return 1\n'
            'fi\n'
            '[ "$1" = last ] && touch "$D/last.done"; echo "$1 ended"')
    r = in_parallel(tmp_path, 2, body, ["first", "second", "third", "last"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["first ended", "second ended", "third ended", "last ended"]


@pytest.mark.parametrize("fifo_fails", [False, True])
def test_no_temporary_directory_is_left_behind(tmp_path, fifo_fails):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = (f'. "{HELPER}"\nexport TMPDIR="{tmp}"\njob() {{ echo "$1"; }}\n'
              + ("mkfifo() { return 1; }\n" if fifo_fails else "")
              + 'printf "a\\nb\\n" | in_parallel 2 job\n')
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == (1 if fifo_fails else 0), r.stderr
    assert list(tmp.iterdir()) == []
