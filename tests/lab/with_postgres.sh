#!/usr/bin/env bash
# Runs one command beside a throwaway PostgreSQL server. Usage:
#   with_postgres.sh COMMAND [ARG...]
# The server lives in a fresh temporary folder: a cluster made by initdb, listening on a Unix
# socket in that folder only (no TCP port, so two of these never collide and nothing outside
# the machine can reach it). COMMAND runs with CONTEND_TEST_POSTGRES set to a libpq URI of the
# server's maintenance database; its exit status is this script's. The server is stopped and
# the folder removed afterwards, whether COMMAND passed, failed or was interrupted.
#
# The server binaries are Debian's (the postgresql package, scripts/setup.sh): the newest
# /usr/lib/postgresql/<version>/bin, or CONTEND_POSTGRES_BIN. Without them this fails: it is
# never skipped. initdb and postgres refuse to run as root, so as root (tests run as root
# here and in CI) the server runs as the postgres system user that Debian's package creates.
set -uo pipefail

fail() {
  echo "with_postgres: $*" >&2
  exit 1
}

[ $# -ge 1 ] || fail "usage: with_postgres.sh COMMAND [ARG...]"

# Debian installs each major version side by side; the newest one is the one to test.
# (/usr/local/bin may hold a pg_ctl too; PATH is not searched, so what runs is known.)
bin=${CONTEND_POSTGRES_BIN:-}
if [ -z "$bin" ]; then
  newest=$(ls -1 /usr/lib/postgresql 2>/dev/null | grep -E '^[0-9]+$' | sort -n | tail -n 1)
  [ -n "$newest" ] && bin=/usr/lib/postgresql/$newest/bin
fi
for tool in initdb pg_ctl postgres; do
  [ -x "$bin/$tool" ] || fail "no PostgreSQL server ($tool not found in '${bin:-/usr/lib/postgresql/<version>/bin}'): run scripts/setup.sh (it installs Debian's postgresql)"
done

# As root, the server's commands run as `postgres`; otherwise as whoever runs this.
as_server=()
db_user=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || fail "running as root, but there is no postgres user to run the server as (Debian's postgresql package creates it)"
  as_server=(runuser -u postgres --)
  db_user=postgres
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/contend_pg.XXXXXX") || fail "cannot create a temporary folder"
data=$work/data
started=0
cleanup() {
  if [ $started -eq 1 ]; then
    # fast: ends the sessions at once; immediate if that does not finish in time.
    "${as_server[@]}" timeout 40 "$bin/pg_ctl" -D "$data" -m fast -t 30 stop >/dev/null 2>&1 ||
      "${as_server[@]}" timeout 20 "$bin/pg_ctl" -D "$data" -m immediate -t 15 stop >/dev/null 2>&1
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if [ ${#as_server[@]} -gt 0 ]; then
  chown postgres: "$work" || fail "cannot hand $work to the postgres user"
fi
chmod 700 "$work"

# A UTF-8 cluster with the C locale: what the history stores is UTF-8, and no locale of the
# machine decides how the server sorts or fails.
"${as_server[@]}" timeout 120 "$bin/initdb" -D "$data" -U "$db_user" --auth=trust --encoding=UTF8 --locale=C \
  --no-sync >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; fail "initdb failed"; }

# listen_addresses='': no TCP at all, only the socket in $work. fsync off: the cluster is
# thrown away, durability buys nothing and costs time.
started=1
"${as_server[@]}" "$bin/pg_ctl" -D "$data" -l "$work/server.log" -w -t 60 \
  -o "-c listen_addresses='' -c unix_socket_directories='$work' -c fsync=off -c max_connections=50" start \
  >/dev/null 2>&1 || { cat "$work/server.log" >&2; fail "the server did not start within 60 s"; }

export CONTEND_TEST_POSTGRES="postgresql:///postgres?host=$work&user=$db_user"
echo "with_postgres: PostgreSQL $("$bin/postgres" --version | sed -n 's/^postgres (PostgreSQL) \([^ ]*\).*/\1/p') on $work, running: $*" >&2

# The command runs under its own time limit, shorter than whatever limit is around this
# script (ctest's TIMEOUT kills without warning), so that the server is always stopped here.
# In the background so that a signal reaches the trap at once instead of after the command:
# the trap passes it on as TERM.
limit=${CONTEND_PG_TIME_LIMIT:-600}
timeout -k 10 "$limit" "$@" &
child=$!
forward() {
  kill -TERM "$child" 2>/dev/null
  wait "$child"
  exit "$1"
}
trap 'forward 130' INT
trap 'forward 143' TERM
trap 'forward 129' HUP
wait "$child"
status=$?
[ $status -eq 124 ] && echo "with_postgres: the command ran past $limit s (CONTEND_PG_TIME_LIMIT) and was stopped" >&2
exit $status
