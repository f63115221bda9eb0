#!/usr/bin/env bash
# What `contend run --profile` costs a program, against the same lock unprofiled. Each pair of
# runs measures both, in alternating order, so that a drift of the machine reaches both alike;
# a shared VM's noise comes in bursts (docs/interpose.md, "Cost"), so take many pairs. Per
# case it prints the two medians, their difference, and the median and range of the pairs'
# ratios (profiled / unprofiled). The cases:
#
#   pairs      bench's pthread_pair_loop: one thread, nanoseconds a lock and unlock pair (the
#              best of 60 batches of a million, on a mutex contended once so it has a record)
#   mutex/N    `sysbench mutex` as it comes (4,096 mutexes, 50,000 locks a thread, a loop of
#              10,000 iterations between them), N threads: its total time, ms
#   worst/N    `sysbench mutex` on 1 mutex with no work between locks, 16 million locks in
#              all, N threads: its total time, ms. Here a lock and unlock is all a thread does.
#
#   scripts/profile_overhead.sh [PAIRS]   (default 15)
#
# The profiled runs take the call stacks of contended waits at the library's default period
# (one contended wait in 4 per thread); STACK_PERIOD=N sets CONTEND_INTERPOSE_STACK_SAMPLE_PERIOD
# for them (0: no stacks, 1: every contended wait's), so that a pair of runs of this script
# gives what the stacks add.
#
# CONTEND and PAIR_LOOP (the binaries; defaults in build/release), LOCK (contend_mutex),
# THREADS ("2 8") and CASES ("pairs mutex worst") override what runs. Every run is bounded by
# LIMIT_S seconds (60); a run past it is reported and left out of its case, and a case left
# with no pair makes the script exit 1.
set -u
pairs=${1:-15}
contend=${CONTEND:-build/release/lab/contend}
pair_loop=${PAIR_LOOP:-build/release/bench/pthread_pair_loop}
lock=${LOCK:-contend_mutex}
threads=${THREADS:-2 8}
cases=${CASES:-pairs mutex worst}
limit=${LIMIT_S:-60}
case "$pairs" in '' | *[!0-9]* | 0) echo "PAIRS must be a whole number >= 1, not '$pairs'" >&2; exit 2 ;; esac
case "$limit" in '' | *[!0-9]* | 0) echo "LIMIT_S must be a whole number of seconds >= 1, not '$limit'" >&2; exit 2 ;; esac
if [ -n "${STACK_PERIOD:-}" ]; then
  case "$STACK_PERIOD" in *[!0-9]*) echo "STACK_PERIOD must be a whole number >= 0, not '$STACK_PERIOD'" >&2; exit 2 ;; esac
  export CONTEND_INTERPOSE_STACK_SAMPLE_PERIOD=$STACK_PERIOD  # read by the profiled runs only
fi
command -v sysbench >/dev/null || { echo "sysbench is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
[ -x "$contend" ] || { echo "no contend at $contend (set CONTEND)" >&2; exit 2; }
if [[ " $cases " == *" pairs "* ]] && [ ! -x "$pair_loop" ]; then
  echo "no pthread_pair_loop at $pair_loop (set PAIR_LOOP)" >&2; exit 2
fi

# One run of a case: prints its figure, or nothing when it failed or ran past the limit.
# $1 = case name (pairs, mutex/N or worst/N), $2 = "" or --profile.
measure() {
  local name=$1 flag=$2 n=${1#*/} out
  case "$name" in
    pairs) out=$(timeout "$limit" "$contend" run --lock "$lock" $flag -- "$pair_loop" 60 2>/dev/null)
           printf '%s\n' "$out" | awk '/^best / { print $2 }' ;;
    mutex/*) out=$(timeout "$limit" "$contend" run --lock "$lock" $flag -- sysbench mutex --threads="$n" run 2>/dev/null)
             printf '%s\n' "$out" | awk '/total time:/ { sub("s", "", $3); print $3 * 1000 }' ;;
    worst/*) out=$(timeout "$limit" "$contend" run --lock "$lock" $flag -- sysbench mutex --threads="$n" --mutex-num=1 \
                   --mutex-locks=$((16000000 / n)) --mutex-loops=0 run 2>/dev/null)
             printf '%s\n' "$out" | awk '/total time:/ { sub("s", "", $3); print $3 * 1000 }' ;;
  esac
}

# The median of the numbers on standard input, one a line.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

names=()
for c in $cases; do
  case "$c" in
    pairs) names+=(pairs) ;;
    mutex | worst) for n in $threads; do names+=("$c/$n"); done ;;
    *) echo "unknown case '$c' (pairs, mutex, worst)" >&2; exit 2 ;;
  esac
done

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; contend run --lock $lock, with and without --profile (stacks: one contended wait in ${STACK_PERIOD:-4}), $pairs interleaved pairs"
for p in $(seq "$pairs"); do
  for name in "${names[@]}"; do
    f=${name//\//_}
    if (( p % 2 )); then a=$(measure "$name" ""); b=$(measure "$name" --profile)
    else b=$(measure "$name" --profile); a=$(measure "$name" ""); fi
    if [ -z "$a" ] || [ -z "$b" ]; then echo "$name: pair $p failed or ran past ${limit} s; left out" >&2; continue; fi
    echo "$a" >>"$dir/$f.plain"
    echo "$b" >>"$dir/$f.profiled"
    awk -v a="$a" -v b="$b" 'BEGIN { print b / a }' >>"$dir/$f.ratio"
  done
done

status=0  # 1 when a case has no completed pair
printf '%-10s %12s %12s %9s %22s %6s\n' case unprofiled profiled diff "ratio: median (range)" pairs
for name in "${names[@]}"; do
  f=${name//\//_}
  [ -s "$dir/$f.ratio" ] || { printf '%-10s no pair completed\n' "$name"; status=1; continue; }
  a=$(median <"$dir/$f.plain") b=$(median <"$dir/$f.profiled") r=$(median <"$dir/$f.ratio")
  lo=$(sort -g "$dir/$f.ratio" | head -1) hi=$(sort -g "$dir/$f.ratio" | tail -1) k=$(wc -l <"$dir/$f.ratio")
  awk -v n="$name" -v a="$a" -v b="$b" -v r="$r" -v lo="$lo" -v hi="$hi" -v k="$k" \
    'BEGIN { printf "%-10s %12.2f %12.2f %+8.1f%% %8.3f (%.3f-%.3f) %6d\n", n, a, b, (b / a - 1) * 100, r, lo, hi, k }'
done
echo "(pairs: ns a lock and unlock pair, best batch; mutex/N and worst/N: sysbench's total time, ms)"
exit "$status"
