#!/usr/bin/env bash
# Runs every libFuzzer target of test/fuzz for a bounded time (make fuzz).
#
#   test/fuzz/run.sh BUILD_DIR SECONDS RUNS JOBS [TARGET...]
#
# Each target runs until it has executed RUNS inputs or for SECONDS, whichever comes
# first (RUNS 0: for SECONDS).
# Each target starts from a working corpus in BUILD_DIR/fuzz/corpus/<target>: the
# committed seeds (test/fuzz/corpus/<target>), seeds cut from the repository's own
# files (scrapes in test/fixtures/metrics, scenarios/, profiles/, the scenarios'
# gates) and whatever earlier runs added. JOBS targets run at once. A crash, a
# sanitizer report, a broken invariant, a leak or a hang leaves its input in
# BUILD_DIR/fuzz/artifacts/<target>/ and fails the run. At the end: each target's
# executions (libFuzzer's stat::number_of_executed_units) and executions per second.
set -uo pipefail

build=${1:?build dir}
seconds=${2:?seconds per target}
runs=${3:?executions per target (0: no limit)}
jobs=${4:-2}
shift 4 || shift $#
[ "$runs" -gt 0 ] || runs=-1
# Allocation stacks of 8 frames (30 by default) make every malloc cheaper; a finding's
# input replayed without this option reports its full stacks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=8}
root=$(cd "$(dirname "$0")/../.." && pwd)
fuzz=$root/test/fuzz
work=$build/fuzz
targets=("$@")
# The slowest first, so the two cores stay busy to the end.
[ ${#targets[@]} -gt 0 ] || targets=(scenario kubeconfig profile prometheus_text watch_decoder metadata gate)

# Per target: dictionary and the largest input tried (about the largest real input).
declare -A dict=([prometheus_text]=prometheus [scenario]=yaml [profile]=yaml [kubeconfig]=kubeconfig
                 [gate]=gate [watch_decoder]=watch [metadata]=json)
declare -A maxlen=([prometheus_text]=8192 [scenario]=4096 [profile]=2048 [kubeconfig]=8192
                   [gate]=256 [watch_decoder]=8192 [metadata]=4096)

seed() {
  local t=$1 dir=$work/corpus/$1
  mkdir -p "$dir" "$work/artifacts/$t" "$work/logs"
  cp -n "$fuzz/corpus/$t"/* "$dir"/ 2>/dev/null
  case $t in
    prometheus_text)
      # Real scrapes of the pinned kube-apiserver and etcd, cut into pieces of a few
      # KiB, at a family's HELP line where one is near.
      for f in "$root"/test/fixtures/metrics/*.prom; do
        awk -v out="$dir/$(basename "$f" .prom)-" '
          (/^# HELP / && size > 3072) || size > 6144 { close(file); n++; size = 0 }
          { file = sprintf("%s%03d.prom", out, n); print > file; size += length($0) + 1 }' "$f"
      done ;;
    scenario)
      for f in "$root"/scenarios/*.yaml "$root"/scenarios/*/*.yaml; do
        cp "$f" "$dir/$(basename "$(dirname "$f")")-$(basename "$f")"
      done ;;
    profile)
      cp "$root"/profiles/*.yaml "$dir"/ ;;
    gate)
      # Every gate the shipped scenarios hold.
      local i=0
      grep -h -E '^ *- [a-z_]+(\{[^}]*\})? *(<=|>=|==|!=|<|>) ' "$root"/scenarios/*.yaml "$root"/scenarios/*/*.yaml |
        sed -E 's/^ *- //' | sort -u | while IFS= read -r g; do
          i=$((i + 1)); printf '%s' "$g" > "$dir/scenario-gate-$i.txt"
        done ;;
  esac
}

run() {
  local t=$1 bin=$build/test/fuzz/fuzz_$1
  local log=$work/logs/$t.log
  touch "$work/logs/$t.start"
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: a leak or a blow-up.
  "$bin" -max_total_time="$seconds" -runs="$runs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2560 \
    -max_len="${maxlen[$t]}" -dict="$fuzz/dict/${dict[$t]}.dict" \
    -artifact_prefix="$work/artifacts/$t/" "$work/corpus/$t" >"$log" 2>&1
  echo $? >"$work/logs/$t.rc"
}

for t in "${targets[@]}"; do
  [ -x "$build/test/fuzz/fuzz_$t" ] || { echo "run.sh: no fuzz_$t in $build/test/fuzz" >&2; exit 2; }
  seed "$t"
done

echo "fuzzing ${#targets[@]} targets, each for ${seconds}s or $runs executions, $jobs at a time (logs in $work/logs)"
running=0
for t in "${targets[@]}"; do
  run "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=0
printf '\n%-16s %14s %10s %8s  %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  log=$work/logs/$t.log
  execs=$(awk '/stat::number_of_executed_units:/ { print $2 }' "$log" | tail -n 1)
  rate=$(awk '/stat::average_exec_per_sec:/ { print $2 }' "$log" | tail -n 1)
  corpus=$(find "$work/corpus/$t" -type f | wc -l)
  rc=$(cat "$work/logs/$t.rc")
  result=ok
  if [ "$rc" != 0 ]; then
    result="FAILED (exit $rc): $(find "$work/artifacts/$t" -type f -newer "$work/logs/$t.start" | head -n 3 | tr '\n' ' ')see $log"
    failed=1
  fi
  printf '%-16s %14s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
done
exit $failed
