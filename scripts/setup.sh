#!/usr/bin/env bash
# Installs what contend needs on a fresh Debian 12 machine (run as root). Idempotent:
# packages already present are not fetched again.
#   - Debian packages: the toolchain (ninja-build: the presets' generator), the libraries the
#     lab links, and chromium, which the test of `contend report`'s page runs headless (nodejs
#     and npm too, when there is no npm);
#     postgresql, whose server tests/lab/with_postgres.sh starts for the PostgreSQL history's test;
#     wrk, the HTTP load of server's smoke test; sysbench, a real program `contend run`'s test
#     runs under every lock; valgrind, whose helgrind the interposer's test runs a program
#     under, and whose <valgrind/helgrind.h> the build takes its client requests from
#     (docs/interpose.md#helgrind); pigz, xz-utils, rocksdb-tools (db_bench), python3, memcached
#     and libmemcached-tools (its load client, memaslap), the programs suite's programs beside
#     sysbench and coreutils' sort (docs/lab.md). Debian starts memcached as a service where
#     the machine has an init that runs services; the suite runs its own on another port.
#   - Chart.js, the charting library `contend report` inlines into its page, from npm at the
#     exact version pinned in lab/pages/package-lock.json, into lab/pages/node_modules.
#     The build embeds it (a build configured without it configures again by itself).
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(build-essential cmake ninja-build g++ pkg-config clang-format libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev postgresql libpq-dev libabsl-dev libtbb-dev libck-dev libboost-dev libreaderwriterqueue-dev chromium clang wrk sysbench valgrind
  pigz xz-utils rocksdb-tools python3 memcached libmemcached-tools)
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# npm ci leaves node_modules/.package-lock.json behind: older than the lock means the pinned
# versions changed since (or nothing was installed yet).
pages=lab/pages
if [ ! -f "$pages/node_modules/chart.js/dist/chart.umd.js" ] || [ "$pages/package-lock.json" -nt "$pages/node_modules/.package-lock.json" ]; then
  echo "setup: installing Chart.js for contend report (npm ci in $pages)"
  npm ci --prefix "$pages" --no-audit --no-fund --loglevel=error >/dev/null
fi
