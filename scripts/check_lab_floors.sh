#!/usr/bin/env bash
# Checks that the lab's folders are floors that only point down: a file under lab/<floor>/
# may include headers of its own floor and of the floors below it, never of one above.
# Floors, bottom first (docs/lab.md says what each holds):
#   os text results store measure suites run analyze pages tools cli
# An include is read in quotes or in angle brackets; one that climbs out of its folder with
# "../" fails, since its floor cannot be told. A folder under lab/ that is not a floor fails
# too: a new folder gets a place in the list.
#   scripts/check_lab_floors.sh [LAB_DIR]    (default: the repository's lab/)
# Exits 0 when every include points down or sideways, 1 listing each one that does not.
set -euo pipefail
lab=${1:-"$(dirname "$0")/../lab"}
lab=${lab%/}  # one spelling of the prefix that grep prints before each file
floors=(os text results store measure suites run analyze pages tools cli)
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
# One pass over every include of the lab (a process per file took a minute on a loaded
# 2-core machine). An include in quotes or angle brackets whose first component is a floor
# must point down or sideways; one that climbs out with "../" is refused, since no floor can
# be read from it.
ranks=""
for f in "${floors[@]}"; do ranks+="$f=${rank[$f]} "; done
if ! out=$({ grep -rn -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' --include='*.cpp' --include='*.hpp' \
               --exclude-dir=node_modules "$lab" || true; } |
           awk -v lab="$lab/" -v ranks="$ranks" -v list="${floors[*]}" '
             BEGIN { n = split(ranks, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); rank[p[1]] = p[2] } }
             {
               rest = substr($0, length(lab) + 1)            # FILE:LINE:TEXT, FILE relative to lab/
               file = rest; sub(/:.*/, "", file)
               line = rest; sub(/^[^:]*:/, "", line); text = line; sub(/:.*/, "", line); sub(/^[^:]*:/, "", text)
               floor = file; sub(/\/.*/, "", floor)
               if (!(floor in rank)) next
               target = text; sub(/^[^"<]*["<]/, "", target); sub(/[">].*$/, "", target)
               if (target ~ /(^|\/)\.\.\//) {
                 printf "check_lab_floors: lab/%s:%s: includes %s, a path that climbs out of its folder (name the floor instead)\n", file, line, target
                 bad = 1; next
               }
               up = target; if (up !~ /\//) next
               sub(/\/.*/, "", up)
               if ((up in rank) && rank[up] + 0 > rank[floor] + 0) {
                 printf "check_lab_floors: lab/%s:%s: includes %s/ from %s/, a floor above it (floors, bottom first: %s)\n", file, line, up, floor, list
                 bad = 1
               }
             }
             END { exit bad }'); then
  bad=1
fi
[ -n "$out" ] && echo "$out"
if [ $bad -eq 0 ]; then echo "check_lab_floors: every include points down (${floors[*]})"; fi
exit $bad
