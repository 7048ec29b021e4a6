#!/usr/bin/env bash
# tests/remote/run_remote.sh: Ember on boards over ssh, end to end on this machine.
#
# Starts Debian's sshd as the current user on 127.0.0.1 (throwaway host and client keys in a
# temporary directory; tests/remote/sshd_board.py) and runs tests/remote/test_boards.py against
# it: ember-run --remote (outputs identical to a local run, only changed files copied, --bench
# --json and --profile brought back, the board's directory cleaned), an aarch64 artifact on a
# "board" that runs the aarch64 ember-run under qemu-user (--remote-exec-wrapper), ember-bench on
# two boards of which one is killed midway, and emberc --tune --remote keyed by the board's CPU.
# No test is skipped: a missing sshd or a board that does not start fails with sshd's message.
# The tests run on EMBER_CROSS_JOBS pytest-xdist workers, each with its own boards and scratch;
# boards on one machine share /tmp, which runs at once must (and do) cope with.
#
# Environment (all optional):
#   EMBER_HOST_BUILD        host build directory (default: build)
#   EMBER_CROSS_BUILD_ROOT  parent of cross-aarch64, the board's runtime; reused when the ARM
#                           stage built it, else only its ember-run is built (default: the host
#                           build directory)
#   EMBER_CROSS_JOBS        parallel build jobs and test workers (default 2)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
HOST_BUILD=$(abspath "${EMBER_HOST_BUILD:-build}")
CROSS_ROOT=$(abspath "${EMBER_CROSS_BUILD_ROOT:-$HOST_BUILD}")
JOBS=${EMBER_CROSS_JOBS:-2}

if [ ! -x /usr/sbin/sshd ]; then
  echo "run_remote.sh: /usr/sbin/sshd is missing; install openssh-server (scripts/bootstrap.sh)" >&2
  exit 1
fi
[ -f "$HOST_BUILD/CMakeCache.txt" ] ||
  cmake -S "$ROOT" -B "$HOST_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$HOST_BUILD" -j "$JOBS" --target emberc ember-run

cross=$CROSS_ROOT/cross-aarch64
if [ ! -f "$cross/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$cross" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$ROOT/toolchains/aarch64-linux-gnu.cmake" \
    -DEMBER_HOST_EMBERC="$HOST_BUILD/bin/emberc" >/dev/null
fi
cmake --build "$cross" -j "$JOBS" --target ember-run

cd "$ROOT"
EMBER_BUILD_DIR=$HOST_BUILD EMBER_CROSS_BUILD_ROOT=$CROSS_ROOT \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs -n "$JOBS" tests/remote
