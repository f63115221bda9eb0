#!/usr/bin/env bash
# Runs interpose_helgrind_counter under valgrind's helgrind with libcontend_interpose.so
# preloaded, under contend_mutex and, with the profile on, ticket_lock (the other spin locks take
# ticket_lock's path):
# helgrind must report no error (the interposer tells it of each acquisition, release and notification, and the
# parking lot of its happens-before edges: docs/interpose.md). Then once with a real race in the program
# (its argument `race`), which helgrind must still report: the notes hide nothing of the
# program's. Without valgrind this fails, saying to run scripts/setup.sh: it is never skipped.
#   helgrind_clean.sh LIBRARY PROGRAM HEADER_FOUND(yes|no: <valgrind/helgrind.h> at configure time)
set -u
lib=$1
program=$2
header=$3
valgrind=${CONTEND_VALGRIND:-valgrind}
command -v "$valgrind" >/dev/null ||
  { echo "FAIL no valgrind ($valgrind): run scripts/setup.sh (it installs Debian's valgrind)" >&2; exit 1; }
[ "$header" = yes ] || {
  echo "FAIL the build found no <valgrind/helgrind.h>, so the library tells helgrind nothing: run scripts/setup.sh" \
    "(Debian's valgrind package has the header), then configure and build again" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
# lock, then the program's arguments: runs it under helgrind into $log, sets rc.
run() {
  local lock=$1
  shift
  log="$work/$lock$*.log"
  # A hang ends at the timeout (124); 99 is helgrind's "errors reported".
  LD_PRELOAD=$lib CONTEND_INTERPOSE_LOCK=$lock \
    timeout -k 5 60 "$valgrind" --tool=helgrind --error-exitcode=99 "$program" "$@" >"$log" 2>&1
  rc=$?
}
fail() {
  cat "$log" >&2
  echo "FAIL $*" >&2
  status=1
}
# ticket_lock runs with the profile on (its notes take the same noted path, beside the profile's).
for lock in contend_mutex ticket_lock; do  # the other spin locks take the same notes as ticket_lock
  profile=
  if [ $lock = ticket_lock ]; then
    profile=$work/profile
    mkdir "$profile"
  fi
  CONTEND_INTERPOSE_PROFILE=$profile run $lock
  if [ $rc -ne 0 ] || ! grep -q 'ERROR SUMMARY: 0 errors' "$log"; then
    fail "$lock: helgrind exited with $rc (99: it reported errors, 124: it hung)"
  elif ! grep -q "lock $lock\$" "$log"; then
    fail "$lock: the program did not run on $lock (was the library preloaded?)"
  elif [ -n "$profile" ] && ! ls "$profile"/*.json >/dev/null 2>&1; then
    fail "$lock: no profile written in $profile"
  else
    echo "ok $lock${profile:+ (profiled)}: $(grep -o 'counter .*' "$log")"
  fi
done
run contend_mutex race
if [ $rc -ne 99 ] || ! grep -q 'Possible data race.*' "$log" || ! grep -q 'unguarded' "$log"; then
  fail "contend_mutex race: helgrind did not report the program's race on 'unguarded' (exit $rc)"
else
  echo "ok contend_mutex race: reported ($(grep -o 'ERROR SUMMARY: [0-9]* errors' "$log"))"
fi
exit $status
