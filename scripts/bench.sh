#!/usr/bin/env bash
# The main job: installs what is missing, builds optimized, runs the lock benchmark.
# Extra arguments go to the benchmark (Google Benchmark flags, e.g. --benchmark_filter=counter).
# Results: the table on stdout and build/release/lock_bench.json.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target lock_bench
out=build/release/lock_bench.json
build/release/bench/lock_bench --benchmark_min_time=0.2 --benchmark_out="$out" --benchmark_out_format=json "$@"
echo "lock_bench: results written to $out"
