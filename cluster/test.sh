#!/usr/bin/env bash
# Builds (Go's build cache makes rebuilds quick) and runs ScxTT's test against
# a real control plane: etcd (embedded), kube-apiserver and the upstream
# kube-scheduler with the ScxTT plugin, with stand-in scx_tt node APIs.
# Extra arguments go to cluster-test (e.g. -nodes 5 -pods 200 -keep).
# Exit status: non-zero when a build, a unit test or a check fails.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin"
# Stamp the upstream binaries with the version they are built from.
KV=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' go.mod | head -1)
KMINOR=$(echo "$KV" | cut -d. -f2)
LD="-X k8s.io/component-base/version.gitVersion=$KV -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$KMINOR"
mkdir -p bin
step() { echo "== $*"; }
step "build kube-apiserver ($KV)"
time nice -n 19 go build -ldflags "$LD" -o bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
step "build scx-tt-scheduler"
time nice -n 19 go build -ldflags "$LD" -o bin/scx-tt-scheduler ./cmd/scx-tt-scheduler
step "build cluster-test"
time nice -n 19 go build -o bin/cluster-test ./cmd/cluster-test
step "unit tests"
nice -n 19 go test ./nodeapi/... ./internal/... ./plugin/...
step "control-plane test"
bin/cluster-test -bin bin "$@"
