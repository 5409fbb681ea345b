# Helpers for the guest scenarios (sourced by /init and every scenario's guest.sh).
# /out: every file a scenario leaves here reaches the host (target/vm/runs/LABEL/files/).
OUT=/out

# Value of KEY=VALUE on the kernel command line.
cmdline_arg() {
  tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p" | head -1
}

# arg KEY DEFAULT: the value of KEY=VALUE on the kernel command line, or DEFAULT.
arg() {
  v=$(cmdline_arg "$1")
  echo "${v:-$2}"
}

# The control socket of `ctl`, `start_control_run` and `finish_scx_tt`.
SOCK=/run/tt.sock

# This scenario's folder (tests/vm/scenarios/NAME/ on the host): its guest.sh and plans.
HERE=/tt/scenarios/$(cmdline_arg tt.scenario)

# Guest uptime in milliseconds (10 ms resolution).
uptime_ms() {
  awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime
}

scx_state() {
  cat /sys/kernel/sched_ext/state 2>/dev/null || echo missing
}

# wait_state STATE TIMEOUT_MS: polls every 10 ms; prints the ms it took; fails on timeout.
wait_state() {
  t0=$(uptime_ms)
  while [ "$(scx_state)" != "$1" ]; do
    [ $(( $(uptime_ms) - t0 )) -ge "$2" ] && { echo "timeout"; return 1; }
    usleep 10000
  done
  echo $(( $(uptime_ms) - t0 ))
}

# wait_text FILE TEXT TIMEOUT_MS: polls every 10 ms until FILE contains TEXT (fixed string);
# prints the ms it took; fails on timeout.
wait_text() {
  t0=$(uptime_ms)
  until grep -qF -- "$2" "$1" 2>/dev/null; do
    [ $(( $(uptime_ms) - t0 )) -ge "$3" ] && { echo "timeout"; return 1; }
    usleep 10000
  done
  echo $(( $(uptime_ms) - t0 ))
}

# result KEY VALUE: a scalar result for the host (/out/results.env) and the console.
result() {
  echo "$1=$2" >> $OUT/results.env
  echo "tt-vm: result $1=$2"
}

# Starts a busy loop outside the plan; prints its pid.
start_busy_loop() {
  sh -c 'while :; do :; done' > /dev/null 2>&1 &
  echo $!
}

# start_qemu_spinner NAME [paused]: a real QEMU VM outside the plan (TCG, nested in this TCG
# guest, 1 vCPU spinning in its boot sector, -name NAME,debug-threads=on so that its vCPU thread
# is named `CPU 0/TCG`), its output in /out/NAME.qemu.log; prints its pid. `paused`: QEMU starts
# with its vCPU stopped (-S; its thread exists) and a monitor on the fifos /tmp/NAME.mon.in and
# .out, and qemu_cont NAME lets it run: QEMU's start-up (mmaps, page faults, the translation of
# its firmware, seconds of stalls of the whole TCG guest) then comes before a measured run.
# QEMU_SMP=N gives the VM N vCPUs (threads `CPU 0/TCG` .. `CPU N-1/TCG`); only CPU 0 runs the
# boot sector, the others wait halted for a start-up IPI that never comes (idle vCPU threads).
start_qemu_spinner() {
  # a boot sector that spins: inc ax; jmp $-1 (then the 0x55aa signature); an image per VM:
  # QEMU locks a disk image it writes
  printf '\100\353\375' > "/tmp/$1.img"
  dd if=/dev/zero bs=1 count=507 >> "/tmp/$1.img" 2> /dev/null
  printf '\125\252' >> "/tmp/$1.img"
  set --  "$1" ${2:+-S -chardev pipe,id=mon,path=/tmp/$1.mon -mon chardev=mon,mode=readline}
  if [ $# -gt 1 ]; then
    rm -f "/tmp/$1.mon.in" "/tmp/$1.mon.out"
    mkfifo "/tmp/$1.mon.in" "/tmp/$1.mon.out"
  fi
  name=$1; shift
  qemu-system-x86_64 -name "$name",debug-threads=on -machine pc -accel tcg -nodefaults \
    -display none -smp "${QEMU_SMP:-1}" -m 16 -drive file="/tmp/$name.img",format=raw,if=ide \
    -boot c "$@" > "$OUT/$name.qemu.log" 2>&1 &
  echo $!
}

# qemu_cont NAME: lets the vCPU of a VM that start_qemu_spinner NAME paused run (`cont` on its
# monitor; QEMU holds both fifos open, so the write does not wait for a reader).
qemu_cont() {
  echo cont > "/tmp/$1.mon.in"
}

# wait_qemu_vcpu PID TIMEOUT_MS [N]: waits until QEMU process PID has its N vCPU threads
# (default 1; `CPU K/TCG`, start_qemu_spinner's naming, the last one is CPU N-1); prints the ms
# it took, or "timeout".
wait_qemu_vcpu() {
  t0=$(uptime_ms)
  until grep -qx "CPU $(( ${3:-1} - 1 ))/TCG" /proc/$1/task/*/comm 2> /dev/null; do
    if [ $(( $(uptime_ms) - t0 )) -ge "$2" ]; then echo timeout; return 1; fi
    usleep 10000
  done
  echo $(( $(uptime_ms) - t0 ))
}

# Starts a task outside the plan that spins a few ms, then sleeps 8 ms, over and over: about 100
# wakeups a second, each one a placement decision of the scheduler; prints its pid.
start_waking_loop() {
  sh -c 'while :; do i=0; while [ $i -lt 200 ]; do i=$((i + 1)); done; usleep 8000; done' \
    > /dev/null 2>&1 &
  echo $!
}

# Runs scx_tt with its stdout and stderr in /out/NAME.out and /out/NAME.err (and on the
# console), its exit code in results.env as NAME_rc, and the state after it as NAME_state.
run_scx_tt() {
  name=$1; shift
  echo "tt-vm: run scx_tt $*"
  scx_tt "$@" > $OUT/$name.out 2> $OUT/$name.err
  rc=$?
  cat $OUT/$name.out $OUT/$name.err
  result "${name}_rc" $rc
  result "${name}_state" "$(scx_state)"
  return $rc
}

# start_scx_tt NAME ARGS...: starts scx_tt in the background with its stdout and stderr in
# /out/NAME.out and /out/NAME.err; finish_scx_tt NAME waits for it.
start_scx_tt() {
  name=$1; shift
  echo "tt-vm: run scx_tt $* (background)"
  scx_tt "$@" > $OUT/$name.out 2> $OUT/$name.err &
  SCX_TT_PID=$!
}

# start_control_run NAME WARMUP_S ARGS...: first scx_tt ARGS for WARMUP_S seconds, not
# measured (TCG translates each new guest code path, the scheduler's BPF and the sched_ext
# paths, on first use, which makes the first seconds after attaching slower); then start_scx_tt
# NAME ARGS with the control socket $SOCK, the trace in /out/NAME.trace.jsonl and the summary in
# /out/NAME.json (what the host's Vm::check_control reads), for tt.duration_s seconds
# (DEFAULT_DURATION_S when not given), with the witness recording (finish_scx_tt NAME stops it:
# /out/NAME.witness). Returns once sched_ext reads `enabled` (NAME_enable_ms: how long after
# the start; "timeout" after 120 s) and the control socket answers (NAME_control_ms, after that).
start_control_run() {
  # run_scx_tt and start_scx_tt set the (global) name: keep this one apart.
  control_run=$1 warmup_s=$2; shift 2
  run_scx_tt warmup "$@" --duration-s "$warmup_s"
  witness_start && WITNESS_ON=1
  start_scx_tt "$control_run" "$@" \
    --duration-s "$(bounded_duration_s "$(arg tt.duration_s "$DEFAULT_DURATION_S")")" \
    --control "$SOCK" --trace "$OUT/$control_run.trace.jsonl" \
    --summary-json "$OUT/$control_run.json"
  # the scenario's sleeps count from the attach, not from the start: the load (the kernel's
  # verifier, seconds under TCG) would otherwise eat into them
  result "${control_run}_enable_ms" "$(wait_state enabled 120000)"
  result "${control_run}_control_ms" "$(wait_control 60000)"
  run_window_start "$(arg tt.duration_s "$DEFAULT_DURATION_S")"
}

# wait_control TIMEOUT_MS: waits until the control socket $SOCK answers a `status` (each try
# waits up to 5 s for its reply); prints the ms it took, or "timeout". Attached is not yet
# answering: on a slow host the first requests of a scenario timed out (`ctl`'s 10 s) while the
# daemon was still starting its planner (admit, 2026-11-29).
wait_control() {
  t0=$(uptime_ms)
  until scx_tt ctl --socket "$SOCK" --timeout-s 5 status > /dev/null 2>&1; do
    [ $(( $(uptime_ms) - t0 )) -ge "$1" ] && { echo "timeout"; return 1; }
    sleep 0.1
  done
  echo $(( $(uptime_ms) - t0 ))
}

# A run whose scenario acts on it while it runs (control requests, a hotplug) must outlast the
# scenario's last step by a margin its checks need, however long the steps took. Each step costs
# host-dependent time (every `ctl` is a new process, every attach a verification, both slow under
# TCG on a loaded host), so a fixed --duration-s that fits on a quiet host ends the run before
# the steps on a loaded one (seen: planner_admit's last status came after the run had ended). So
# such a run gets a --duration-s it never reaches (bounded_duration_s: only a scenario that hangs
# meets it), and stop_scx_tt ends it with SIGTERM (what Ctrl-C does: detach, summary, exit 0) at
# the later of its nominal end, D seconds after the attach (run_window_start D), and TAIL_S
# seconds after the call. How far a run went past its nominal end is a result,
# NAME_extended_ms, which the host prints (0 on a host fast enough for the nominal length).

# bounded_duration_s D: the --duration-s of a run that stop_scx_tt ends.
bounded_duration_s() {
  echo $(( $1 * 3 + 60 ))
}

# run_window_start D: the run just attached (call it after wait_state enabled) and should last D
# seconds (stop_scx_tt).
run_window_start() {
  RUN_START_MS=$(uptime_ms) RUN_NOMINAL_S=$1
}

# stop_scx_tt NAME TAIL_S: ends the scx_tt of start_scx_tt at the later of its nominal end and
# TAIL_S seconds from now, with SIGTERM, then finish_scx_tt NAME.
stop_scx_tt() {
  now=$(uptime_ms)
  # (+ 0.5 s: slot 0 comes a little after the attach, and a --duration-s run ran D s from it)
  end=$(( RUN_START_MS + RUN_NOMINAL_S * 1000 + 500 ))
  min=$(( now + $2 * 1000 ))
  if [ "$end" -lt "$min" ]; then
    result "${1}_extended_ms" $(( min - end ))
    end=$min
  else
    result "${1}_extended_ms" 0
  fi
  usleep $(( (end - now) * 1000 ))
  kill -TERM "$SCX_TT_PID" 2> /dev/null
  finish_scx_tt "$1"
}

# finish_scx_tt NAME: waits for the scx_tt of start_scx_tt; its exit code goes into the results
# as NAME_rc, the state after it as NAME_state, its output to the console, and whether the
# control socket $SOCK is left as socket_left (yes/no).
finish_scx_tt() {
  wait $SCX_TT_PID
  result "${1}_rc" $?
  [ -n "$WITNESS_ON" ] && { witness_stop "$1"; WITNESS_ON=""; }
  result "${1}_state" "$(scx_state)"
  cat $OUT/$1.out $OUT/$1.err
  [ -e "$SOCK" ] && result socket_left yes || result socket_left no
}

# ctl NAME ARGS...: one `scx_tt ctl --socket $SOCK` request; the reply goes to NAME.reply,
# stderr to NAME.err, the exit code into the results as NAME_rc.
ctl() {
  name=$1; shift
  scx_tt ctl --socket "$SOCK" "$@" > "$OUT/$name.reply" 2> "$OUT/$name.err"
  rc=$?
  echo "tt-vm: ctl $*: rc $rc"
  cat "$OUT/$name.reply" "$OUT/$name.err"
  result "${name}_rc" $rc
}

# The second serial port, which carries /out to the host (a variable so that the harness's
# self-test, tests/vm/scenarios/smoke/check.rs, can run send_out_files on the host).
TT_FILES_TTY=/dev/ttyS1

# Sends every file in /out to the host over $TT_FILES_TTY, byte for byte: per file
# "=== tt-file NAME begin", the file's bytes, then "=== tt-file NAME end"; a non-empty file
# whose last byte is not a newline is followed by a newline (so that the end marker starts a
# line) and "=== tt-file NAME end noeol", which tells the host (run.sh extract_files) to drop
# that newline. A file over GZ_MIN_BYTES goes gzip'd and in base64 instead, between
# "=== tt-file NAME begin gz64" and "=== tt-file NAME end gz64": the emulated UART moves about
# 20-100 KB/s, and the witnesses (up to 11 MB, text) shrink about 8x, which took minutes
# off the VM suite (on PREEMPT_RT an 11 MB send outlasted the 400 s timeout, 2026-11-29).
# The tty is switched to raw first: its default output processing would add a \r before every
# newline. Then "=== tt-files complete".
GZ_MIN_BYTES=16384
send_out_files() {
  if [ -c "$TT_FILES_TTY" ]; then
    stty -F "$TT_FILES_TTY" raw -echo \
      || echo "tt-vm: warning: stty raw $TT_FILES_TTY failed: the host then drops a carriage return at the end of every line"
  fi
  for f in $OUT/*; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    if [ "$(wc -c < "$f")" -gt "$GZ_MIN_BYTES" ]; then
      echo "=== tt-file $name begin gz64"
      gzip -c "$f" | base64
      echo "=== tt-file $name end gz64"
      continue
    fi
    echo "=== tt-file $name begin"
    cat "$f"
    if [ -s "$f" ] && [ "$(tail -c 1 "$f" | wc -l)" -eq 0 ]; then
      echo
      echo "=== tt-file $name end noeol"
    else
      echo "=== tt-file $name end"
    fi
  done > "$TT_FILES_TTY"
  # Closing the tty above waited for its output to drain; this marker tells the host that
  # every file arrived (>>: the self-test's $TT_FILES_TTY is a regular file).
  echo "=== tt-files complete" >> "$TT_FILES_TTY"
}

# The witness (docs/vm-harness.md, "The witness"): the kernel's own scheduling events on every
# CPU, recorded by ftrace, not by scx_tt: sched_switch, sched_wakeup, sched_wakeup_new,
# sched_process_fork, sched_migrate_task (to explain how a foreign task reached a managed CPU) and the hrtimer expiries of BPF timers (bpf_timer_cb), time-stamped
# with the `mono` trace clock (CLOCK_MONOTONIC, the clock of scx_tt's t0_ns). witness_start clears and starts it; witness_stop NAME stops it, writes the
# events to /out/NAME.witness and the per-CPU buffer overruns to the results as
# NAME_witness_lost (must be 0: a full buffer would hide events), and the pids of the kernel
# threads seen at start and stop to /out/NAME.kthreads. WITNESS_KB: buffer per CPU.
TRACING=/sys/kernel/tracing
witness_start() {
  [ -e $TRACING/trace ] || { echo "tt-vm: witness: no tracefs at $TRACING"; return 1; }
  echo 0 > $TRACING/tracing_on
  echo mono > $TRACING/trace_clock
  echo "${WITNESS_KB:-32768}" > $TRACING/buffer_size_kb
  echo > $TRACING/trace
  for e in sched_switch sched_wakeup sched_wakeup_new sched_process_fork sched_migrate_task; do
    echo 1 > $TRACING/events/sched/$e/enable
  done
  # When the scheduler's BPF timers really fired (the kernel's hrtimer, not scx_tt's own
  # lateness records): the witness explains an owner's run past a boundary by it. Filtered to
  # bpf_timer_cb when the kernel takes a pointer filter, else every hrtimer (the parser keeps
  # bpf_timer_cb's).
  hr=$TRACING/events/timer/hrtimer_expire_entry
  if [ -d $hr ]; then
    addr=$(awk '$3 == "bpf_timer_cb" { print $1; exit }' /proc/kallsyms)
    [ -n "$addr" ] && echo "function == 0x$addr" > $hr/filter 2>/dev/null
    echo 1 > $hr/enable
  fi
  echo 1 > $TRACING/tracing_on
  : > /tmp/witness.kthreads
  witness_kthreads
}
# Appends the pids of kernel threads (kthreadd, pid 2, and its children) to /tmp/witness.kthreads.
# One grep over every status file (a process gone meanwhile is skipped), not an awk per
# process (40 ms each under TCG on a busy host).
witness_kthreads() {
  echo 2 >> /tmp/witness.kthreads
  grep -H '^PPid:' /proc/[0-9]*/status 2>/dev/null \
    | awk -F'[/:]' '{ gsub(/[ \t]/, "", $NF) } $NF == "2" { print $3 }' >> /tmp/witness.kthreads
}
# mark_lines FILE: each line of stdin to ftrace's trace_marker, one write a line (the trace's
# timestamp is when the line reached this reader), and appended to FILE. awk keeps the marker
# open and reads the pipe a buffer at a time; the `while read` loop it replaces read a byte per
# system call and reopened trace_marker for each line, and under TCG on a slow host it fell
# seconds behind a run's -v lines (demos_seq_power, 2026-11-29: 2.4 s at the median, at twice
# the reference host's calibration; scx_tt's own lateness was 68 ms).
mark_lines() {
  awk -v tm="$TRACING/trace_marker" -v out="$1" '{ print > tm; fflush(tm); print >> out }'
}
# witness_mark pause|resume: brackets a window in which the scenario takes the scheduler away
# on purpose (a restart); the witness does not judge the slots it overlaps.
witness_mark() {
  echo "tt-witness $1" > $TRACING/trace_marker
}
witness_stop() {
  echo 0 > $TRACING/tracing_on
  lost=0
  for s in $TRACING/per_cpu/cpu*/stats; do
    n=$(awk '/^overrun:|^dropped events:/ { s += $NF } END { print s + 0 }' "$s")
    lost=$((lost + n))
  done
  result "${1}_witness_lost" "$lost"
  grep -v '^#' $TRACING/trace > "$OUT/$1.witness"
  witness_kthreads
  sort -un /tmp/witness.kthreads > "$OUT/$1.kthreads"
  echo "tt-vm: witness $1: $(wc -l < "$OUT/$1.witness") events, $lost lost"
  for e in sched_switch sched_wakeup sched_wakeup_new sched_process_fork sched_migrate_task; do
    echo 0 > $TRACING/events/sched/$e/enable
  done
  if [ -d $TRACING/events/timer/hrtimer_expire_entry ]; then
    echo 0 > $TRACING/events/timer/hrtimer_expire_entry/enable
    echo 0 > $TRACING/events/timer/hrtimer_expire_entry/filter
  fi
  echo > $TRACING/trace
}

# measured_run RUN PLAN SECONDS [ARGS...]: scx_tt on PLAN for SECONDS with the witness,
# --trace $OUT/RUN.trace.jsonl and --summary-json $OUT/RUN.json (and ARGS). No warm-up run:
# every attach and detach of a sched_ext scheduler flips static keys, and under TCG such a code
# patch sometimes oopses the guest (int3 in update_rq_clock, retried by run.sh), so a scenario
# keeps them few; the checks skip the first second instead (TCG translating new paths).
measured_run() {
  local run=$1 plan=$2 secs=$3
  shift 3
  rm -f "$OUT/$run.trace.jsonl" "$OUT/$run"-*.log
  witness_start
  run_scx_tt "$run" --table "$plan" --duration-s "$secs" --trace "$OUT/$run.trace.jsonl" \
    --summary-json "$OUT/$run.json" "$@"
  witness_stop "$run"
}
