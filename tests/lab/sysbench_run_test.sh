#!/usr/bin/env bash
# A real program under `contend run`: sysbench's mutex and threads tests under every lock,
# each checked by sysbench's own count of what it did (and its exit status). Bounded: each run
# stops after 60 s (a lock that convoys fails, it does not hang the suite). The threads are as
# many as the CPUs (two or more): the spin locks are not for oversubscription (docs/interpose.md).
#   sysbench_run_test.sh CONTEND LOCK...   (the locks: the library's list, given by the CMake test)
set -u
contend=$1
shift
locks=("$@")
[ ${#locks[@]} -gt 0 ] || { echo "FAIL: no lock given"; exit 1; }
if ! command -v sysbench >/dev/null; then
  echo "FAIL: sysbench is not installed (scripts/setup.sh installs it)"
  exit 1
fi
threads=$(nproc)
[ "$threads" -lt 2 ] && threads=2
status=0
check() {  # name, expected "total number of events", command...
  local name=$1 expected=$2
  shift 2
  local out
  out=$(timeout 60 "$@" 2>&1)
  local rc=$?
  local events
  events=$(printf '%s\n' "$out" | sed -n 's/^ *total number of events: *\([0-9]*\)$/\1/p')
  if [ $rc -ne 0 ] || [ "$events" != "$expected" ]; then
    echo "FAIL $name: exit $rc, events '${events}' (expected $expected)"
    printf '%s\n' "$out" | tail -20
    status=1
  else
    echo "ok   $name: $events events"
  fi
}
for lock in "${locks[@]}"; do
  check "mutex/$lock" "$threads" "$contend" run --lock "$lock" -- \
    sysbench mutex --threads="$threads" --mutex-num=1 --mutex-locks=20000 --mutex-loops=0 run
  check "threads/$lock" 400 "$contend" run --lock "$lock" -- \
    sysbench threads --threads="$threads" --thread-locks=1 --thread-yields=20 --events=400 --time=0 run
done
exit $status
