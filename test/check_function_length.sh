#!/usr/bin/env bash
# Fails when a function of sim/, workloads/ or reports/ is longer than MAX lines (150),
# naming each as lines file:line name, longest first. A function that long holds more
# than one step; split it along its seams. Functions are found by universal-ctags (its
# C++ parser gives each definition's first and last line).
#
#   test/check_function_length.sh [REPO_ROOT] [MAX]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
max=${2:-150}
cd "$root"
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "universal-ctags is not installed (Debian package universal-ctags; make deps installs it)" >&2
  exit 1
fi
long=$(find sim workloads reports -type f \( -name '*.cc' -o -name '*.h' \) | sort |
  xargs ctags --fields=+ne --c++-kinds=f --extras=-F -o - |
  awk -F'\t' -v max="$max" '{
      line = ""; end = ""
      for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) line = substr($i, 6); if ($i ~ /^end:/) end = substr($i, 5) }
      if (line != "" && end != "" && end - line + 1 > max) printf "%5d %s:%s %s\n", end - line + 1, $2, line, $1
    }' | sort -rn)
if [ -n "$long" ]; then
  echo "$long"
  echo "$(wc -l <<<"$long") function(s) over $max lines: split them along their seams" >&2
  exit 1
fi
n=$(find sim workloads reports -type f \( -name '*.cc' -o -name '*.h' \) | xargs ctags --c++-kinds=f --extras=-F -o - | wc -l)
echo "$n functions, none over $max lines"
