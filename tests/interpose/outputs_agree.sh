#!/usr/bin/env bash
# Runs interpose_torture without the interposer and with it under each lock choice, and
# fails unless every run passes and all print the same lines.
set -u
program=$1
lib=$2
reference=$(CONTEND_INTERPOSE_EXPECT=none "$program") || { echo "not preloaded: failed"; echo "$reference"; exit 1; }
for lock in contend_mutex glibc; do
  out=$(LD_PRELOAD=$lib CONTEND_INTERPOSE_LOCK=$lock CONTEND_INTERPOSE_EXPECT=$lock "$program") ||
    { echo "$lock: failed"; echo "$out"; exit 1; }
  if [[ "$out" != "$reference" ]]; then
    echo "$lock: output differs from the run without the interposer"
    diff <(echo "$reference") <(echo "$out")
    exit 1
  fi
done
echo "outputs agree ($(echo "$reference" | wc -l) lines)"
