#!/usr/bin/env bash
# The page of `contend report` in a real browser. Usage:
#   report_browser_test.sh <contend binary> <results JSON> <number of suites in it>
# Writes the page of the JSON file, opens it in Debian's headless Chromium, and reads back
# what the page's own script recorded on <body> (lab/report/report.hpp): every chart constructed
# and painted, some points plotted, no error counted; and Chromium's console log must be
# empty, since the page writes nothing to the console unless something went wrong.
# Without Chromium this fails: it is never skipped.
set -uo pipefail

contend=$1
results=$2
suites=$3
chromium=${CONTEND_CHROMIUM:-/usr/bin/chromium}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[ -x "$chromium" ] || fail "no Chromium at $chromium: run scripts/setup.sh (it installs Debian's chromium)"

work=$(mktemp -d "${TMPDIR:-/tmp}/contend_report_browser.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$contend" report --json "$results" -o "$work/report.html" || fail "contend report exited with $?"
[ -s "$work/report.html" ] || fail "contend report wrote no page"

# A fresh profile and home, no network services, a hard limit: `timeout` signals its whole
# process group, so a hung browser does not outlive the test. --no-sandbox: tests run as
# root here, where Chromium's sandbox refuses to start.
mkdir -p "$work/home"
HOME="$work/home" timeout -k 5 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$work/profile" \
  --virtual-time-budget=5000 --enable-logging=stderr --v=0 --dump-dom "file://$work/report.html" \
  >"$work/dom.html" 2>"$work/chromium.log"
status=$?
[ $status -eq 0 ] || { cat "$work/chromium.log" >&2; fail "chromium exited with $status (124: it hung)"; }

body=$(grep -o -m1 '<body[^>]*>' "$work/dom.html") || fail "no <body> in the dumped page"
attribute() { sed -n "s/.* $1=\"\([^\"]*\)\".*/\1/p" <<<"$body"; }
expected=$(attribute data-charts-expected)
rendered=$(attribute data-charts-rendered)
points=$(attribute data-points-plotted)
errors=$(attribute data-errors)
echo "page: $body"

# Console messages of the page come through Chromium's log as CONSOLE lines.
if grep -E 'CONSOLE|Uncaught' "$work/chromium.log" >&2; then
  fail "the page wrote to the console (above)"
fi
[ "$errors" = "0" ] || fail "the page counted $errors error(s)"
[ "$expected" = "$suites" ] || fail "the page has data for $expected charts, the results hold $suites suites"
[ "$rendered" = "$suites" ] || fail "$rendered of $suites charts rendered"
[ "${points:-0}" -gt 0 ] || fail "no point plotted"
echo "PASS: $rendered charts rendered, $points points plotted, no console error"
