# bench/lateness.rs: slot-start lateness of scx_tt's BPF slot timer and of the userspace
# SCHED_FIFO timer baseline, on the same slot grid and CPU (1), at 1 ms and 10 ms slots, with
# CPU 1 kept busy in both cases (scx_tt with --guard-us 0: its guard band would otherwise idle
# CPU 1 before every other boundary, and a timer that wakes an idle vCPU is not comparable to
# one that interrupts a busy one). With kernel.bpf_stats_enabled=1, scx_tt reports its BPF time
# per tick, and two bpftool snapshots of every BPF program taken a known time apart while it
# runs give an independent figure (bpf_SLOT_a.json, bpf_SLOT_b.json, window in results.env).
# Leaves bpf_SLOT.json (scx_tt summary) and baseline_SLOT.json. Argument: tt.duration_s (10).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-10}
echo 1 > /proc/sys/kernel/bpf_stats_enabled
result bpf_stats_enabled "$(cat /proc/sys/kernel/bpf_stats_enabled)"
for slot in 1000 10000; do
  scx_tt --table $HERE/lateness_${slot}us.json --duration-s "$D" --guard-us 0 \
    --summary-json $OUT/bpf_$slot.json > $OUT/bpf_$slot.out 2> $OUT/bpf_$slot.err &
  pid=$!
  result "bpf_${slot}_enable_ms" "$(wait_state enabled 30000)"
  sleep $(( D / 3 ))
  t_a=$(uptime_ms)
  bpftool -j prog show > $OUT/bpf_${slot}_a.json
  sleep $(( D / 3 ))
  bpftool -j prog show > $OUT/bpf_${slot}_b.json
  result "bpf_${slot}_window_ms" $(( $(uptime_ms) - t_a ))
  wait $pid
  result "bpf_${slot}_rc" $?
  cat $OUT/bpf_$slot.out $OUT/bpf_$slot.err

  taskset -c 1 sh -c 'while :; do :; done' &
  load=$!
  tt_timer_baseline --cpu 1 --slot-us $slot --duration-s "$D" --json $OUT/baseline_$slot.json \
    > $OUT/baseline_$slot.out 2>&1
  result "baseline_${slot}_rc" $?
  cat $OUT/baseline_$slot.out
  kill $load
done
exit 0
