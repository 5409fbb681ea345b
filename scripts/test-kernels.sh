#!/bin/bash
# Runs VM tests on kernels other than `default` (issue 32, docs/vm-harness.md "Kernels").
#
# Usage: test-kernels.sh [--all] KERNEL...
#   For each KERNEL (rt, lts, lts-rt; tests/vm/kernel.sh fetches or builds it, cached), boots the
#   VMs with SCX_TT_VM_KERNEL=KERNEL and runs the smoke tests, then the core set that judges the
#   kernel side with the witness (CORE below); --all runs the whole suite instead
#   (make test-kernel KERNEL=NAME). The kernels are prepared first and the initramfs is packed
#   after them (it carries every cached kernel's config), so a build failure stops the run before
#   any test. Each test's row in target/vm/summary.tsv is named "TEST @KERNEL". Exit status: the
#   first failing kernel's, after every kernel ran.
set -uo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
# The core set: the modules whose tests judge the kernel side (delivery, isolation, signals and
# faults, table switches, restarts, planner admissions, RT preemption).
CORE=(delivery signals faults switch restart planner admit preempt)
ALL=""
KERNELS=()
for a in "$@"; do
  case $a in
    --all) ALL=1 ;;
    default|rt|lts|lts-rt) KERNELS+=("$a") ;;
    *) echo "test-kernels: unknown kernel or flag '$a' (rt, lts, lts-rt, default; --all)" >&2
       exit 2 ;;
  esac
done
[ ${#KERNELS[@]} -gt 0 ] || { echo "usage: test-kernels.sh [--all] KERNEL..." >&2; exit 2; }

for k in "${KERNELS[@]}"; do
  t0=$SECONDS
  bash tests/vm/kernel.sh --kernel "$k" || { echo "test-kernels: kernel $k: not available" >&2; exit 1; }
  echo "test-kernels: kernel $k ready in $((SECONDS - t0)) s"
done
$CARGO test --release --test vm --no-run 2>/dev/null || $CARGO test --release --test vm --no-run
bash tests/vm/mkinitrd.sh || exit 1

# The exact names of the tests of the core modules (cargo's filters match substrings, and
# `admit::` is inside `planner_admit::`); not `admit::run_dir`, a by-hand analyser that make
# test-vm skips too.
names() {
  $CARGO test --release --test vm -- --ignored --list 2>/dev/null \
    | sed -n 's/: test$//p' \
    | grep -E "^($(IFS='|'; echo "$*"))::" | grep -vE '^smoke::|::run_dir$'
}

rc=0
for k in "${KERNELS[@]}"; do
  t0=$SECONDS
  export SCX_TT_VM_KERNEL=$k
  echo "=== test-kernels: $k: smoke"
  krc=0
  $CARGO test --release --test vm smoke -- --ignored --nocapture || krc=$?
  if [ $krc -eq 0 ]; then
    if [ -n "$ALL" ]; then
      echo "=== test-kernels: $k: every VM test"
      $CARGO test --release --test vm -- --ignored --test-threads=1 --nocapture \
        --skip smoke --skip run_dir || krc=$?
    else
      mapfile -t tests < <(names "${CORE[@]}")
      echo "=== test-kernels: $k: the core set (${#tests[@]} tests: ${CORE[*]})"
      [ ${#tests[@]} -gt 0 ] || { echo "test-kernels: no core tests found" >&2; krc=1; }
      [ $krc -ne 0 ] || $CARGO test --release --test vm -- --ignored --test-threads=1 \
        --nocapture --exact "${tests[@]}" || krc=$?
    fi
  fi
  echo "=== test-kernels: $k: rc $krc in $((SECONDS - t0)) s"
  [ $rc -ne 0 ] || rc=$krc
done
bash scripts/vm-summary.sh
exit $rc
