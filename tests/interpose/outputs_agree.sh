#!/usr/bin/env bash
# Fails unless every recorded run of interpose_torture (the files given, the first the run
# without the interposer) printed the same lines.
set -u
reference=$1
shift
for out in "$@"; do
  if ! cmp -s "$reference" "$out"; then
    echo "$out differs from $reference:"
    diff "$reference" "$out"
    exit 1
  fi
done
echo "outputs agree: $# runs, $(wc -l < "$reference") lines each, as without the interposer"
