#!/usr/bin/env bash
# Builds the vanilla upstream control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler and etcd) at the versions pinned in versions.env into a cache
# directory outside the source tree. The three Kubernetes commands are mains of one
# module and one `go build`, so they share a single compile of the packages they have
# in common. A build is skipped when the binaries for the current pins (versions.env,
# go.mod, go.sum and every main.go) already exist, so changing a pin is the only thing
# that triggers a rebuild.
#
# Usage: build.sh [CACHE_ROOT]   (default: ${CPSCALE_CACHE:-$HOME/.cache/cpscale})
# Prints the directory holding the binaries on its last line.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
cache_root="${1:-${CPSCALE_CACHE:-$HOME/.cache/cpscale}}"

major=${KUBERNETES_VERSION#v}; major=${major%%.*}
minor=${KUBERNETES_VERSION#v*.}; minor=${minor%%.*}
vpkg=k8s.io/component-base/version
kube_ldflags="-s -w -X $vpkg.gitVersion=$KUBERNETES_VERSION -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor"
kube_ldflags+=" -X $vpkg.gitTreeState=clean"
# client-go carries its own copy of the version variables (used in the user agent).
cpkg=k8s.io/client-go/pkg/version
kube_ldflags+=" -X $cpkg.gitVersion=$KUBERNETES_VERSION -X $cpkg.gitMajor=$major -X $cpkg.gitMinor=$minor"

# The binaries are stripped (-s -w), so the compiler need not write the DWARF the linker
# drops: a tenth less CPU time (go build -ldflags=-w alone still compiles it).
gcflags="all=-dwarf=false"

# The cache key covers everything that decides the binaries' content.
kube_commands=(kube-apiserver kube-controller-manager kube-scheduler)
key=$( { cat "$here/versions.env" "$here"/kubernetes/{go.mod,go.sum}; \
         for c in "${kube_commands[@]}"; do echo "$c"; cat "$here/kubernetes/cmd/$c/main.go"; done; \
         cat "$here"/etcd/{go.mod,go.sum,main.go}; echo "$kube_ldflags $gcflags"; go env GOVERSION; } \
       | sha256sum | cut -c1-16)
out="$cache_root/bin/$key"
have=1
for b in "${kube_commands[@]}" etcd; do [[ -x "$out/$b" ]] || have=0; done
if (( have )); then
  ln -sfn "$key" "$cache_root/bin/current"
  echo "$out"
  exit 0
fi
mkdir -p "$out.tmp"

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath"
echo "building ${kube_commands[*]} $KUBERNETES_VERSION and etcd $ETCD_VERSION into $out" >&2
start=$SECONDS
(cd "$here/kubernetes" && go build -gcflags "$gcflags" -ldflags "$kube_ldflags" -o "$out.tmp/" "${kube_commands[@]/#/./cmd/}")
(cd "$here/etcd" && go build -gcflags "$gcflags" -ldflags "-s -w" -o "$out.tmp/etcd" .)
echo "built in $((SECONDS - start)) s" >&2

for c in "${kube_commands[@]}"; do
  got=$("$out.tmp/$c" --version)
  [[ "$got" == "Kubernetes $KUBERNETES_VERSION" ]] || { echo "$c reports '$got', expected Kubernetes $KUBERNETES_VERSION" >&2; exit 1; }
done
got=$("$out.tmp/etcd" --version); got=${got%%$'\n'*}
[[ "$got" == "etcd Version: ${ETCD_VERSION#v}" ]] || { echo "etcd reports '$got', expected ${ETCD_VERSION#v}" >&2; exit 1; }

rm -rf "$out" && mv "$out.tmp" "$out"
ln -sfn "$key" "$cache_root/bin/current"
echo "$out"
