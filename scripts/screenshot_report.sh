#!/usr/bin/env bash
# The picture of the report page in the README (docs/report.png). Usage:
#   scripts/screenshot_report.sh [--json RESULTS.json] [-o OUT.png] [--size WIDTH,HEIGHT]
#                                [--fragment 'baseline=NAME&show=NAME,NAME']
# Without --json it first runs a short real `contend bench` (the counter suite, six
# contenders, 1, 2 and 4 workers, 3 repetitions of 20 ms: seconds, not minutes) into a
# temporary folder, writing nothing to .contend/ and adding nothing to the history. Then
# `contend report --json` writes the page, and Debian's headless Chromium (installed by
# scripts/setup.sh) takes a screenshot of its top WIDTH x HEIGHT pixels (default 1400,1750:
# the machine, one suite's controls and charts, and the top of its table), opened with
# --fragment as the view (lab/pages/report.hpp; default: the page's own default view).
# The default output is docs/report.png.
# Environment: CONTEND (the contend binary, default build/release/lab/contend),
# CONTEND_CHROMIUM (default /usr/bin/chromium), as tests/lab/report_browser_test.sh.
set -euo pipefail

fail() {
  echo "screenshot_report.sh: $*" >&2
  exit 1
}

results=""
out=""
size=1400,1750
fragment=""
while [ $# -gt 0 ]; do
  case $1 in
    --json) [ $# -ge 2 ] || fail "--json needs a file"; results=$(realpath -m -- "$2"); shift 2 ;;
    -o|--output) [ $# -ge 2 ] || fail "$1 needs a file"; out=$(realpath -m -- "$2"); shift 2 ;;
    --size) [[ ${2:-} =~ ^[1-9][0-9]*,[1-9][0-9]*$ ]] || fail "--size needs WIDTH,HEIGHT in pixels"; size=$2; shift 2 ;;
    --fragment) [ $# -ge 2 ] || fail "--fragment needs the view, e.g. 'baseline=std_mutex'"; fragment=${2#\#}; shift 2 ;;
    -h|--help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) fail "unknown argument '$1' (see --help)" ;;
  esac
done

# Paths given by the caller are taken from the caller's folder, the defaults from the repository.
if [ -n "${CONTEND:-}" ]; then contend=$(realpath -m -- "$CONTEND"); fi
cd "$(dirname "$0")/.."
contend=${contend:-$PWD/build/release/lab/contend}
chromium=${CONTEND_CHROMIUM:-/usr/bin/chromium}
out=${out:-$PWD/docs/report.png}

[ -x "$contend" ] || fail "no contend at $contend: run scripts/bench.sh or 'cmake --preset release && cmake --build --preset release --target contend_cli', or set CONTEND"
[ -x "$chromium" ] || fail "no Chromium at $chromium: run scripts/setup.sh (it installs Debian's chromium), or set CONTEND_CHROMIUM"
[ -z "$results" ] || [ -f "$results" ] || fail "no results file $results"

work=$(mktemp -d "${TMPDIR:-/tmp}/contend_screenshot.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Both commands run in the temporary folder, so the page names the default results file
# run.json rather than a temporary path.
cd "$work"
if [ -z "$results" ]; then
  results=run.json
  "$contend" bench --suite counter --workers 1,2,4 \
    --contenders 'fetch_add_relaxed,cas_backoff,std_mutex,contend_mutex,tbb_spin_mutex,ttas_lock' \
    --min-time 20 --reps 3 --no-history --json "$results"
fi

"$contend" report --json "$results" -o report.html >/dev/null
mkdir -p "$(dirname "$out")" home
# As in tests/lab/report_browser_test.sh: a fresh profile and home, no network services,
# --no-sandbox (Chromium's sandbox refuses to start as root), and `timeout` so a hung
# browser cannot outlive the script.
# The virtual-time budget lets the page's script and the chart's drawing finish first.
HOME="$work/home" timeout -k 5 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$work/profile" \
  --hide-scrollbars --window-size="$size" --virtual-time-budget=2000 \
  --screenshot="$work/report.png" "file://$work/report.html${fragment:+#$fragment}" >"$work/chromium.log" 2>&1 || status=$?
[ "${status:-0}" -eq 0 ] || { cat "$work/chromium.log" >&2; fail "chromium exited with $status (124: it hung)"; }
[ -s "$work/report.png" ] || { cat "$work/chromium.log" >&2; fail "chromium wrote no screenshot"; }
cp "$work/report.png" "$out"
echo "wrote $out"
