#!/bin/bash
# Runs VM tests on kernels other than `default` (issue 32, docs/vm-harness.md "Kernels").
#
# Usage: test-kernels.sh [--all] [--no-summary] KERNEL...
#   For each KERNEL (rt, lts, lts-rt; tests/vm/kernel.sh fetches or builds it, cached), boots the
#   VMs with SCX_TT_VM_KERNEL=KERNEL and runs the kernel's smoke test, then the core set that
#   judges the kernel side with the witness (CORE below); --all runs the whole suite instead,
#   every smoke test included (make test-kernel KERNEL=NAME). --no-summary leaves the summary
#   table to the caller (scripts/test-vm-all.sh). The kernels are prepared first and the initramfs is packed
#   after them (it carries every cached kernel's config), so a build failure stops the run before
#   any test. Each test's row in target/vm/summary.tsv is named "TEST @KERNEL". Exit status: the
#   first failing kernel's, after every kernel ran.
set -uo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
# The core set: the modules whose tests judge the kernel side (delivery, isolation, signals and
# faults, table switches, restarts, planner admissions, RT preemption), without CORE_SKIP: the
# delivery test under a loaded housekeeping CPU (80 s; the load is the default kernel's concern,
# the mechanism is the one the two other delivery tests judge). The smoke test of a kernel is
# the one that boots it and checks its sched_ext config; the other smoke tests judge the harness
# (crash, hang, exit code), which does not change with the kernel.
CORE=(delivery signals faults switch restart planner admit preempt)
CORE_SKIP=(delivery::demo_tasks_get_their_slots_on_one_cpu_even_with_a_loaded_housekeeping_cpu)
KERNEL_SMOKE=smoke::guest_kernel_has_sched_ext_and_every_binary_runs
ALL=""
SUMMARY=1
KERNELS=()
for a in "$@"; do
  case $a in
    --all) ALL=1 ;;
    --no-summary) SUMMARY="" ;;
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
    | grep -E "^($(IFS='|'; echo "$*"))::" | grep -vE '^smoke::|::run_dir$' \
    | grep -vxF -f <(printf '%s\n' "${CORE_SKIP[@]}")
}

rc=0
for k in "${KERNELS[@]}"; do
  t0=$SECONDS
  export SCX_TT_VM_KERNEL=$k
  krc=0
  if [ -n "$ALL" ]; then
    echo "=== test-kernels: $k: smoke"
    $CARGO test --release --test vm smoke -- --ignored --nocapture || krc=$?
  else
    echo "=== test-kernels: $k: $KERNEL_SMOKE"
    $CARGO test --release --test vm -- --ignored --nocapture --exact "$KERNEL_SMOKE" || krc=$?
  fi
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
[ -z "$SUMMARY" ] || bash scripts/vm-summary.sh
exit $rc
