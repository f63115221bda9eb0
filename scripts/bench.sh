#!/usr/bin/env bash
# The main job: installs what is missing, builds optimized, runs the contention lab's
# default suite (`contend bench`: the counter suite at 1, 2, 4, 16 and 64 workers, about 75 s
# on 2 cores after the build; --full for the exhaustive sweep), then writes the report page
# (`contend report`: a chart and a table per suite, from the newest run of each suite in the
# history). Extra arguments go to `contend bench` (see `contend bench --help`).
# Results: the table on stdout, .contend/last-run.json, a row in .contend/history.db, and
# the page .contend/report.html, which opens in any browser without network access.
# The Google Benchmark program of the lock family is build/release/bench/lock_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target contend_cli lock_bench
build/release/lab/contend bench "$@"
build/release/lab/contend report -o .contend/report.html
echo "Open the report: file://$PWD/.contend/report.html"
