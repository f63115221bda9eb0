#!/usr/bin/env bash
# scripts/profile_overhead.sh against stand-ins for contend, sysbench and the pair loop, whose
# figures are known: its arithmetic (medians, difference, ratios), a case whose runs fail or
# run past the limit (left out, and exit 1 when nothing is left), and bad arguments (exit 2).
# No timing of this machine is taken or asserted.
#   tests/scripts/profile_overhead_test.sh SOURCE_DIR
set -euo pipefail
source_dir=$(cd "$1" && pwd)
script="$source_dir/scripts/profile_overhead.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "profile_overhead_test: $*" >&2
  exit 1
}

# contend: runs the program after "--", telling it whether --profile was given.
cat >"$work/contend" <<'EOF'
#!/usr/bin/env bash
profiled=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do [ "$1" = --profile ] && profiled=1; shift; done
shift
PROFILED=$profiled exec "$@"
EOF
# sysbench: 200 ms unprofiled, 220 ms profiled for the mutex test as it comes; the one-mutex
# case (--mutex-num=1) behaves as FAKE_WORST says: "fail" prints nothing and exits 1, "slow"
# sleeps past the limit, anything else answers 400 and 500 ms.
cat >"$work/sysbench" <<'EOF'
#!/usr/bin/env bash
worst=0
for a in "$@"; do [ "$a" = --mutex-num=1 ] && worst=1; done
if [ "$worst" = 1 ]; then
  case "${FAKE_WORST:-}" in
    fail) exit 1 ;;
    slow) sleep 5 ;;
  esac
  t=$([ "$PROFILED" = 1 ] && echo 0.5000s || echo 0.4000s)
else
  t=$([ "$PROFILED" = 1 ] && echo 0.2200s || echo 0.2000s)
fi
echo "General statistics:"
echo "    total time:                          $t"
EOF
cat >"$work/pair_loop" <<'EOF'
#!/usr/bin/env bash
[ "$PROFILED" = 1 ] && echo "best 5.500 mean 6.000 ns a pair (60 batches of 1000000)" ||
  echo "best 5.000 mean 5.500 ns a pair (60 batches of 1000000)"
EOF
chmod +x "$work/contend" "$work/sysbench" "$work/pair_loop"
run() { env PATH="$work:$PATH" CONTEND="$work/contend" PAIR_LOOP="$work/pair_loop" THREADS=2 "$@"; }

# Known figures: every case +10 % but the worst, +25 %; three pairs each; exit 0.
status=0
out=$(run bash "$script" 3 2>&1) || status=$?
[ "$status" -eq 0 ] || fail "expected exit 0, got $status: $out"
grep -qE '^pairs +5\.00 +5\.50 +\+10\.0% +1\.100 \(1\.100-1\.100\) +3$' <<<"$out" || fail "pairs row: $out"
grep -qE '^mutex/2 +200\.00 +220\.00 +\+10\.0% +1\.100 \(1\.100-1\.100\) +3$' <<<"$out" || fail "mutex row: $out"
grep -qE '^worst/2 +400\.00 +500\.00 +\+25\.0% +1\.250 \(1\.250-1\.250\) +3$' <<<"$out" || fail "worst row: $out"

# A case whose every run fails: said per pair, the case has no pair, exit 1; the others stand.
status=0
out=$(FAKE_WORST=fail run bash "$script" 2 2>&1) || status=$?
[ "$status" -eq 1 ] || fail "expected exit 1 when a case has no pair, got $status: $out"
grep -qE '^worst/2 +no pair completed$' <<<"$out" || fail "the failed case was not said: $out"
grep -qF 'worst/2: pair 2 failed or ran past 60 s; left out' <<<"$out" || fail "the failed pair was not said: $out"
grep -qE '^mutex/2 +200\.00' <<<"$out" || fail "the other cases were lost: $out"

# A run past LIMIT_S is cut off and left out.
status=0
out=$(FAKE_WORST=slow LIMIT_S=1 CASES=worst run bash "$script" 1 2>&1) || status=$?
[ "$status" -eq 1 ] || fail "expected exit 1 for a case past the limit, got $status: $out"
grep -qF 'worst/2: pair 1 failed or ran past 1 s; left out' <<<"$out" || fail "the slow pair was not said: $out"

# Bad arguments: exit 2 with a line that says what is wrong, before anything runs.
expect_refused() {
  local why=$1 status=0 out
  shift
  out=$("$@" 2>&1) || status=$?
  [ "$status" -eq 2 ] || fail "expected exit 2 ($why), got $status: $out"
  grep -qF "$why" <<<"$out" || fail "expected '$why' in: $out"
}
expect_refused "PAIRS must be a whole number >= 1, not '0'" run bash "$script" 0
expect_refused "PAIRS must be a whole number >= 1, not '3x'" run bash "$script" 3x
expect_refused "LIMIT_S must be a whole number of seconds >= 1, not '1.5'" run env LIMIT_S=1.5 bash "$script" 1
expect_refused "unknown case 'foo'" run env CASES=foo bash "$script" 1
expect_refused "no contend at $work/none" run env CONTEND="$work/none" bash "$script" 1
expect_refused "no pthread_pair_loop at $work/none" run env PAIR_LOOP="$work/none" bash "$script" 1
echo "profile_overhead_test: passed"
