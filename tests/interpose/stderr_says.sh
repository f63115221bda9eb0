#!/usr/bin/env bash
# stderr_says.sh TEXT PROGRAM ARGS...: runs the program; fails as it does, and fails unless its
# standard error holds TEXT (its standard output is dropped).
set -u
text=$1
shift
said=$("$@" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 0 ] || { echo "exit $rc:"; printf '%s\n' "$said"; exit 1; }
if ! grep -F -q -- "$text" <<< "$said"; then
  echo "not said on standard error: $text"
  printf '%s\n' "$said"
  exit 1
fi
echo "said: $text"
