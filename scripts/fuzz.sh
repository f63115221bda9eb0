#!/usr/bin/env bash
# Fuzzes each input parser of the lab for a fixed number of inputs (default 50,000 each,
# fixed seed: the same inputs every run), starting from the golden files, and fails on the
# first crash, sanitizer report or exception other than the parser's documented error.
# Part of scripts/test.sh. Needs clang (libFuzzer): scripts/setup.sh installs it.
#
#   scripts/fuzz.sh [runs]
#
# Each target is linked straight from the objects its parser needs (a few files) rather
# than through a clang build of the whole lab. The two targets share most of them: each
# source is compiled once, on every core at once, and the two targets fuzz side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50000}
out=build/fuzz
mkdir -p "$out/objects"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Ilab -Iinclude)
seeds="tests/lab/golden/compare tests/lab/golden/run.json tests/lab/golden/run_v1.json"
parsers=(lab/analyze/inputs.cpp lab/store/results_json.cpp lab/model/results.cpp lab/model/statistics.cpp
  lab/store/output_file.cpp lab/text/utf8.cpp lab/text/numbers.cpp)  # text/: message_text and ns_text, which errors use
compare_inputs_sources=(fuzz/compare_inputs_fuzz.cpp "${parsers[@]}")
history_import_sources=(fuzz/history_import_fuzz.cpp lab/analyze/history_import.cpp "${parsers[@]}")

object_of() { echo "$out/objects/$(echo "$1" | tr / _).o"; }

echo "=== fuzz: build"
sources=$(printf '%s\n' "${compare_inputs_sources[@]}" "${history_import_sources[@]}" | sort -u)
pids=()
for source in $sources; do
  clang++ "${flags[@]}" -c "$source" -o "$(object_of "$source")" &
  pids+=($!)
  # At most one compiler per core.
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do sleep 0.2; done
done
for pid in "${pids[@]}"; do wait "$pid"; done  # set -e: a failed compile fails the run here

# target name, then its sources (the fuzz entry point first). Runs in the background; its
# result is its exit status.
fuzz_one() {
  local name=$1
  shift
  local objects=()
  for source in "$@"; do objects+=("$(object_of "$source")"); done
  clang++ "${flags[@]}" "${objects[@]}" -o "$out/$name"
  local corpus
  corpus=$(mktemp -d)
  trap 'rm -rf "$corpus"' RETURN
  find $seeds -type f -name '*.json' -exec cp {} "$corpus" \;
  if ! "$out/$name" -runs="$runs" -seed=1 -max_len=65536 -print_final_stats=0 "$corpus" 2>"$out/$name.log"; then
    tail -n 40 "$out/$name.log" >&2
    echo "fuzz $name: failed (log: $out/$name.log)" >&2
    return 1
  fi
  echo "=== fuzz $name: $runs inputs, passed"
}

fuzz_one compare_inputs_fuzz "${compare_inputs_sources[@]}" &
compare_inputs=$!
fuzz_one history_import_fuzz "${history_import_sources[@]}" &
history_import=$!
failed=0
wait "$compare_inputs" || failed=1
wait "$history_import" || failed=1
exit "$failed"
