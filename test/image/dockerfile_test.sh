#!/usr/bin/env bash
# sim/image/Dockerfile against reality, where no image can be built (no container
# engine): the runtime stage installs the Debian package of every shared library the
# cpscale binary built here loads (or the base image has it, or another installed
# package brings it), every COPY source exists and is in the build context, the user is
# numeric and not root (and the one `cpscale job`'s pods run as), and the templates'
# environment variable names where they are copied.
#
#   dockerfile_test.sh CPSCALE_BINARY SOURCE_DIR
set -euo pipefail
binary=$1
src=$2
dockerfile=$src/sim/image/Dockerfile
ignore=$src/sim/image/Dockerfile.dockerignore
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The Dockerfile's instructions, one per line, continuations joined and comments out.
instructions=$(sed -e 's/^[[:space:]]*#.*$//' "$dockerfile" | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' | grep -v '^[[:space:]]*$')
# The runtime stage: everything after the last FROM.
runtime=$(awk '/^FROM /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' <<<"$instructions")

# --- the runtime stage's packages, and what they bring ---
listed=$(grep '^RUN ' <<<"$runtime" | sed 's/&&/\n/g' | grep 'apt-get install' |
  sed 's/.*apt-get install//' | tr ' ' '\n' | grep -v '^-' | grep -v '^$' | sort -u)
[ -n "$listed" ] || fail "the runtime stage installs no package"
# What debian:bookworm-slim holds: the Essential and required packages (and apt), which
# this Debian machine has too.
base=$(dpkg-query -W -f='${Package} ${Essential} ${Priority}\n' | awk '$2 == "yes" || $3 == "required" {print $1}')
base="$base apt"
# The closure of both under Depends and Pre-Depends, over the packages installed here.
declare -A depends have
while IFS=$'\t' read -r p d; do depends[$p]=$d; done < <(dpkg-query -W -f='${Package}\t${Depends}, ${Pre-Depends}\n')
queue=()
for p in $listed $base; do queue+=("$p"); done
while [ ${#queue[@]} -gt 0 ]; do
  p=${queue[0]}
  queue=("${queue[@]:1}")
  p=${p%%:*}
  [ -n "${have[$p]:-}" ] && continue
  have[$p]=1
  # "a (>= 1) | b, c" -> a b c: every alternative counts as brought.
  deps=${depends[$p]:-}
  deps=$(sed -e 's/([^)]*)//g' -e 's/[,|]/ /g' <<<"$deps")
  for d in $deps; do queue+=("$d"); done
done
for p in $listed; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    fail "the runtime stage installs $p, which is not installed here: is it the package of a library the binary loads?"
done

# --- every library the binary loads ---
[ -x "$binary" ] || { echo "FAIL: no binary at $binary"; exit 1; }
libs=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
[ -n "$libs" ] || fail "ldd found no library in $binary"
for lib in $libs; do
  owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true)
  pkg=${owner%%:*}
  if [ -z "$pkg" ]; then
    fail "$lib is in no Debian package: the image cannot install it"
  elif [ -z "${have[$pkg]:-}" ]; then
    fail "$lib comes from $pkg, which the runtime stage does not install (nor anything it installs)"
  fi
done

# --- COPY sources exist, and the .dockerignore sends them ---
stages=$(grep -o '^FROM [^ ]* AS [^ ]*' <<<"$instructions" | awk '{print $4}')
while read -r line; do
  words=($line)
  from=""
  args=()
  for w in "${words[@]:1}"; do
    case $w in
      --from=*) from=${w#--from=} ;;
      --*) ;;
      *) args+=("$w") ;;
    esac
  done
  [ ${#args[@]} -ge 2 ] || { fail "COPY without source and destination: $line"; continue; }
  if [ -n "$from" ]; then
    grep -qx "$from" <<<"$stages" || fail "COPY --from=$from names no stage"
    continue
  fi
  for s in "${args[@]:0:${#args[@]}-1}"; do
    [ -e "$src/$s" ] || fail "COPY $s: no such path in the build context"
    top=${s%%/*}
    if grep -qx '\*' "$ignore" && ! grep -qx "!$top" "$ignore"; then
      fail "COPY $s: $ignore leaves $top out of the build context"
    fi
  done
done < <(grep '^COPY ' <<<"$instructions")

# --- the user ---
user=$(grep '^USER ' <<<"$runtime" | tail -n 1 | awk '{print $2}')
uid=${user%%:*}
if ! [[ "$uid" =~ ^[0-9]+$ ]]; then
  fail "USER '$user' is not numeric: runAsNonRoot cannot verify a name"
elif [ "$uid" -eq 0 ]; then
  fail "USER is root"
fi
if [[ "${user#*:}" != "$user" ]] && ! [[ "${user#*:}" =~ ^[0-9]+$ ]]; then fail "USER's group '${user#*:}' is not numeric"; fi
jobUser=$(grep -o 'kImageUser = [0-9]*' "$src/sim/run/job_manifest.h" | awk '{print $3}')
[ "$uid" = "$jobUser" ] || fail "USER $uid is not the user cpscale job's pods run as ($jobUser, sim/run/job_manifest.h)"

# --- the binary on PATH as the entrypoint, the templates where the binary looks ---
grep -q '^ENTRYPOINT \["cpscale"\]' <<<"$runtime" || fail "ENTRYPOINT is not [\"cpscale\"]"
grep -q '^COPY --from=[^ ]* [^ ]* /usr/local/bin/cpscale$' <<<"$runtime" || fail "the binary is not copied to /usr/local/bin/cpscale"
templates=$(grep -o 'CPSCALE_TEMPLATE_DIR=[^ ]*' <<<"$runtime" | head -n 1 | cut -d= -f2)
[ -n "$templates" ] || fail "ENV CPSCALE_TEMPLATE_DIR is not set"
grep -q "^COPY workloads/templates $templates\$" <<<"$runtime" || fail "workloads/templates is not copied to CPSCALE_TEMPLATE_DIR ($templates)"

if [ "$failures" -gt 0 ]; then
  echo "$failures problem(s) in $dockerfile"
  exit 1
fi
echo "ok: $(wc -w <<<"$libs") libraries from $(wc -w <<<"$listed") listed packages and the base, COPY sources, USER $user"
