# bench/lateness.rs: slot-start lateness of scx_tt's slot clocks and of the userspace
# SCHED_FIFO timer baseline, on the same slot grid and CPU (1), at 1 ms and 10 ms slots, with
# CPU 1 kept busy in both cases (scx_tt with --guard-us 0: its guard band would otherwise idle
# CPU 1 before every other boundary, and a timer that wakes an idle vCPU is not comparable to
# one that interrupts a busy one). With kernel.bpf_stats_enabled=1, scx_tt reports its BPF time
# per tick, and two bpftool snapshots of every BPF program taken a known time apart while it
# runs give an independent figure (bpf_CLOCK_SLOT_a.json, bpf_CLOCK_SLOT_b.json, window in
# results.env).
# Each slot length is measured under every slot clock the kernel allows (CLOCKS, result
# `clocks`): the bpf_timer (`timer`) and the helper-thread clock (`rt`, scx_tt --slot-clock rt);
# a PREEMPT_RT kernel refuses bpf_timer, so there only `rt`. Under `rt` the helper thread's own
# CPU time over the bpftool window (schedstat of the thread named tt-clock/1, before and after:
# results rt_SLOT_thread_ns_a/_b) is the clock's cost beside its BPF time.
# Leaves bpf_CLOCK_SLOT.json (scx_tt summary) and baseline_SLOT.json. Argument: tt.duration_s
# (10).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-10}
echo 1 > /proc/sys/kernel/bpf_stats_enabled
result bpf_stats_enabled "$(cat /proc/sys/kernel/bpf_stats_enabled)"
# as scx_tt decides (src/sched/rt_clock.rs): /sys/kernel/realtime, else the version string
if [ -r /sys/kernel/realtime ]; then RT=$(cat /sys/kernel/realtime)
elif grep -q PREEMPT_RT /proc/sys/kernel/version; then RT=1
else RT=0; fi
if [ "$RT" = 1 ]; then CLOCKS="rt"; else CLOCKS="timer rt"; fi
result clocks "$CLOCKS"

# CPU time (ns) of scx_tt PID's thread tt-clock/1 (0 when there is none): schedstat's exact
# run time (CONFIG_SCHED_INFO), else utime + stime of its stat, sampled at the scheduler tick
# in clock ticks (the 6.12 builds have no SCHED_INFO); result thread_time_source says which.
TICK_NS=$(( 1000000000 / $(getconf CLK_TCK 2>/dev/null || echo 100) ))
clock_thread_ns() {
  local t f
  for t in /proc/$1/task/*; do
    [ "$(cat $t/comm 2>/dev/null)" = "tt-clock/1" ] || continue
    if [ -r $t/schedstat ]; then
      result thread_time_source schedstat > /dev/null
      cut -d' ' -f1 $t/schedstat
    else
      result thread_time_source stat > /dev/null
      # fields 14 and 15 (utime, stime) after the ")" that ends the command name
      f=$(sed 's/.*) //' $t/stat)
      set -- $f
      echo $(( (${12} + ${13}) * TICK_NS ))
    fi
    return
  done
  echo 0
}

for slot in 1000 10000; do
  for clock in $CLOCKS; do
    scx_tt --table $HERE/lateness_${slot}us.json --duration-s "$D" --guard-us 0 \
      --slot-clock $clock --summary-json $OUT/bpf_${clock}_$slot.json \
      > $OUT/bpf_${clock}_$slot.out 2> $OUT/bpf_${clock}_$slot.err &
    pid=$!
    result "bpf_${clock}_${slot}_enable_ms" "$(wait_state enabled 30000)"
    sleep $(( D / 3 ))
    t_a=$(uptime_ms)
    result "${clock}_${slot}_thread_ns_a" "$(clock_thread_ns $pid)"
    bpftool -j prog show > $OUT/bpf_${clock}_${slot}_a.json
    sleep $(( D / 3 ))
    bpftool -j prog show > $OUT/bpf_${clock}_${slot}_b.json
    result "${clock}_${slot}_thread_ns_b" "$(clock_thread_ns $pid)"
    result "bpf_${clock}_${slot}_window_ms" $(( $(uptime_ms) - t_a ))
    wait $pid
    result "bpf_${clock}_${slot}_rc" $?
    cat $OUT/bpf_${clock}_$slot.out $OUT/bpf_${clock}_$slot.err
  done

  taskset -c 1 sh -c 'while :; do :; done' &
  load=$!
  tt_timer_baseline --cpu 1 --slot-us $slot --duration-s "$D" --json $OUT/baseline_$slot.json \
    > $OUT/baseline_$slot.out 2>&1
  result "baseline_${slot}_rc" $?
  cat $OUT/baseline_$slot.out
  kill $load
done
exit 0
