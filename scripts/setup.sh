#!/usr/bin/env bash
# Installs what contend needs on a fresh Debian 12 machine (run as root). Idempotent:
# packages already present are not fetched again.
set -euo pipefail
packages=(build-essential cmake g++ libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev libabsl-dev libtbb-dev libck-dev)
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
