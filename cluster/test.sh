#!/usr/bin/env bash
# Builds (Go's build cache makes rebuilds quick) and runs ScxTT's test against
# a real control plane: etcd (embedded), kube-apiserver and the upstream
# kube-scheduler with the ScxTT plugin, each node a real scx_tt process
# (scx_tt --simulated-node serving the node API).
#
#   SCX_TT=/path/to/scx_tt ./test.sh                    # full: 5 nodes + 1 stopped, 200 pods
#   SCX_TT=/path/to/scx_tt ./test.sh -nodes 1 -pods 20  # reduced (CI)
#
# SCX_TT defaults to target/release/scx_tt at the repository's root (build
# it there with `cargo build --release`). Extra arguments go to cluster-test
# (e.g. -seed 2 -keep -json out.json).
#   ./test.sh --build-only   # the Go builds and unit tests alone (make test starts them early)
#   ./test.sh --no-build ... # the control-plane test on binaries built before
# Exit status: non-zero when a build, a unit test or a check fails.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin"
# no VCS stamping (a clone in a directory owned by another user would fail it); no toolchain
# download (go.mod asks 1.26.0, the machines have 1.26.8)
export GOFLAGS="${GOFLAGS:--buildvcs=false}" GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
BUILD=1 RUN=1
case "${1:-}" in
	--build-only) RUN=""; shift ;;
	--no-build) BUILD=""; shift ;;
esac
SCX_TT="${SCX_TT:-$(cd .. && pwd)/target/release/scx_tt}"
if [ -n "$RUN" ] && { [ ! -x "$SCX_TT" ] || ! "$SCX_TT" --help 2>/dev/null | grep -q -- '--simulated-node'; }; then
	echo "test.sh: $SCX_TT is not an scx_tt with --simulated-node: build it with" >&2
	echo "  cargo build --release      (at the repository's root; then SCX_TT defaults to target/release/scx_tt)" >&2
	echo "or name one with SCX_TT=/path/to/scx_tt ./test.sh" >&2
	exit 2
fi
# Stamp the upstream binaries with the version they are built from.
KV=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' go.mod | head -1)
KMINOR=$(echo "$KV" | cut -d. -f2)
LD="-X k8s.io/component-base/version.gitVersion=$KV -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$KMINOR"
mkdir -p bin
step() { echo "== $*"; }
if [ -n "$BUILD" ]; then
step "build kube-apiserver ($KV)"
time nice -n 19 go build -ldflags "$LD" -o bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
step "build scx-tt-scheduler"
time nice -n 19 go build -ldflags "$LD" -o bin/scx-tt-scheduler ./cmd/scx-tt-scheduler
step "build cluster-test"
time nice -n 19 go build -o bin/cluster-test ./cmd/cluster-test
step "unit tests"
nice -n 19 go test ./nodeapi/... ./internal/... ./plugin/...
fi
[ -n "$RUN" ] || exit 0
step "control-plane test (scx_tt: $SCX_TT)"
bin/cluster-test -bin bin -scx-tt "$SCX_TT" "$@"
