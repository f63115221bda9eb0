#!/usr/bin/env bash
# A smoke check of bench/sparse_contention (a program, not a benchmark in the tests: no timing
# is asserted): a short run ends with its summary line, and bad arguments are refused with
# exit 2 and a message naming the argument, before anything runs.
#   sparse_contention_check.sh PROGRAM
set -u
program=$1
out=$("$program" 2 100 100 0.01 1) || { echo "FAIL a short run exited $?" >&2; exit 1; }
grep -q '^contend/glibc ops/s: median' <<<"$out" || { echo "FAIL no summary line in: $out" >&2; exit 1; }
status=0
check() {  # expected name in the message, then the arguments
  local name=$1
  shift
  err=$("$program" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || ! grep -q "$name" <<<"$err"; then
    echo "FAIL '$*': exit $rc (2 expected), message: $err" >&2
    status=1
  fi
}
check THREADS 0
check THREADS 2.5
check HOLD_NS 2 nan
check THINK_NS 2 1 -1
check SECONDS 2 1 1 1e9
check REPS 2 1 1 0.01 0
check usage 1 2 3 4 5 6
exit $status
