#!/usr/bin/env bash
# A real program that uses pthread_rwlock, under glibc's locks and under `contend run --lock
# contend_mutex` (its default rwlocks on contend::shared_mutex), interleaved: RocksDB's
# db_bench (Debian's rocksdb-tools) with its stacked BlobDB (--use_blob_db), whose
# BlobDBImpl guards its blob files with a port::RWMutex, a pthread_rwlock_t of the default
# kind, read on every read and seek (some 400,000 reads and 80,000 writes of it in a run of
# the defaults below, by `contend run --profile`). The DB lives in a fresh folder under
# $TMPDIR; no network. Each run is bounded by LIMIT_S.
#
# For each repetition glibc's run and contend's (alternating which goes first, so that a
# drift of the machine reaches both alike), one line per run and benchmark (ops/s), then per
# lock and benchmark the median, and whether the runs' outputs agree: every line of db_bench's
# output with its timings and rates taken out (the keys found, the operations done, the
# settings) must be the same in every run.
#
#   scripts/rw_program.sh [REPETITIONS] [NUM] [LIMIT_S]   (defaults 3, 20000, 120)
#
# CONTEND (the contend binary; default build/release/lab/contend), DB_BENCH (default db_bench),
# THREADS (4), BENCHMARKS (fillrandom,readseq,seekrandom; db_bench's Get through the stacked
# BlobDB is not implemented, so readrandom aborts there, under glibc too) and LOCK
# (contend_mutex) override what runs. Exit 2 for bad arguments or a missing binary, 1 if a run
# failed or the outputs differ.
set -u
contend=${CONTEND:-build/release/lab/contend}
db_bench=${DB_BENCH:-db_bench}
threads=${THREADS:-4}
benchmarks=${BENCHMARKS:-fillrandom,readseq,seekrandom}
lock=${LOCK:-contend_mutex}
reps=${1:-3} num=${2:-20000} limit=${3:-120}
whole() { [[ "$1" =~ ^[1-9][0-9]{0,8}$ ]]; }
if ! whole "$reps" || ! whole "$num" || ! whole "$limit" || ! whole "$threads"; then
  echo "usage: $0 [REPETITIONS] [NUM] [LIMIT_S] (whole numbers >= 1; THREADS too)" >&2
  exit 2
fi
[ -x "$contend" ] || { echo "no contend at $contend (set CONTEND)" >&2; exit 2; }
command -v "$db_bench" >/dev/null || { echo "no $db_bench (apt-get install rocksdb-tools, or set DB_BENCH)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run under lock $1 into $work/$1.$2.out; prints nothing, fails as the program does.
run_one() {
  rm -rf "$work/db"
  timeout "$limit" "$contend" run --lock "$1" -- "$db_bench" --benchmarks="$benchmarks" --num="$num" \
    --threads="$threads" --seed=42 --db="$work/db" --compression_type=none --use_blob_db=true \
    >"$work/$1.$2.out" 2>&1
}

# db_bench's output as lines without the figures that differ from run to run: its progress
# lines, each benchmark's timings and rates, the date, the DB's path; what is left is the
# settings and each benchmark's operations and keys found.
outcome() {
  tr '\r' '\n' <"$1" | grep -v -e '\.\.\. finished' -e '^Date:' -e '^DB path:' -e '^contend run' |
    sed -E '/ops\/sec/s/^([a-z]+) *:.* ([0-9]+ operations)[^(]*(\([0-9]+ of [0-9]+ found\))?.*$/\1 \2 \3/; s/ +$//'
}

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; db_bench $benchmarks, --num=$num --threads=$threads, blob DB; $reps repetitions"
status=0
for r in $(seq "$reps"); do
  if [ $((r % 2)) -eq 1 ]; then order="glibc $lock"; else order="$lock glibc"; fi
  for l in $order; do
    if ! run_one "$l" "$r"; then
      echo "$l run $r failed (exit $?; its output: $work/$l.$r.out, removed at the end)"
      tail -3 "$work/$l.$r.out"
      status=1
      continue
    fi
    tr '\r' '\n' <"$work/$l.$r.out" | sed -n -E "s/^([a-z]+) *:.* ([0-9]+) ops\/sec.*/$l $r \1 \2/p" | tee -a "$work/rates"
  done
done

echo "# lock benchmark: median ops/s over the runs"
for l in glibc "$lock"; do
  for b in ${benchmarks//,/ }; do
    awk -v l="$l" -v b="$b" '$1 == l && $3 == b { v[++k] = $4 }
      END {
        for (i = 2; i <= k; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
        if (k) printf "%s %s %d\n", l, b, (k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2)
      }' "$work/rates" 2>/dev/null
  done
done

first=""
agree=yes
for f in "$work"/*.out; do
  [ -e "$f" ] || continue
  if [ -z "$first" ]; then first=$f; continue; fi
  if ! diff -q <(outcome "$first") <(outcome "$f") >/dev/null; then
    agree=no
    echo "# $(basename "$f") differs from $(basename "$first"):"
    diff <(outcome "$first") <(outcome "$f") | head -10
  fi
done
echo "outputs agree: $agree"
[ "$agree" = yes ] || status=1
exit $status
