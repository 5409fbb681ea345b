#!/bin/bash
# Runs VM tests on kernels other than `default` (issue 32, docs/vm-harness.md "Kernels").
#
# Usage: test-kernels.sh [--all|--quick] [--no-summary] KERNEL...
#   For each KERNEL (rt, lts, lts-rt; tests/vm/kernel.sh fetches or builds it, cached), boots the
#   VMs with SCX_TT_VM_KERNEL=KERNEL and runs the kernel's smoke test, then the core set that
#   judges the kernel side with the witness (CORE below); --quick the quick core set instead
#   (QUICK below: what make test runs on each kernel); --all runs the whole suite instead,
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
# The quick core set (make test, scripts/test-vm-all.sh): the slot clock and its faults, the
# table's delivery by the witness on two and three CPUs, a planner admission over the socket and
# an RT preemption (6 tests, about 5 min a kernel). signals, switch, restart and admit (about
# 7 min a kernel more) run on every kernel in make test-kernels; they run in make test on the
# default kernel. The whole core set on three kernels had make test's fresh-clone CI run out of
# its 90 min (2026-11-28).
QUICK=(delivery faults planner preempt)
# ... and on a PREEMPT_RT kernel without the helper-thread clock's own delivery test: there every
# test runs on that clock (the verifier refuses bpf_timer), so the three-CPU delivery test is it.
QUICK_RT_SKIP=(delivery::the_helper_thread_slot_clock_enforces_the_plan_as_the_bpf_timer_does)
QUICK_ON=""
CORE_SKIP=(delivery::demo_tasks_get_their_slots_on_one_cpu_even_with_a_loaded_housekeeping_cpu)
KERNEL_SMOKE=smoke::guest_kernel_has_sched_ext_and_every_binary_runs
ALL=""
SUMMARY=1
KERNELS=()
for a in "$@"; do
  case $a in
    --all) ALL=1 ;;
    --quick) CORE=("${QUICK[@]}"); QUICK_ON=1 ;;
    --no-summary) SUMMARY="" ;;
    default|rt|lts|lts-rt) KERNELS+=("$a") ;;
    *) echo "test-kernels: unknown kernel or flag '$a' (rt, lts, lts-rt, default; --all, --quick)" >&2
       exit 2 ;;
  esac
done
[ ${#KERNELS[@]} -gt 0 ] || { echo "usage: test-kernels.sh [--all|--quick] KERNEL..." >&2; exit 2; }

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
        --skip smoke --skip run_dir --skip scale:: || krc=$?
    else
      skip=("${CORE_SKIP[@]}")
      if [ -n "$QUICK_ON" ] && [[ $k == *rt ]]; then
        CORE_SKIP+=("${QUICK_RT_SKIP[@]}")
      fi
      mapfile -t tests < <(names "${CORE[@]}")
      CORE_SKIP=("${skip[@]}")
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
