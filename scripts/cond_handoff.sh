#!/usr/bin/env bash
# Condition-variable handoffs in a plain pthread program (bench/pthread_cond_pingpong.cpp)
# under `contend run`'s locks against glibc's, interleaved: for each repetition and thread
# count, glibc's run and then each other lock's (alternating which goes first, so that a
# drift of the machine reaches both alike). Prints one line per run (threads, lock, ms, or
# "failed"), then per thread count and lock the median time and the median and range of the
# repetitions' ratios to glibc's run of the same repetition (below 1: faster than glibc).
#
#   scripts/cond_handoff.sh [REPETITIONS] [TURNS] [LIMIT_S]   (defaults 11, 100000, 30)
#
# CONTEND (the contend binary; default build/release/lab/contend), PROGRAM (the command run
# with THREADS TURNS; default build/release/bench/pthread_cond_pingpong; also
# "python3 bench/python_handoff.py"), THREADS ("2 4") and LOCKS ("contend_mutex") override
# what runs; PIN=one or PIN=spread reaches the default program, which then places its threads
# on one CPU or across them (bench/pthread_cond_pingpong.cpp says why). Exit 2 for bad arguments or a missing binary, 1 if a thread count and
# lock had no pair of runs that both finished.
set -u
reps=${1:-11} turns=${2:-100000} limit=${3:-30}
for n in "$reps" "$turns" "$limit"; do
  [[ "$n" =~ ^[1-9][0-9]{0,8}$ ]] || { echo "usage: $0 [REPETITIONS] [TURNS] [LIMIT_S] (whole numbers >= 1)" >&2; exit 2; }
done
contend=${CONTEND:-build/release/lab/contend}
program=${PROGRAM:-build/release/bench/pthread_cond_pingpong}
threads=${THREADS:-2 4}
locks=${LOCKS:-contend_mutex}
[ -x "$contend" ] || { echo "no contend at $contend (set CONTEND)" >&2; exit 2; }
read -ra prog <<<"$program"  # a command: "python3 bench/python_handoff.py" too
command -v "${prog[0]:-}" >/dev/null || { echo "no program $program (set PROGRAM; the default is built with the release preset)" >&2; exit 2; }
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# One run: prints its milliseconds, or nothing if it failed or ran past the limit.
run_one() {
  timeout "$limit" "$contend" run --lock "$1" -- "${prog[@]}" "$2" "$turns" 2>/dev/null |
    sed -n 's/.* ms=\([0-9.]*\) .*/\1/p'
}

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; $turns turns per run, $reps repetitions"
for r in $(seq "$reps"); do
  for n in $threads; do
    for lock in $locks; do
      if [ $((r % 2)) -eq 1 ]; then
        g=$(run_one glibc "$n"); o=$(run_one "$lock" "$n")
      else
        o=$(run_one "$lock" "$n"); g=$(run_one glibc "$n")
      fi
      echo "$n glibc ${g:-failed}"
      echo "$n $lock ${o:-failed}"
      [ -n "$g" ] && [ -n "$o" ] && echo "$n $lock $g $o" >>"$results"
    done
  done
done

status=0
echo "# threads lock: median ms (glibc's), ratio to glibc: median (range) over pairs"
for n in $threads; do
  for lock in $locks; do
    summary=$(awk -v n="$n" -v l="$lock" '
      function median(a, k,   i, j, t) {
        for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
      }
      $1 == n && $2 == l { k++; g[k] = $3; o[k] = $4; q[k] = $4 / $3 }
      END {
        if (k == 0) exit 1
        lo = q[1]; hi = q[1]
        for (i = 1; i <= k; i++) { if (q[i] < lo) lo = q[i]; if (q[i] > hi) hi = q[i] }
        printf "%s %s: %.1f ms (glibc %.1f), ratio %.2f (%.2f-%.2f), %d pairs\n", n, l, median(o, k), median(g, k), median(q, k), lo, hi, k
      }' "$results") || { echo "$n $lock: no pair of runs finished"; status=1; continue; }
    echo "$summary"
  done
done
exit $status
