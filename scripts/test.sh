#!/usr/bin/env bash
# The test command: installs what is missing, then builds and runs the whole suite
# optimized, under AddressSanitizer (+UBSan) and under ThreadSanitizer on the futex wait
# backend; optimized and under TSan, the programs of the primitives whose waits go straight
# to the backend run again on the portable one (ctest's portable/ tests; tests/CMakeLists.txt
# says why only those). Long checks run once, in the optimized build: the lab's tests, which
# do not depend on the backend, among them. Then it installs the package (library and
# the `contend` tool) and builds the example consumer three ways: find_package, pkg-config
# and add_subdirectory. Then the model-checking build runs the models of tests/model/ under
# the scheduler of src/model/, with a fixed budget of schedules each (scripts/model_check.sh
# runs a longer sweep). `scripts/test.sh tsan-lab` runs the lab's tests under ThreadSanitizer,
# a long check left out of the default list for the test command's time (docs/lab.md says what
# it costs and found). Before any build it checks that every C++ file is laid out as
# .clang-format says. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Layout first: it takes seconds, and a misformatted file fails the run before any build.
scripts/check_format.sh
scripts/check_lab_floors.sh  # no include from a floor of the lab to one above it
jobs=$(nproc)
presets=(release asan tsan model)  # model: the model checker's build and its models (tests/model/)
if [ $# -gt 0 ]; then presets=("$@"); fi
for preset in "${presets[@]}"; do
  echo "=== $preset: configure, build, test"
  start=$(date +%s)
  # A build folder that another generator made (the presets used Unix Makefiles before Ninja)
  # cannot be configured again with this one: it is thrown away and built afresh.
  cache="build/$preset/CMakeCache.txt"
  if [ -f "$cache" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
    echo "=== $preset: build/$preset was made by another generator; removing it"
    rm -rf "build/$preset"
  fi
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  # Two per CPU at a time (most of them wait: on a child process, a database server, a
  # browser, a timeout), except the tests that stress the machine's cores or time what they
  # run (the library's, the server's, the lab's that measure: RUN_SERIAL in
  # tests/CMakeLists.txt), which run alone.
  ctest --preset "$preset" -j "$((2 * jobs))"
  echo "=== $preset: passed in $(( $(date +%s) - start ))s"
done
if [[ " ${presets[*]} " == *" release "* ]]; then
  # One program, examples/consumer/main.cpp, built each way a user can take contend.
  rm -rf build/install build/consumer build/consumer-pkg-config build/consumer-subdirectory
  echo "=== install"
  cmake --install build/release --prefix build/install >/dev/null
  build/install/bin/contend bench --list >/dev/null  # the tool is installed beside the library
  build/install/bin/contend_json_server --help >/dev/null  # and the server
  echo "=== consumer (a): find_package(contend) from the installed prefix"
  cmake -S examples/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
  cmake --build build/consumer -j "$jobs"
  build/consumer/consumer
  echo "=== consumer (b): pkg-config (contend.pc) from the installed prefix, one compiler command"
  mkdir -p build/consumer-pkg-config
  examples/consumer/build_with_pkg_config.sh "$PWD/build/install" build/consumer-pkg-config/consumer
  build/consumer-pkg-config/consumer
  echo "=== consumer (c): add_subdirectory on the source tree, which builds the library only"
  cmake -S examples/consumer_subdirectory -B build/consumer-subdirectory -DCMAKE_BUILD_TYPE=Release >/dev/null
  for part in tests bench lab; do
    if [ -e "build/consumer-subdirectory/contend-build/$part" ]; then
      echo "consumer (c): contend's $part is configured although contend is a subproject" >&2
      exit 1
    fi
  done
  cmake --build build/consumer-subdirectory -j "$jobs"
  build/consumer-subdirectory/consumer
fi
if [[ " ${presets[*]} " == *" release "* ]]; then
  scripts/fuzz.sh  # every input parser, a fixed number of inputs each
fi
echo "all test configurations passed: ${presets[*]}"
