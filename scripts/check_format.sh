#!/usr/bin/env bash
# Checks that tracked C++ files (*.cpp, *.hpp) are laid out as .clang-format says. Changes
# nothing and installs nothing: clang-format comes from the Debian package clang-format
# (scripts/setup.sh installs it); .clang-format is tuned for its version 14.
#   scripts/check_format.sh              every tracked *.cpp and *.hpp
#   scripts/check_format.sh lab tests    only those under the given paths
# Exits 0 when every file is formatted, 1 listing the files that are not (fix them with
# clang-format -i FILE...), 2 when clang-format is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null 2>&1; then
  echo "check_format: clang-format not found: install the Debian package clang-format (scripts/setup.sh does)" >&2
  exit 2
fi
version=$(clang-format --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p')
if [ "$version" != "14" ]; then
  echo "check_format: warning: clang-format ${version:-of unknown version}, but .clang-format is tuned for 14" >&2
fi

files=()
while IFS= read -r -d '' f; do
  case "$f" in *.cpp | *.hpp) if [ -f "$f" ]; then files+=("$f"); fi ;; esac
done < <(git ls-files -z -- "${@:-.}")

unformatted=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "check_format: ${#unformatted[@]} of ${#files[@]} files are not formatted (clang-format -i FILE... fixes them):"
  printf '  %s\n' "${unformatted[@]}"
  exit 1
fi
echo "check_format: all ${#files[@]} files are formatted"
