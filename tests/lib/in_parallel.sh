# shellcheck shell=bash
# in_parallel JOBS FUNCTION: runs FUNCTION once per line of stdin (the line's words are its
# arguments), JOBS runs at a time, starting the next as soon as any run ends, so one slow run does
# not hold a free core. Prints each run's output (stdout and stderr) in the order of the lines once
# all have ended; fails if any run failed. Sourced by tests/cross/run_cross.sh and
# tests/fuzz/run_fuzzers.sh.
#
# The free slots are tokens in a FIFO: a run takes one before it starts and its subshell gives it
# back when it exits, however it exits. (bash's `wait -n PID...` would be shorter, but it loses runs
# that end while another is being waited for: "no such job".)
in_parallel() {
  local jobs=$1 fn=$2 out line n=0 i status=0 slots pids=()
  out=$(mktemp -d "${TMPDIR:-/tmp}/in_parallel.XXXXXX") || return 1
  mkfifo "$out/slots" && exec {slots}<>"$out/slots" || {
    rm -rf "$out"
    return 1
  }
  for ((i = 0; i < jobs; i++)); do echo >&"$slots"; done
  while read -r line; do
    read -r -u "$slots" || { status=1; break; }
    (
      # shellcheck disable=SC2064  # the descriptor's number is known now
      trap "echo >&$slots" EXIT
      # shellcheck disable=SC2086  # the line's words are the arguments
      "$fn" $line
    ) >"$out/$n.log" 2>&1 </dev/null &
    pids+=($!)
    n=$((n + 1))
  done
  for i in "${pids[@]}"; do wait "$i" || status=1; done
  exec {slots}>&-
  for ((i = 0; i < n; i++)); do cat "$out/$i.log"; done
  rm -rf "$out"
  return "$status"
}
