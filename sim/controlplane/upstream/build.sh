#!/usr/bin/env bash
# Builds the vanilla upstream kube-apiserver and etcd at the versions pinned in
# versions.env into a cache directory outside the source tree. A build is skipped
# when the binaries for the current pins (versions.env + go.mod + go.sum + main.go)
# already exist, so changing a pin is the only thing that triggers a rebuild.
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

# The cache key covers everything that decides the binaries' content.
key=$( { cat "$here/versions.env" "$here"/kube-apiserver/{go.mod,go.sum,main.go} \
             "$here"/etcd/{go.mod,go.sum,main.go}; echo "$kube_ldflags"; go env GOVERSION; } \
       | sha256sum | cut -c1-16)
out="$cache_root/bin/$key"
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]]; then
  ln -sfn "$key" "$cache_root/bin/current"
  echo "$out"
  exit 0
fi
mkdir -p "$out.tmp"

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath"
echo "building kube-apiserver $KUBERNETES_VERSION and etcd $ETCD_VERSION into $out" >&2
(cd "$here/kube-apiserver" && go build -ldflags "$kube_ldflags" -o "$out.tmp/kube-apiserver" .)
(cd "$here/etcd" && go build -ldflags "-s -w" -o "$out.tmp/etcd" .)

got=$("$out.tmp/kube-apiserver" --version)
[[ "$got" == "Kubernetes $KUBERNETES_VERSION" ]] || { echo "kube-apiserver reports '$got', expected Kubernetes $KUBERNETES_VERSION" >&2; exit 1; }
got=$("$out.tmp/etcd" --version); got=${got%%$'\n'*}
[[ "$got" == "etcd Version: ${ETCD_VERSION#v}" ]] || { echo "etcd reports '$got', expected ${ETCD_VERSION#v}" >&2; exit 1; }

rm -rf "$out" && mv "$out.tmp" "$out"
ln -sfn "$key" "$cache_root/bin/current"
echo "$out"
