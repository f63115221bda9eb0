#!/usr/bin/env bash
# Checks that the lab's folders are floors that only point down: a file under lab/<floor>/
# may include headers of its own floor and of the floors below it, never of one above.
# Floors, bottom first (docs/lab.md says what each holds):
#   os text model store measure suites run analyze pages tools cli
# A folder under lab/ that is not a floor fails too: a new folder gets a place in the list.
#   scripts/check_lab_floors.sh [LAB_DIR]    (default: the repository's lab/)
# Exits 0 when every include points down or sideways, 1 listing each one that does not.
set -euo pipefail
lab=${1:-"$(dirname "$0")/../lab"}
floors=(os text model store measure suites run analyze pages tools cli)
declare -A rank
for i in "${!floors[@]}"; do rank[${floors[$i]}]=$i; done

bad=0
for dir in "$lab"/*/; do
  name=$(basename "$dir")
  if [ -z "${rank[$name]+set}" ]; then
    echo "check_lab_floors: lab/$name/ is not a floor (floors, bottom first: ${floors[*]})"
    bad=1
  fi
done
while IFS= read -r -d '' file; do
  rel=${file#"$lab"/}
  floor=${rel%%/*}
  [ -n "${rank[$floor]+set}" ] || continue  # named above
  # Each quoted include whose first component is a floor: FILE:LINE:floor.
  while IFS=: read -r line target; do
    if [ "${rank[$target]}" -gt "${rank[$floor]}" ]; then
      echo "check_lab_floors: lab/$rel:$line: includes $target/ from $floor/, a floor above it (floors, bottom first: ${floors[*]})"
      bad=1
    fi
  done < <(grep -n -o -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "$file" |
           sed -E 's/^([0-9]+):.*"([a-z_]+)\/$/\1:\2/' |
           while IFS=: read -r l t; do [ -n "${rank[$t]+set}" ] && echo "$l:$t"; done || true)
done < <(find "$lab" -type f \( -name '*.cpp' -o -name '*.hpp' \) -not -path '*/node_modules/*' -print0)
if [ $bad -eq 0 ]; then echo "check_lab_floors: every include points down (${floors[*]})"; fi
exit $bad
