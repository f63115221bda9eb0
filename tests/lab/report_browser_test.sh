#!/usr/bin/env bash
# The page of `contend report` in a real browser. Usage:
#   report_browser_test.sh <contend binary> <results JSON> <number of suites in it> [<lock charts>]
# (<lock charts>: the wait histograms of profiled locks the results hold, default 0; each must
# be drawn in every view.)
# Writes the page of the JSON file and opens it three times in Debian's headless Chromium,
# each time reading back what the page's own script recorded on <body> (lab/pages/report.hpp):
#   1. plain: every main and side chart constructed and painted, points plotted, ratios to
#      the default baseline when there is one;
#   2. with a fragment naming another baseline and all but the last contender of the first
#      section (plus a name the page does not have): both applied, ratios plotted;
#   3. with a fragment asking for absolute ns/op and showing only markup and a malformed
#      escape: absolute applied, no ratio, every contender shown, nothing parsed as markup.
# Each time: no error counted, and Chromium's console log empty, since the page writes
# nothing to the console unless something went wrong. The first section of the results
# must have three contenders or more. Without Chromium this fails: it is never skipped.
set -uo pipefail

contend=$1
results=$2
suites=$3
lock_charts=${4:-0}
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
mkdir -p "$work/home"

# load NAME FRAGMENT: opens the page with the fragment (may be empty), checks what every view
# must hold, and leaves <body>'s attributes in $body.
# A fresh profile and home, no network services, a hard limit: `timeout` signals its whole
# process group, so a hung browser does not outlive the test. --no-sandbox: tests run as
# root here, where Chromium's sandbox refuses to start.
load() {
  local name=$1 fragment=$2 status
  rm -rf "$work/profile"
  HOME="$work/home" timeout -k 5 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$work/profile" \
    --virtual-time-budget=5000 --enable-logging=stderr --v=0 --dump-dom "file://$work/report.html$fragment" \
    >"$work/$name.html" 2>"$work/$name.log"
  status=$?
  [ $status -eq 0 ] || { cat "$work/$name.log" >&2; fail "$name: chromium exited with $status (124: it hung)"; }
  body=$(grep -o -m1 '<body[^>]*>' "$work/$name.html") || fail "$name: no <body> in the dumped page"
  echo "$name: $body"
  # Console messages of the page come through Chromium's log as CONSOLE lines.
  if grep -E 'CONSOLE|Uncaught' "$work/$name.log" >&2; then
    fail "$name: the page wrote to the console (above)"
  fi
  local expected rendered side_expected side_rendered errors
  expected=$(attribute data-charts-expected)
  rendered=$(attribute data-charts-rendered)
  side_expected=$(attribute data-side-charts-expected)
  side_rendered=$(attribute data-side-charts-rendered)
  errors=$(attribute data-errors)
  [ "$errors" = "0" ] || fail "$name: the page counted $errors error(s)"
  [ "$expected" = "$suites" ] || fail "$name: the page has data for $expected charts, the results hold $suites suites"
  [ "$rendered" = "$suites" ] || fail "$name: $rendered of $suites charts rendered"
  [ "${side_expected:-0}" -ge "$suites" ] || fail "$name: data for $side_expected side charts, fewer than the suites"
  [ "$side_rendered" = "$side_expected" ] || fail "$name: $side_rendered of $side_expected side charts rendered"
  [ "$(attribute data-points-plotted)" -gt 0 ] || fail "$name: no point plotted"
  [ "$(attribute data-lock-charts-expected)" = "$lock_charts" ] ||
    fail "$name: the page has data for $(attribute data-lock-charts-expected) lock charts, not $lock_charts"
  [ "$(attribute data-lock-charts-rendered)" = "$lock_charts" ] ||
    fail "$name: $(attribute data-lock-charts-rendered) of $lock_charts lock charts rendered"
}
attribute() { sed -n "s/.* $1=\"\([^\"]*\)\".*/\1/p" <<<"$body"; }

load plain ""
default_baseline=$(attribute data-baseline)
all=$(attribute data-shown)
if [ -n "$default_baseline" ]; then
  [ "$(attribute data-ratio-points-plotted)" -gt 0 ] || fail "plain: no ratio to $default_baseline plotted"
fi
IFS=, read -r -a names <<<"$all"
[ ${#names[@]} -ge 3 ] || fail "the first suite has ${#names[@]} contenders ($all); this test needs three or more"

# Another baseline than the default, and all contenders of the section but the last.
for n in "${names[@]}"; do
  if [ "$n" != "$default_baseline" ]; then baseline=$n; break; fi
done
shown=$(IFS=,; echo "${names[*]:0:${#names[@]}-1}")
load fragment "#baseline=$baseline&show=$shown,no_such_contender"
[ "$(attribute data-baseline)" = "$baseline" ] || fail "fragment: baseline $(attribute data-baseline), not $baseline"
[ "$(attribute data-shown)" = "$shown" ] || fail "fragment: shown $(attribute data-shown), not $shown"
[ "$(attribute data-ratio-points-plotted)" -gt 0 ] || fail "fragment: no ratio to $baseline plotted"

# Absolute ns/op; a show= list of nothing the page has, so every contender shows.
load hostile "#baseline=&show=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E,%E0%A4%A"
[ "$(attribute data-baseline)" = "" ] || fail "hostile: baseline $(attribute data-baseline), not absolute"
[ "$(attribute data-ratio-points-plotted)" = "0" ] || fail "hostile: ratios plotted in absolute ns/op"
[ "$(attribute data-shown)" = "$all" ] || fail "hostile: shown $(attribute data-shown), not every contender"
if grep -qi '<img' "$work/hostile.html"; then fail "hostile: the fragment became an element"; fi

echo "PASS: $suites charts and their side charts rendered plain and with two fragments, no console error"
