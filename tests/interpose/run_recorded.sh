#!/usr/bin/env bash
# Runs interpose_torture and keeps what it printed in $1 (for interpose/outputs_agree);
# fails as the program does.
set -u
out=$1
shift
"$@" > "$out"
rc=$?
cat "$out"
exit $rc
