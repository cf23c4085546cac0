#!/usr/bin/env bash
# Fails when a C++ source differs from what clang-format makes of it with the project's
# style (.ci/clang-format), naming each file and the first lines that differ.
# `make format` rewrites them.
#
#   test/check_format.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
  echo "clang-format is not installed (Debian package clang-format-14; make deps installs it)" >&2
  exit 1
fi
mapfile -t files < <(find sim workloads reports test -type f \( -name '*.cc' -o -name '*.h' \) | sort)
status=0
out=$("$cf" --style=file:.ci/clang-format --dry-run -Werror "${files[@]}" 2>&1) || status=$?
if [ "$status" -ne 0 ]; then
  grep -E '^[^ ].*: (error|warning):' <<<"$out" | head -40 >&2 || true
  echo "some sources do not follow .ci/clang-format: run make format" >&2
  exit 1
fi
echo "${#files[@]} sources follow .ci/clang-format"
