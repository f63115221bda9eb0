#!/usr/bin/env bash
# The floor check of the lab (scripts/check_lab_floors.sh) on copies of the lab: it passes
# on the lab as it is, and fails, naming the file, on an include from a floor to one above
# it (in quotes or angle brackets), on one that climbs out with "../", and on a folder that is
# no floor. Usage: check_lab_floors_test.sh SOURCE_DIR
set -uo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check_lab_floors_test: $*" >&2; exit 1; }
copy() { rm -rf "$work/lab"; mkdir -p "$work/lab"
  (cd "$src/lab" && find . -type f \( -name '*.cpp' -o -name '*.hpp' \) -not -path '*/node_modules/*' -print0 |
     xargs -0 cp --parents -t "$work/lab"); }

copy
out=$(bash "$src/scripts/check_lab_floors.sh" "$work/lab" 2>&1) || fail "the lab as it is fails: $out"

copy
sed -i '0,/^#include/s//#include "analyze\/compare.hpp"\n#include/' "$work/lab/measure/harness.hpp"
out=$(bash "$src/scripts/check_lab_floors.sh" "$work/lab" 2>&1) && fail "an include of analyze/ from measure/ passed: $out"
grep -q 'lab/measure/harness.hpp:[0-9]*: includes analyze/ from measure/' <<<"$out" || fail "the upward include is not named: $out"

copy
mkdir "$work/lab/misc" && echo '#include "results/results.hpp"' >"$work/lab/misc/helper.cpp"
out=$(bash "$src/scripts/check_lab_floors.sh" "$work/lab" 2>&1) && fail "a folder that is no floor passed: $out"
grep -q 'lab/misc/ is not a floor' <<<"$out" || fail "the folder is not named: $out"

copy
echo '#include <cli/cli.hpp>' >>"$work/lab/store/history.cpp"
out=$(bash "$src/scripts/check_lab_floors.sh" "$work/lab" 2>&1) && fail "an include of cli/ in angle brackets from store/ passed: $out"
grep -q 'lab/store/history.cpp:[0-9]*: includes cli/ from store/' <<<"$out" || fail "the angle-bracket include is not named: $out"
out=$(bash "$src/scripts/check_lab_floors.sh" "$work/lab/" 2>&1) && fail "with a trailing slash on the folder, the upward include passed: $out"
grep -q 'lab/store/history.cpp:[0-9]*: includes cli/ from store/' <<<"$out" || fail "with a trailing slash, the file is misnamed: $out"

copy
echo '#include "../cli/cli.hpp"' >>"$work/lab/text/escape.cpp"
out=$(bash "$src/scripts/check_lab_floors.sh" "$work/lab" 2>&1) && fail "an include that climbs out with ../ passed: $out"
grep -q 'lab/text/escape.cpp:[0-9]*: includes ../cli/cli.hpp, a path that climbs out' <<<"$out" || fail "the ../ include is not named: $out"

copy
# Sideways and down pass: a suite including another suite's header and the workload contract.
echo '#include "suites/suites.hpp"
#include "measure/workload.hpp"' >"$work/lab/suites/extra.cpp"
out=$(bash "$src/scripts/check_lab_floors.sh" "$work/lab" 2>&1) || fail "sideways and downward includes failed: $out"
echo "check_lab_floors_test: passed"
