#!/bin/bash
# Boots the test VM (qemu-system-x86_64, TCG) on one guest scenario and collects its results.
#
# Usage: run.sh --scenario NAME [--smp N] [--timeout-s S] [--tries N] [--out DIR] [--live]
#               [--arg KEY=VALUE]...
#   --arg      extra guest kernel command line argument (scenarios read tt.* arguments)
#   --live     also copy the guest console to stdout while it runs
# Environment: SCX_TT_VM_ACCEL (default tcg,thread=multi), SCX_TT_VM_MEM_MB (1024),
# SCX_TT_VM_BOOT_TIMEOUT_S (90: a guest not in userspace by then is stopped as hung),
# SCX_TT_VM_NICE (-20, see prioritized below), SCX_TT_VM_CPU_PERCENT (a slower host: see slow_host), and the paths of common.sh (the kernel from kernel.sh, the initramfs from mkinitrd.sh, the QEMU from qemu.sh).
#
# Writes into DIR (default target/vm/runs/NAME): try-K.console.log for every try, console.log
# (the last try), files/ (the files the guest sent over its second serial port),
# results.env (scalar results, also in files/), scenario.rc (when the guest completed) and the
# marker file .tt-vm-run, which says that run.sh made the directory.
# DIR is emptied first, but only when it is one of run.sh's: a directory with the marker, or
# any directory inside the run directories target/vm/runs/ ($VM_DIR/runs, the default DIRs and
# the Rust harness's, with or without the marker of older runs). Any other DIR that exists must
# be an empty directory; else run.sh refuses with exit code 2 and deletes nothing.
#
# A try whose guest crashed (Oops, panic) or hung before reaching userspace (no boot marker) is
# retried, up to --tries times (default 4: 3 retries; TCG's multi-threaded mode has a
# text-patching race, see docs/vm-harness.md), and every retry is reported. A guest that hung
# after it booted (no completion marker before the timeout) is not retried: that is a defect.
# Exit code: the scenario's own exit code when the guest completed, 3 when every try crashed or
# hung, 2 when DIR is not run.sh's to replace (see above), 1 for another harness error.
set -euo pipefail
source "$(dirname "$0")/common.sh"

SCENARIO="" SMP=2 TIMEOUT_S=120 TRIES=4 OUT="" LIVE=0 ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --scenario) SCENARIO=$2; shift 2 ;;
    --smp) SMP=$2; shift 2 ;;
    --timeout-s) TIMEOUT_S=$2; shift 2 ;;
    --tries) TRIES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --live) LIVE=1; shift ;;
    --arg) ARGS+=("$2"); shift 2 ;;
    *) die "run.sh: unknown argument $1" ;;
  esac
done
[ -n "$SCENARIO" ] || die "run.sh: --scenario is required"
OUT=${OUT:-$VM_DIR/runs/$SCENARIO}
# Marks every run directory, so that a later run may replace it (and only such a directory).
RUN_MARKER=.tt-vm-run
# Whether directory $1 is run.sh's to replace: it has the marker, or it lies inside
# $VM_DIR/runs/ (the default run directories, also those of runs older than the marker).
is_run_dir() {
  [ -e "$1/$RUN_MARKER" ] && return 0
  local runs dir
  runs=$(realpath -m "$VM_DIR/runs") dir=$(realpath -m "$1")
  [[ $dir == "$runs"/?* ]]
}
refuse_out() {
  echo "vm: error: --out $OUT $1; run.sh deletes and replaces only its own run directories (with the marker file $RUN_MARKER, or inside $VM_DIR/runs/) and empty ones: remove it yourself or choose another --out" >&2
  exit 2
}
if [ -L "$OUT" ]; then
  refuse_out "is a symbolic link"
elif [ -e "$OUT" ]; then
  [ -d "$OUT" ] || refuse_out "exists and is not a directory"
  entries=$(ls -A "$OUT") || die "run.sh: cannot list --out $OUT"
  [ -z "$entries" ] || is_run_dir "$OUT" \
    || refuse_out "exists, is not empty and is not a run directory of run.sh (no $RUN_MARKER in it, not inside $VM_DIR/runs/): refusing to delete it"
fi
[ -e "$VMLINUZ" ] || die "no VM kernel at $VMLINUZ: run tests/vm/kernel.sh --kernel $KERNEL_NAME"
# PREEMPT_RT threads the 8250's interrupt; QEMU's ISA UART (the results port) then raises
# interrupts the thread finds nothing pending for, and the kernel's spurious-IRQ check disables
# IRQ 3 ("irq 3: nobody cared") in the middle of the file transfer. noirqdebug turns the check off.
# The RCU stall timeout (21 s in Debian's kernels) is for real hardware; sched_ext ends a BPF
# scheduler on any RCU stall. The resume scenario's guest (three busy processes on two vCPUs)
# under host load left khugepaged (nice 19, no RCU boosting in the cloud kernel: about 1.5 % of
# a CPU by weight) preempted inside an RCU read section for 21 s while scx_tt loaded, under the
# fair class, before it attached; the stall report then ended it 0.36 s after its attach (CI
# run under stress-ng, 2026-11-29). 60 s still reports any stall within a test's time.
KERNEL_APPEND="rcupdate.rcu_cpu_stall_timeout=60"
case $KERNEL_NAME in rt|lts-rt) KERNEL_APPEND="$KERNEL_APPEND noirqdebug" ;; esac
[ -e "$INITRD" ] || die "no initramfs at $INITRD: run tests/vm/mkinitrd.sh"
ACCEL=${SCX_TT_VM_ACCEL:-tcg,thread=multi}
QEMU=$(qemu_bin)
# named in every boot's log line (read from qemu.sh's record, not by running it: a harness
# self-test puts a stand-in QEMU first on PATH)
if [ "$QEMU" = "$QEMU_BACKPORT" ]; then
  QEMU_VERSION=$(cat "$QEMU_DIR/version" 2>/dev/null || echo "backport")
else
  QEMU_VERSION="$QEMU"
fi
MEM_MB=${SCX_TT_VM_MEM_MB:-1024}
# The guest's timing suffers from every other host task competing for its vCPU threads. As
# root, QEMU runs in a session of its own whose scheduler autogroup gets nice -20
# (SCX_TT_VM_NICE; 0 turns this off): with autogroups, a plain `nice` would only count against
# QEMU's own session, not against other sessions' work (parallel builds). Other work slows down
# while a VM runs; it is not starved (this is not a real-time policy).
BOOT_TIMEOUT_S=${SCX_TT_VM_BOOT_TIMEOUT_S:-90}
VM_NICE=${SCX_TT_VM_NICE:--20}
[ "$(id -u)" = 0 ] && [ -e /proc/self/autogroup ] || VM_NICE=0

# Runs a command in a new session (a new autogroup) at nice $VM_NICE.
prioritized() {
  slow_host
  if [ "$VM_NICE" = 0 ]; then "$@"; return; fi
  setsid --wait bash -c 'echo "$1" > /proc/$$/autogroup; shift; exec nice -n "$0" "$@"' \
    "$VM_NICE" "$VM_NICE" "$@"
}

# SCX_TT_VM_CPU_PERCENT=P: a slower host, on purpose. The guest's QEMU runs in a CPU cgroup
# capped at P % of one host CPU per 10 ms period, so that a
# timing check's tolerance can be tried against a host slower than this one (a CI machine
# was, 2026-11-28). Empty: no cap. Needs a cgroup v1 or v2 cpu controller (root).
slow_host() {
  local pct=${SCX_TT_VM_CPU_PERCENT:-} quota
  [ -n "$pct" ] || return 0
  [[ "$pct" =~ ^[0-9]+$ ]] && [ "$pct" -ge 10 ] \
    || die "run.sh: SCX_TT_VM_CPU_PERCENT=$pct: want an integer percentage >= 10"
  quota=$((pct * 100))
  if [ -d /sys/fs/cgroup/cpu ] && [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    local cg=/sys/fs/cgroup/cpu/scx_tt_vm_slow
    mkdir -p "$cg" && echo 10000 > "$cg/cpu.cfs_period_us" && echo "$quota" > "$cg/cpu.cfs_quota_us" \
      && echo "$BASHPID" > "$cg/cgroup.procs" || die "run.sh: cannot cap the CPU in $cg"
  else
    local cg=/sys/fs/cgroup/scx_tt_vm_slow
    mkdir -p "$cg" && echo "$quota 10000" > "$cg/cpu.max" && echo "$BASHPID" > "$cg/cgroup.procs" \
      || die "run.sh: cannot cap the CPU in $cg"
  fi
  log "$SCENARIO: a slower host on purpose: the guest gets at most $pct % of one CPU (SCX_TT_VM_CPU_PERCENT)"
}

rm -rf "$OUT" && mkdir -p "$OUT/files"
echo "run.sh --scenario $SCENARIO, $(date -u '+%F %T') UTC: this directory may be replaced by the next run.sh with this --out" > "$OUT/$RUN_MARKER"

# Splits the second serial port's stream into files/NAME, byte for byte (the guest protocol,
# tests/vm/guest/lib.sh send_out_files): each line between "=== tt-file NAME begin" and
# "=== tt-file NAME end" is written with its newline; after "end noeol" the last line is written
# without it (the guest added that newline so that the end marker starts a line). The guest's
# tty is raw (no \r added); should it not be (the begin line then ends in \r), every line's
# trailing \r is dropped. A file between "begin gz64" and "end gz64" is base64 of its gzip'd
# bytes: it is decoded into files/NAME; one that does not decode is left as files/NAME.gz64
# only (so the file counts as missing, and the harness says so).
extract_files() {
  awk -v dir="$OUT/files" '
    /^=== tt-file [^ ]+ begin( gz64)?\r?$/ {
      gz = / gz64\r?$/; out = dir "/" $3 (gz ? ".gz64" : ""); printf "" > out
      cr = /\r$/; n = 0; next
    }
    out != "" && /^=== tt-file [^ ]+ end( noeol| gz64)?\r?$/ {
      if (n) printf "%s%s", last, (/ noeol\r?$/ ? "" : "\n") > out
      close(out); out = ""; next
    }
    out != "" {
      if (cr) sub(/\r$/, "")
      if (n) printf "%s\n", last > out
      last = $0; n = 1
    }' "$1"
  local z
  for z in "$OUT"/files/*.gz64; do
    [ -e "$z" ] || continue
    if base64 -d < "$z" | gzip -dc > "${z%.gz64}" 2> /dev/null; then
      rm -f "$z"
    else
      rm -f "${z%.gz64}"
      log "$SCENARIO: files/$(basename "${z%.gz64}") did not decode (base64 of gzip); kept as $(basename "$z")"
    fi
  done
}

# One boot. Returns 0 when the guest printed its completion marker and sent all its files.
# A guest that has not reached userspace (the boot marker) within $BOOT_TIMEOUT_S is stopped
# early: MTTCG's silent hangs happen mostly during boot.
boot() {
  local console=$1 serial=$2 raw=$1.raw pidfile=$OUT/qemu.pid t0=$SECONDS stopped=0 tailer=""
  rm -f "$pidfile"
  local cmd=("$QEMU" -accel "$ACCEL" -cpu max -smp "$SMP" -m "$MEM_MB"
    -kernel "$VMLINUZ" -initrd "$INITRD"
    -append "console=ttyS0 quiet panic=-1 oops=panic maxcpus=1 $KERNEL_APPEND tt.scenario=$SCENARIO ${ARGS[*]}"
    -display none -monitor none -serial stdio
    -chardev "file,id=ttout,path=$serial" -device isa-serial,chardev=ttout
    -pidfile "$pidfile" -no-reboot)
  prioritized timeout "$TIMEOUT_S" "${cmd[@]}" < /dev/null > "$raw" 2>&1 &
  local runner=$!
  if [ "$LIVE" = 1 ]; then
    tail -n +1 -f --pid="$runner" "$raw" | tr -d '\r' &
    tailer=$!
  fi
  while kill -0 "$runner" 2>/dev/null; do
    if [ "$stopped" = 0 ] && [ $((SECONDS - t0)) -ge "$BOOT_TIMEOUT_S" ] \
        && ! grep -q '^=== tt-vm: boot' "$raw"; then
      log "$SCENARIO: no boot marker after $BOOT_TIMEOUT_S s: stopping the guest"
      kill "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || kill "$runner"
      stopped=1
    fi
    sleep 1
  done
  wait "$runner" || true
  [ -z "$tailer" ] || wait "$tailer" || true
  tr -d '\r' < "$raw" > "$console" && rm -f "$raw"
  # Timing figures depend on what else the host runs: its load goes into the log.
  log "$SCENARIO: guest ran $((SECONDS - t0)) s (smp $SMP, $ACCEL, QEMU $QEMU_VERSION; host load average $(cut -d' ' -f1-3 /proc/loadavg), nice $VM_NICE)"
  grep -q '^=== tt-vm: done rc=' "$console" && tr -d '\r' < "$serial" | grep -c '^=== tt-files complete' > /dev/null
}

for try in $(seq 1 "$TRIES"); do
  console=$OUT/try-$try.console.log serial=$OUT/try-$try.serial1.raw
  if boot "$console" "$serial" && ! grep -qE 'Oops|Kernel panic|BUG: ' "$console"; then
    cp "$console" "$OUT/console.log"
    extract_files "$serial"
    cp "$OUT/files/results.env" "$OUT/results.env" 2>/dev/null || touch "$OUT/results.env"
    rc=$(sed -n 's/^=== tt-vm: done rc=\([0-9]*\).*/\1/p' "$console" | tail -1)
    echo "$rc" > "$OUT/scenario.rc"
    [ "$try" -gt 1 ] && log "$SCENARIO: completed on try $try of $TRIES"
    log "$SCENARIO: scenario exit code $rc; results in $OUT"
    exit "$rc"
  fi
  cp "$console" "$OUT/console.log"
  if grep -qE 'Oops|Kernel panic|BUG: ' "$console"; then
    log "$SCENARIO: try $try of $TRIES: guest kernel crashed:"
    grep -m3 -E 'Oops|Kernel panic|BUG: |RIP:' "$console" | sed 's/^/    /' >&2
  else
    log "$SCENARIO: try $try of $TRIES: no completion marker, or files incomplete, within ${TIMEOUT_S} s (guest hung); last lines:"
    tail -n 5 "$console" | sed 's/^/    /' >&2
    # A guest that reached userspace and then hung is the scenario's or the scheduler's defect
    # (an RCU stall, a starved CPU), not MTTCG's boot-time race: retrying it only hid it and
    # cost up to TRIES x the timeout (a CI run spent 800 s on one such guest, 2026-11-28).
    if grep -q '^=== tt-vm: boot' "$console"; then
      grep -m3 -E 'rcu.*stall|hung_task|blocked for more than|soft lockup|watchdog' "$console" \
        | sed 's/^/    /' >&2 || true
      log "$SCENARIO: FAILED: the guest hung after it booted (not retried); logs in $OUT"
      exit 3
    fi
  fi
  [ "$try" -lt "$TRIES" ] && log "$SCENARIO: retrying"
done
log "$SCENARIO: FAILED: all $TRIES tries crashed or hung; logs in $OUT"
exit 3
