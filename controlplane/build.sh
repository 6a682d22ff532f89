#!/usr/bin/env bash
# build.sh builds the test control plane (kube-apiserver, etcd and
# kube-controller-manager, for its garbage collector) from the
# Go module proxy into a cache directory outside the clone, keyed by version,
# and skips the build of each binary already there.
#
# Progress goes to stderr; the last line on stdout is the absolute directory
# holding kube-apiserver and etcd, usable as KUBEBUILDER_ASSETS:
#
#   export KUBEBUILDER_ASSETS="$(controlplane/build.sh | tail -n 1)"
#
# With --cached it builds nothing: it prints the directory and exits 0 when
# every binary is there, 1 when one is missing (make demo says so first).
#
# KWREC_CACHE_DIR overrides the cache root (default: $XDG_CACHE_HOME/kwrec,
# else ~/.cache/kwrec).
set -euo pipefail

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${KWREC_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/kwrec}"
dir="$root/controlplane/kube-apiserver-${KUBE_VERSION}_etcd-${ETCD_VERSION}_$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

log() { echo "controlplane: $*" >&2; }

if [[ "${1:-}" == --cached ]]; then
	echo "$dir"
	for name in etcd kube-apiserver kube-controller-manager; do [[ -x "$dir/$name" ]] || exit 1; done
	exit 0
fi

# progress turns `go build -v` package lines into a line every 50 packages,
# so a cold build (minutes) shows it is alive without flooding the log.
progress() {
	awk -v what="$1" '{ n++; if (n % 50 == 0) { printf "controlplane:   %s: %d packages compiled\n", what, n > "/dev/stderr"; fflush("/dev/stderr") } }
		END { printf "controlplane:   %s: %d packages compiled in all\n", what, n > "/dev/stderr" }'
}

build() { # build NAME MODULE_DIR PACKAGE LDFLAGS
	local name="$1" mod="$2" pkg="$3" ldflags="$4"
	if [[ -x "$dir/$name" ]]; then
		log "$name is cached in $dir"
		return
	fi
	log "building $name from the Go module proxy (cold: minutes; cached afterwards)"
	local start=$SECONDS tmp="$dir/.$name.tmp.$$"
	(cd "$here/$mod" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -v -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg" 2>&1) | progress "$name"
	mv -f "$tmp" "$dir/$name"
	log "built $name in $((SECONDS - start))s"
}

major="${KUBE_VERSION#v}"; major="${major%%.*}"
minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
kldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done

build etcd etcd . "-s -w"
build kube-apiserver apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kldflags"
build kube-controller-manager apiserver k8s.io/kubernetes/cmd/kube-controller-manager "$kldflags"
echo "$dir"
