#!/usr/bin/env bash
# Fails when a header of sim/, workloads/ or reports/ includes nlohmann/json.hpp (some
# 25,000 lines, paid by every file that includes the header) without being in the list
# below. A header that only names json in declarations includes <nlohmann/json_fwd.hpp>
# and leaves the full header to its .cc files; the list holds the headers whose types
# keep a JSON document by value. Prints every header outside the list that includes it,
# and every listed header that no longer does (the list must shrink with the code).
#
#   test/check_json_headers.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# header: why it holds a JSON document by value
allowed="
sim/kube/api_client.h: an answer's decoded body (ApiResult::body) is the API object itself
sim/kube/watch.h: a watch event carries the object it is about
sim/result/json_io.h: the result documents' JSON reader, its accessors inline
sim/result/result.h: result.json keeps free-form documents (scenario, profile, workload summaries, model, client statistics)
sim/result/capacity.h: a projected capacity index keeps the model's projection as written
sim/scenario/scenario.h: the effective scenario is kept as the document result.json records
sim/capture/shape.h: a capture keeps the lists and CRDs it read, as the API returned them
workloads/templates.h: an object template is a JSON document filled in per object
"

bad=0
listed=$(printf '%s\n' "$allowed" | sed -n 's/^\([^:[:space:]]*\):.*/\1/p' | sort)
including=$(find sim workloads reports -type f -name '*.h' -print0 | sort -z |
  xargs -0 grep -l '^[[:space:]]*#[[:space:]]*include[[:space:]]*<nlohmann/json\.hpp>' | sort || true)
for h in $including; do
  if ! grep -qx "$h" <<<"$listed"; then
    echo "$h: includes nlohmann/json.hpp; use <nlohmann/json_fwd.hpp> (or list it here with why)"
    bad=$((bad + 1))
  fi
done
for h in $listed; do
  if ! grep -qx "$h" <<<"$including"; then
    echo "$h: listed but no longer includes nlohmann/json.hpp; take it off the list"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "$bad header(s) against the json list"
  exit 1
fi
echo "json headers: only the listed ones include nlohmann/json.hpp"
