#!/usr/bin/env bash
# scripts/check_format.sh against awkward input, in a throwaway git repository: file names
# with spaces, double quotes and colons (the script reads clang-format's "FILE:LINE:COL:"
# reports), a selection that holds no C++ file, and a clang-format that fails.
#   tests/scripts/check_format_test.sh SOURCE_DIR
set -euo pipefail
source_dir=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "check_format_test: $*" >&2
  exit 1
}

repo="$work/repo"
mkdir -p "$repo/scripts" "$repo/we ird"
cp "$source_dir/scripts/check_format.sh" "$repo/scripts/"
cp "$source_dir/.clang-format" "$repo/"
printf 'int main() { return 0; }\n' >"$repo/formatted.cpp"
printf 'int   f( ) {return 0;}\n' >"$repo/we ird/a \"quoted\" name.cpp"
printf 'int   g( ) {return 0;}\n' >"$repo/we ird/c:1:2.hpp"
git -C "$repo" init -q
git -C "$repo" add -A

# Two files not formatted: exit 1, both named exactly, the formatted one not.
status=0
out=$(bash "$repo/scripts/check_format.sh" 2>&1) || status=$?
[ "$status" -eq 1 ] || fail "expected exit 1 for unformatted files, got $status: $out"
grep -qxF '  we ird/a "quoted" name.cpp' <<<"$out" || fail "the file with quotes was not named: $out"
grep -qxF '  we ird/c:1:2.hpp' <<<"$out" || fail "the file with colons was not named: $out"
if grep -qF 'formatted.cpp' <<<"$out"; then fail "a formatted file was listed: $out"; fi
grep -qF '2 of 3 files' <<<"$out" || fail "expected '2 of 3 files': $out"

# Only the formatted file selected: exit 0.
bash "$repo/scripts/check_format.sh" formatted.cpp >/dev/null || fail "a formatted file failed the check"

# A selection that holds no C++ file: exit 0, saying so (not a clang-format error).
status=0
out=$(bash "$repo/scripts/check_format.sh" no-such-folder 2>&1) || status=$?
[ "$status" -eq 0 ] || fail "expected exit 0 for an empty selection, got $status: $out"
grep -qF 'no *.cpp or *.hpp file' <<<"$out" || fail "an empty selection was not reported: $out"

# A clang-format that fails without reporting a file: exit 2 with its message.
mkdir -p "$work/bin"
cat >"$work/bin/clang-format" <<'STUB'
#!/usr/bin/env bash
if [ "${1:-}" = "--version" ]; then echo "clang-format version 14.0.6"; exit 0; fi
echo "stub clang-format: cannot work today" >&2
exit 3
STUB
chmod +x "$work/bin/clang-format"
status=0
out=$(PATH="$work/bin:$PATH" bash "$repo/scripts/check_format.sh" 2>&1) || status=$?
[ "$status" -eq 2 ] || fail "expected exit 2 when clang-format fails, got $status: $out"
grep -qF 'cannot work today' <<<"$out" || fail "clang-format's message was not shown: $out"

echo "check_format_test: passed"
