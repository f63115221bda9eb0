#!/usr/bin/env bash
# sysbench's mutex test under each lock of `contend run`, interleaved: for each repetition,
# each thread count, each lock in turn (so that a drift of the machine reaches every lock
# alike). Prints one line per run: threads, lock, sysbench's total time in seconds (or
# "timeout" past the limit), and the locks per second that makes.
#
#   scripts/sysbench_locks.sh [REPETITIONS] [TOTAL_LOCKS] [LIMIT_S]   (defaults 5, 4000000, 15)
#
# CONTEND (the contend binary; default build/release/lab/contend), THREADS ("2 8 64") and
# LOCKS ("glibc contend_mutex ttas_lock ticket_lock"; any of `contend run --help`'s locks) override
# what runs.
set -u
reps=${1:-5} total=${2:-4000000} limit=${3:-15}
contend=${CONTEND:-build/release/lab/contend}
threads=${THREADS:-2 8 64}
locks=${LOCKS:-glibc contend_mutex ttas_lock ticket_lock}
command -v sysbench >/dev/null || { echo "sysbench is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
[ -x "$contend" ] || { echo "no contend at $contend (set CONTEND)" >&2; exit 2; }
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; sysbench mutex, 1 mutex, $total locks in all"
for r in $(seq "$reps"); do
  for n in $threads; do
    for lock in $locks; do
      out=$(timeout "$limit" "$contend" run --lock "$lock" -- sysbench mutex --threads="$n" --mutex-num=1 \
            --mutex-locks=$((total / n)) --mutex-loops=0 run 2>/dev/null)
      t=$(printf '%s\n' "$out" | awk '/total time:/ {sub("s", "", $3); print $3}')
      if [ -z "$t" ]; then echo "$n $lock timeout"; continue; fi
      echo "$n $lock $t $(awk -v t="$t" -v l="$total" 'BEGIN { printf "%.0f", l / t }')"
    done
  done
done
