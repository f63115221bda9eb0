#!/usr/bin/env bash
# The model checker's long sweep, for a developer's machine: builds the model-checking preset
# and runs every model (tests/model/) with N executions per strategy instead of the test
# command's budgets (docs/design/model-checking.md). Bounded searches then run until they
# complete or reach N.
#
#   scripts/model_check.sh [--schedules N] [ctest -R regex]
#
# A failure prints the failing schedule's spec; CONTEND_MODEL_SEED='<spec>' ctest --preset
# model -V -R <test> replays exactly that execution and prints its schedule.
set -euo pipefail
cd "$(dirname "$0")/.."
schedules=20000
filter=()
while [ $# -gt 0 ]; do
  case "$1" in
    --schedules)
      [ $# -ge 2 ] || { echo "model_check.sh: --schedules needs a number" >&2; exit 2; }
      schedules=$2
      shift 2;;
    -h|--help)
      sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
      exit 0;;
    *)
      filter=(-R "$1")
      shift;;
  esac
done
if ! [[ "$schedules" =~ ^[1-9][0-9]*$ ]]; then
  echo "model_check.sh: --schedules must be a positive whole number, not '$schedules'" >&2
  exit 2
fi
cmake --preset model >/dev/null
cmake --build --preset model -j "$(nproc)"
# No per-test timeout: the sweep is as long as N makes it.
CONTEND_MODEL_SCHEDULES=$schedules ctest --preset model --timeout 0 "${filter[@]}"
