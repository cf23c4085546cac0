#!/usr/bin/env bash
# Fails when a source file includes a header of a room above its own: the rooms of
# sim/, workloads/ and reports/ may only use the rooms below them (docs: "Where the
# layers should point"). Prints every edge against the flow as file:line: from -> to,
# and every source file in no room of the list (a new room must be placed in it).
#
#   test/check_layers.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# Bottom to top; a room may include itself and any room listed before it.
rooms="sim/common sim/engine sim/kube sim/load sim/controlplane sim/metrics sim/result sim/model
workloads sim/scenario sim/capture reports sim/calibration sim/run sim/cli"

find sim workloads reports -type f \( -name '*.h' -o -name '*.cc' \) | sort |
  xargs grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' |
  awk -v rooms="$rooms" '
    BEGIN { n = split(rooms, list, /[ \n]+/); for (i = 1; i <= n; i++) rank[list[i]] = i }
    function roomOf(path,   r, best) {
      best = ""
      for (r in rank) if (index(path, r "/") == 1 && length(r) > length(best)) best = r
      return best
    }
    {
      split($0, parts, ":"); file = parts[1]; line = parts[2]
      if (!match($0, /"[^"]+"/)) next
      inc = substr($0, RSTART + 1, RLENGTH - 2)
      from = roomOf(file); to = roomOf(inc)
      # A room missing from the list would have its edges go unchecked.
      if (from == "" && !(file in unlisted)) { unlisted[file]; printf "%s: in no room of the list\n", file; bad++ }
      if (from == "" || to == "" || from == to) next
      if (rank[to] > rank[from]) { printf "%s:%s: %s -> %s (%s)\n", file, line, from, to, inc; bad++ }
    }
    END {
      if (bad) { printf "%d include edge(s) against the flow or file(s) in no room\n", bad; exit 1 }
      print "include edges: all point down"
    }'
