#!/usr/bin/env bash
# The pages of `contend history --html` and `contend compare --html` in a real browser. Usage:
#   compare_page_browser_test.sh <contend binary> <test_lab_compare_page_fixture binary>
# The fixture writes a 12-run history with a step in two benchmarks (one of them named
# `</script><img src=x onerror=alert(1)> ...`) and two Google Benchmark files holding that
# name; contend writes three pages from them: the history's, a comparison of the files, and a
# comparison of two labels of the history. Each is opened in Debian's headless Chromium, and
# what the page's own script recorded on <body> (lab/pages/html_page.hpp) is read back:
# every chart rendered, every change point marked (at least one where the history steps), the
# baseline and test runs marked, no error counted; Chromium's console log must be empty, and
# the dumped DOM must hold no element made from the hostile name.
# Without Chromium this fails: it is never skipped.
set -uo pipefail

contend=$1
fixture=$2
chromium=${CONTEND_CHROMIUM:-/usr/bin/chromium}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[ -x "$chromium" ] || fail "no Chromium at $chromium: run scripts/setup.sh (it installs Debian's chromium)"

work=$(mktemp -d "${TMPDIR:-/tmp}/contend_compare_page_browser.XXXXXX")
trap 'rm -rf "$work"' EXIT

# run <what> <command...>: its output shown only when it fails.
run() {
  local what=$1
  shift
  "$@" >"$work/cli.log" 2>&1 || { cat "$work/cli.log" >&2; fail "$what exited with $?"; }
}
run "the fixture" "$fixture" "$work/in"
run "contend history --html" "$contend" history --db "$work/in/history.db" --html "$work/history.html"
# Both comparisons find a regression (exit 1 without --no-fail-on-regression).
run "contend compare --html (files)" "$contend" compare "$work/in/base.json" "$work/in/test.json" \
  --no-fail-on-regression --html "$work/compare-files.html"
run "contend compare --db --html" "$contend" compare --db "$work/in/history.db" r1 r12 --no-fail-on-regression \
  --html "$work/compare-history.html"

# check <page> <charts> <least change points marked> <runs marked>
check() {
  local page=$1 charts=$2 least_changes=$3 runs=$4
  [ -s "$work/$page" ] || fail "$page: not written"
  # A fresh profile and home, no network services, a hard limit: `timeout` signals its whole
  # process group, so a hung browser does not outlive the test. --no-sandbox: tests run as
  # root here, where Chromium's sandbox refuses to start.
  rm -rf "$work/home" "$work/profile"
  mkdir -p "$work/home"
  HOME="$work/home" timeout -k 5 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$work/profile" \
    --virtual-time-budget=5000 --enable-logging=stderr --v=0 --dump-dom "file://$work/$page" \
    >"$work/dom.html" 2>"$work/chromium.log"
  local status=$?
  [ $status -eq 0 ] || { cat "$work/chromium.log" >&2; fail "$page: chromium exited with $status (124: it hung)"; }

  local body
  body=$(grep -o -m1 '<body[^>]*>' "$work/dom.html") || fail "$page: no <body> in the dumped page"
  attribute() { sed -n "s/.* $1=\"\([^\"]*\)\".*/\1/p" <<<"$body"; }
  echo "$page: $body"
  # Console messages of the page come through Chromium's log as CONSOLE lines.
  if grep -E 'CONSOLE|Uncaught' "$work/chromium.log" >&2; then
    fail "$page: the page wrote to the console (above)"
  fi
  # The page makes no <img>, <b> or <i> of its own (nor does Chart.js), nor a script that
  # starts with alert: any such element came from a name. The data's script holds '<' only
  # as \u003c, so it cannot match.
  if grep -o -E '<(img|b|i)[ >][^>]*>?|<script>alert' "$work/dom.html" >&2; then
    fail "$page: the DOM holds an element made from input (above)"
  fi
  [ "$(attribute data-errors)" = "0" ] || fail "$page: the page counted $(attribute data-errors) error(s)"
  [ "$(attribute data-charts-expected)" = "$charts" ] ||
    fail "$page: data for $(attribute data-charts-expected) charts, $charts expected"
  [ "$(attribute data-charts-rendered)" = "$charts" ] || fail "$page: $(attribute data-charts-rendered) of $charts charts rendered"
  local expected marked
  expected=$(attribute data-change-points-expected)
  marked=$(attribute data-change-points-marked)
  [ "$marked" = "$expected" ] || fail "$page: $marked of $expected change points marked"
  [ "${marked:-0}" -ge "$least_changes" ] || fail "$page: $marked change points marked, at least $least_changes expected"
  [ "$(attribute data-runs-marked)" = "$runs" ] || fail "$page: $(attribute data-runs-marked) runs marked, $runs expected"
}

# The history: three benchmarks, two steps. The files: two strip charts (a regression, an
# improvement), no history. The labels r1 and r12: the two regressions' history charts,
# each with its step and both runs marked.
check history.html 3 1 0
check compare-files.html 2 0 0
check compare-history.html 2 1 4
echo "PASS: every chart rendered, every change point marked, no error, no element from input"
