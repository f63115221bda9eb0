#!/usr/bin/env bash
# The wrk smoke test of contend_json_server: a short load on /json and on /plaintext from
# 127.0.0.1 must see no socket error and no non-2xx response, and SIGTERM must then stop
# the server with exit status 0 after it prints its totals.
#   wrk_smoke_test.sh PATH_TO_contend_json_server
# Fails (never skips) without wrk: scripts/setup.sh installs it.
set -euo pipefail
server=$1
if ! command -v wrk >/dev/null 2>&1; then
  echo "json_server_wrk: wrk not found: run scripts/setup.sh (it installs the Debian package wrk)" >&2
  exit 1
fi
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The files exist before the server starts: its redirections are made in the forked child,
# which the loop below may otherwise outrun (sed then fails on a missing file).
: >"$work/server.out"
: >"$work/server.err"
# --duration is a backstop: the server stops by itself even if this script dies.
"$server" --threads 2 --duration 60 >"$work/server.out" 2>"$work/server.err" &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$work/server.out")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "json_server_wrk: the server printed no port" >&2
  cat "$work/server.out" "$work/server.err" >&2
  exit 1
fi

for path in /json /plaintext; do
  out="$work/wrk$(echo "$path" | tr / _).txt"
  timeout 30 wrk -t2 -c16 -d2s "http://127.0.0.1:$port$path" >"$out" 2>&1 || {
    echo "json_server_wrk: wrk failed on $path" >&2
    cat "$out" >&2
    exit 1
  }
  cat "$out"
  if grep -q "Socket errors" "$out"; then
    echo "json_server_wrk: socket errors on $path" >&2
    exit 1
  fi
  if grep -q "Non-2xx or 3xx responses" "$out"; then
    echo "json_server_wrk: non-2xx responses on $path" >&2
    exit 1
  fi
  requests=$(sed -n 's/^ *\([0-9][0-9]*\) requests in .*/\1/p' "$out")
  if [ -z "$requests" ] || [ "$requests" -eq 0 ]; then
    echo "json_server_wrk: wrk reports no requests on $path" >&2
    exit 1
  fi
done

kill -TERM "$pid"
status=
for _ in $(seq 200); do
  if ! kill -0 "$pid" 2>/dev/null; then
    set +e
    wait "$pid"
    status=$?
    set -e
    break
  fi
  sleep 0.05
done
pid_was=$pid
pid=
cat "$work/server.out"
if [ -z "$status" ]; then
  pid=$pid_was  # the trap kills it
  echo "json_server_wrk: the server did not exit within 10 s of SIGTERM" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "json_server_wrk: the server exited with status $status" >&2
  cat "$work/server.err" >&2
  exit 1
fi
grep -q "^totals: " "$work/server.out" || {
  echo "json_server_wrk: no totals printed" >&2
  exit 1
}
if ! grep -Eq "^connections: accepted ([0-9]+), released \1$" "$work/server.out"; then
  echo "json_server_wrk: connection objects were not all released" >&2
  exit 1
fi
echo "json_server_wrk: passed"
