#!/usr/bin/env bash
# Builds the consumer (main.cpp beside this script) with one compiler command, finding an
# installed contend through pkg-config instead of CMake. Copy the last lines into your build.
#   examples/consumer/build_with_pkg_config.sh PREFIX OUTPUT
# PREFIX is where contend was installed (cmake --install BUILD --prefix PREFIX); OUTPUT is the
# program to write. CXX picks the compiler (default c++).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 PREFIX OUTPUT" >&2
  exit 2
fi
prefix=$1
output=$2
# contend.pc lies in PREFIX/<libdir>/pkgconfig: lib on Debian and most systems, lib64 on some.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# Assigned first, so that a missing contend.pc stops the script with pkg-config's message.
cflags=$(pkg-config --cflags contend)
libs=$(pkg-config --libs contend)
# The -std is ours to choose: contend.pc leaves it out (its headers need C++20 or later).
# shellcheck disable=SC2086 # the flags are meant to split into words
"${CXX:-c++}" -std=c++20 -O2 $cflags "$(dirname "$0")/main.cpp" -o "$output" $libs
