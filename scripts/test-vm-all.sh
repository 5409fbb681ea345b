#!/bin/bash
# make test's VM part (issue 32): every VM test on the default kernel, then the smoke test and
# the core set on each other KERNEL (scripts/test-kernels.sh). The other kernels are fetched and
# built (tests/vm/kernel.sh: the 6.12 builds take about 6 min each on 2 cores) beside the
# default kernel's tests, at nice 19: those tests mostly wait on fixed-length guest runs, and
# they hold under `stress-ng --cpu 2` at nice 0 (make test-vm-loaded), a heavier load than this.
#
# Usage: test-vm-all.sh [--unit] [KERNEL]...   (default: rt lts lts-rt; tested in this order,
#   each as soon as it is ready)
#   --unit: make test's form: the unit and integration tests (`cargo test --release`, what
#   make unit runs) and the benchmarks' build first, with the preparation already under way beside them (cargo's
#   serial phases and the tests' waits leave it CPU), then the VM tests. A unit failure stops
#   the run (and the preparation) before any VM boots.
#   The preparation's output goes to target/vm/kernels.log; a failed preparation fails the run
#   and its kernels are not tested. One summary table (target/vm/summary.tsv) covers the whole
#   run. Exit status: the default kernel's tests', else the preparation's, else the kernels'.
#   With --unit the other kernels run the quick core set (test-kernels.sh --quick), which keeps
#   make test inside CI's 90 min; make test-vm-all and make test-kernels run the whole core set.
#   The preparation is stopped (the whole process group) when this script ends early.
set -uo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
UNIT=""
QUICK=""
KERNELS=()
for a in "$@"; do
  case $a in
    --unit) UNIT=1; QUICK=--quick ;;
    *) KERNELS+=("$a") ;;
  esac
done
[ ${#KERNELS[@]} -gt 0 ] || KERNELS=(rt lts lts-rt)
SUMMARY=target/vm/summary.tsv
LOG=target/vm/kernels.log
mkdir -p target/vm
rm -f "$SUMMARY" target/vm/failures.txt
started=$SECONDS

# The preparation runs in a session of its own (setsid), so one signal reaches the builds' make
# and compilers; it also ends itself when this script is gone (its parent changes).
# Its session is an autogroup of its own (where the kernel has autogroups, as Debian's do):
# a task's nice counts only within its autogroup, and autogroups share the CPU by their own
# nice, so the builds' nice 19 alone gave them half the CPU against the unit tests' compile
# (cargo's phase took 16m50s instead of about 6 min in a fresh-clone run). The autogroup gets
# nice 19 too: the preparation runs on what the unit tests and the VMs (autogroup nice -20,
# tests/vm/run.sh) leave idle.
setsid bash -c '
  echo 19 > /proc/$$/autogroup 2>/dev/null || true
  parent=$1; shift
  for k; do
    t0=$SECONDS
    nice -n 19 bash tests/vm/kernel.sh --kernel "$k" || { echo "kernel $k: failed"; exit 1; } &
    job=$!
    while kill -0 "$job" 2>/dev/null; do
      read -r _ _ _ ppid _ < /proc/$$/stat
      [ "$ppid" = "$parent" ] || { kill -TERM -- -$$; exit 1; }
      sleep 2
    done
    wait "$job" || exit 1
    echo "kernel $k: ready in $((SECONDS - t0)) s"
  done' prepare $$ "${KERNELS[@]}" > "$LOG" 2>&1 < /dev/null &
prep=$!
stop_prep() { kill -TERM -- "-$prep" 2>/dev/null; wait "$prep" 2>/dev/null; }
trap stop_prep EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo "test-vm-all: preparing ${KERNELS[*]} beside the default kernel's tests (log: $LOG)"

rc=0
if [ -n "$UNIT" ]; then
  # the cluster test's Go builds (kube-apiserver cold: 11-16 min) run beside the unit tests in
  # an autogroup of nice 19, as the kernels' preparation; the reduced cluster test (issue 35:
  # 1 node, 20 pods, the real apiserver and scheduler) runs once the benchmarks are built
  CLOG=target/cluster-build.log
  setsid bash -c 'echo 19 > /proc/$$/autogroup 2>/dev/null || true; exec bash cluster/test.sh --build-only' > "$CLOG" 2>&1 < /dev/null &
  cbuild=$!
  trap 'stop_prep; kill -TERM -- "-$cbuild" 2>/dev/null' EXIT
  t0=$SECONDS
  SCX_TT_REQUIRE_PERFETTO=1 SCX_TT_REQUIRE_CHROMIUM=1 $CARGO test --release --workspace || rc=$?
  echo "test-vm-all: unit and integration tests: rc $rc in $((SECONDS - t0)) s"
  [ $rc -eq 0 ] || exit $rc
  # the benchmarks are not tests, but they must build: one rotted unseen (2026-11-29)
  t0=$SECONDS
  $CARGO build --release --workspace --benches || exit 1
  echo "test-vm-all: benchmarks built in $((SECONDS - t0)) s"
  # waited on now: its autogroup back to nice 0, or a load beside make test (stress-ng at nice
  # 0, the kernels' build) starves it (a fresh-clone run under stress-ng: 12 s of CPU in 6.5 min)
  echo 0 > "/proc/$cbuild/autogroup" 2>/dev/null || true
  t0=$SECONDS
  wait "$cbuild" || { echo "test-vm-all: the cluster test's build failed ($CLOG):"; tail -30 "$CLOG"; exit 1; }
  echo "test-vm-all: cluster build ready $((SECONDS - t0)) s after the benchmarks (log: $CLOG)"
  t0=$SECONDS
  SCX_TT=$PWD/target/release/scx_tt bash cluster/test.sh --no-build -nodes 1 -pods 20 || exit 1
  echo "test-vm-all: reduced cluster test passed in $((SECONDS - t0)) s"
  $CARGO test --release --test vm --no-run && bash tests/vm/mkinitrd.sh || exit 1
fi
t0=$SECONDS
sh -xc "$CARGO test --release --test vm smoke -- --ignored --nocapture && \
  $CARGO test --release --test vm -- --ignored --test-threads=1 --nocapture \
    --skip smoke --skip run_dir --skip scale::" || rc=$?
echo "test-vm-all: default kernel: rc $rc in $((SECONDS - t0)) s"

# Each kernel's core set runs as soon as that kernel is ready, while the next ones are still
# being built (at autogroup nice 19 the builds take only what the VMs leave idle): waiting for
# the whole preparation first cost 838 s after the default kernel's tests in a fresh-clone run.
ready() { grep -qxE "kernel $1: ready in [0-9]+ s" "$LOG"; }
# While nothing but the preparation is left to wait for, its autogroup goes back to nice 0, as
# the cluster build's does: at nice 19 a load beside make test (stress-ng at nice 0) starved it
# (a fresh-clone run under stress-ng, 2026-12-07: 176 objects of the 6.12 build compiled in
# its first 43 min, then about 150 a minute once its autogroup was set to 0 by hand); back to
# 19 while a kernel's VMs run.
prep_nice() { { echo "$1" > "/proc/$prep/autogroup"; } 2>/dev/null || true; }
for k in "${KERNELS[@]}"; do
  t0=$SECONDS
  ready "$k" || prep_nice 0
  while ! ready "$k" && kill -0 "$prep" 2>/dev/null; do sleep 5; done
  prep_nice 19
  if ! ready "$k"; then
    wait "$prep"
    prc=$?
    echo "test-vm-all: preparing kernel $k failed (exit $prc); the end of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    [ $rc -ne 0 ] || rc=1
    break
  fi
  echo "test-vm-all: kernel $k: ready; waited $((SECONDS - t0)) s for it after the tests before"
  krc=0
  bash scripts/test-kernels.sh --no-summary $QUICK "$k" || krc=$?
  [ $rc -ne 0 ] || rc=$krc
done
echo "test-vm-all: the preparation:"
sed 's/^/  /' "$LOG" | grep -E 'kernel [a-z-]+: |kernel: |built in|fetched|error|failed' || true
bash scripts/vm-summary.sh "$SUMMARY"
echo "test-vm-all: rc $rc in $((SECONDS - started)) s"
exit $rc
