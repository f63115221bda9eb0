#!/usr/bin/env bash
# Fuzzes each input parser of the lab for a fixed number of inputs (default 50,000 each,
# fixed seed: the same inputs every run), starting from the golden files, and fails on the
# first crash, sanitizer report or exception other than the parser's documented error.
# Part of scripts/test.sh. Needs clang (libFuzzer): scripts/setup.sh installs it.
#
#   scripts/fuzz.sh [runs]
#
# Each target is compiled straight from the sources its parser needs (a few files, seconds)
# rather than through a clang build of the whole lab.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50000}
out=build/fuzz
mkdir -p "$out"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Ilab -Iinclude)

# target name, then its sources (the fuzz entry point first), then its seed folders.
fuzz_one() {
  local name=$1 seeds=$2
  shift 2
  echo "=== fuzz $name: build"
  clang++ "${flags[@]}" "$@" -o "$out/$name"
  local corpus
  corpus=$(mktemp -d)
  trap 'rm -rf "$corpus"' RETURN
  find $seeds -type f -name '*.json' -exec cp {} "$corpus" \;
  echo "=== fuzz $name: $runs inputs"
  "$out/$name" -runs="$runs" -seed=1 -max_len=65536 -print_final_stats=0 "$corpus" 2>"$out/$name.log" || {
    tail -n 40 "$out/$name.log" >&2
    echo "fuzz $name: failed (log: $out/$name.log)" >&2
    return 1
  }
  echo "=== fuzz $name: passed"
}

fuzz_one compare_inputs_fuzz "tests/lab/golden/compare tests/lab/golden/run.json tests/lab/golden/run_v1.json" \
  fuzz/compare_inputs_fuzz.cpp lab/compare/inputs.cpp lab/results/json.cpp lab/results/results.cpp \
  lab/harness/statistics.cpp

fuzz_one history_import_fuzz "tests/lab/golden/compare tests/lab/golden/run.json tests/lab/golden/run_v1.json" \
  fuzz/history_import_fuzz.cpp lab/compare/history_import.cpp lab/compare/inputs.cpp lab/results/json.cpp \
  lab/results/results.cpp lab/harness/statistics.cpp
