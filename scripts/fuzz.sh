#!/usr/bin/env bash
# Fuzzes each input parser for a fixed number of inputs (default 50,000 each, fixed seed:
# the same inputs every run) and fails on the first crash, sanitizer report, broken promise
# (the target traps) or exception other than the parser's documented error. The parsers: the
# lab's two file readers, starting from the golden files, and the server's HTTP request
# parser, the one that reads the network, starting from fuzz/corpus/http.
# Part of scripts/test.sh. Needs clang (libFuzzer): scripts/setup.sh installs it.
#
#   scripts/fuzz.sh [runs]
#
# Each target is linked straight from the objects its parser needs (a few files) rather
# than through a clang build of the whole lab. The lab's two targets share most of them: each
# source is compiled once, on every core at once, and the targets fuzz side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50000}
out=build/fuzz
mkdir -p "$out/objects"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Ilab -Iinclude -Iserver)
lab_seeds="tests/lab/golden/compare tests/lab/golden/run.json tests/lab/golden/run_v1.json tests/lab/golden/report_profiled_run.json"
parsers=(lab/analyze/inputs.cpp lab/store/results_json.cpp lab/results/results.cpp lab/results/lock_profile.cpp lab/results/statistics.cpp
  lab/store/output_file.cpp lab/os/write_all.cpp lab/text/utf8.cpp lab/text/numbers.cpp)  # text/: message_text and ns_text, which errors use
compare_inputs_sources=(fuzz/compare_inputs_fuzz.cpp "${parsers[@]}")
history_import_sources=(fuzz/history_import_fuzz.cpp lab/analyze/history_import.cpp "${parsers[@]}")
http_request_sources=(fuzz/http_request_fuzz.cpp server/http.cpp)

object_of() { echo "$out/objects/$(echo "$1" | tr / _).o"; }

echo "=== fuzz: build"
sources=$(printf '%s\n' "${compare_inputs_sources[@]}" "${history_import_sources[@]}" "${http_request_sources[@]}" | sort -u)
pids=()
for source in $sources; do
  clang++ "${flags[@]}" -c "$source" -o "$(object_of "$source")" &
  pids+=($!)
  # At most one compiler per core.
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do sleep 0.2; done
done
for pid in "${pids[@]}"; do wait "$pid"; done  # set -e: a failed compile fails the run here

# target name, where its seeds are (paths, then a find pattern), its longest input, then its
# sources (the fuzz entry point first). Runs in the background; its result is its exit status.
fuzz_one() {
  local name=$1 seed_paths=$2 seed_pattern=$3 max_len=$4
  shift 4
  local objects=()
  for source in "$@"; do objects+=("$(object_of "$source")"); done
  clang++ "${flags[@]}" "${objects[@]}" -o "$out/$name"
  local corpus
  corpus=$(mktemp -d)
  trap 'rm -rf "$corpus"' RETURN
  # shellcheck disable=SC2086  # a list of paths
  find $seed_paths -type f -name "$seed_pattern" -exec cp {} "$corpus" \;
  if ! "$out/$name" -runs="$runs" -seed=1 -max_len="$max_len" -print_final_stats=0 "$corpus" 2>"$out/$name.log"; then
    tail -n 40 "$out/$name.log" >&2
    echo "fuzz $name: failed (log: $out/$name.log)" >&2
    return 1
  fi
  echo "=== fuzz $name: $runs inputs, passed"
}

fuzz_one compare_inputs_fuzz "$lab_seeds" '*.json' 65536 "${compare_inputs_sources[@]}" &
compare_inputs=$!
fuzz_one history_import_fuzz "$lab_seeds" '*.json' 65536 "${history_import_sources[@]}" &
history_import=$!
# A request longer than the largest header limit (4,111 bytes) adds nothing the limit does
# not already cut; the target parses every prefix of a complete request, so length costs.
fuzz_one http_request_fuzz fuzz/corpus/http '*' 4200 "${http_request_sources[@]}" &
http_request=$!
failed=0
wait "$compare_inputs" || failed=1
wait "$history_import" || failed=1
wait "$http_request" || failed=1
exit "$failed"
