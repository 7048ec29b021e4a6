#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in BUILD_DIR and runs each for SECONDS (default 20) from
# its committed seed corpus. Any crash, leak, timeout (>5 s per input), or out-of-memory (RSS over
# 1 GB, a single allocation over 512 MB) fails the script.
#   tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS]
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [SECONDS]" >&2
  exit 2
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/lib/in_parallel.sh
. "$src/tests/lib/in_parallel.sh"
build=$1
seconds=${2:-20}
cc=${CC:-clang}
cxx=${CXX:-clang++}

cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DEMBER_FUZZ=ON \
  -DEMBER_BUILD_COMPILER=OFF -DEMBER_BUILD_BENCH=OFF >/dev/null
targets=(graph_json params npy onnx_import)
cmake --build "$build" -j 2 --target "${targets[@]/#/fuzz_}"

# run_one TARGET: fuzzes one target from a copy of its seeds; prints its result, fails on a finding.
run_one() {
  local t=$1
  # libFuzzer adds the inputs it finds to the first corpus directory: work on a copy so the
  # committed seeds stay small.
  local work="$build/fuzz-corpus/$t"
  mkdir -p "$work" "$build/fuzz-artifacts/$t"
  cp -n "$src/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  if ! "$build/bin/fuzz_$t" "$work" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=1024 \
      -malloc_limit_mb=512 -detect_leaks=1 -print_final_stats=1 \
      -artifact_prefix="$build/fuzz-artifacts/$t/" >"$build/fuzz-$t.log" 2>&1; then
    echo "fuzz_$t FAILED; last lines of $build/fuzz-$t.log:" >&2
    tail -n 40 "$build/fuzz-$t.log" >&2
    return 1
  fi
  echo "fuzz_$t for ${seconds}s: $(grep -a "DONE" "$build/fuzz-$t.log" | tail -n 1)"
}

# One fuzzer per core at a time: each gets a whole core for its SECONDS, in half the wall time.
printf '%s\n' "${targets[@]}" | in_parallel "$(nproc)" run_one
