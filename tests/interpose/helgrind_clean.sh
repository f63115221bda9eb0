#!/usr/bin/env bash
# Runs interpose_helgrind_counter under valgrind's helgrind with libcontend_interpose.so
# preloaded, under each of the interposer's own locks: helgrind must report no error (the
# interposer tells it of each acquisition and release, docs/interpose.md). Without valgrind
# this fails, saying to run scripts/setup.sh: it is never skipped.
#   helgrind_clean.sh LIBRARY PROGRAM
set -u
lib=$1
program=$2
valgrind=${CONTEND_VALGRIND:-valgrind}
command -v "$valgrind" >/dev/null || { echo "FAIL no valgrind ($valgrind): run scripts/setup.sh (it installs Debian's valgrind)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for lock in contend_mutex ttas ticket; do
  # A hang ends at the timeout (124), a failure to start at valgrind's own exit status.
  LD_PRELOAD=$lib CONTEND_INTERPOSE_LOCK=$lock \
    timeout -k 5 60 "$valgrind" --tool=helgrind --error-exitcode=99 "$program" >"$work/$lock.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q 'ERROR SUMMARY: 0 errors' "$work/$lock.log"; then
    cat "$work/$lock.log" >&2
    echo "FAIL $lock: helgrind exited with $rc (99: it reported errors, 124: it hung)" >&2
    status=1
  elif ! grep -q "lock $lock\$" "$work/$lock.log"; then
    cat "$work/$lock.log" >&2
    echo "FAIL $lock: the program did not run on $lock (was the library preloaded?)" >&2
    status=1
  else
    echo "ok $lock: $(grep -o 'counter .*' "$work/$lock.log")"
  fi
done
exit $status
