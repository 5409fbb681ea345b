# bench/lateness.rs: slot-start lateness of scx_tt's BPF slot timer and of the userspace
# SCHED_FIFO timer baseline, on the same slot grid and CPU (1), at 1 ms and 10 ms slots, with
# CPU 1 kept busy in both cases. kernel.bpf_stats_enabled=1 so scx_tt reports BPF time per tick.
# Leaves bpf_SLOT.json (scx_tt summary) and baseline_SLOT.json. Argument: tt.duration_s (10).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-10}
echo 1 > /proc/sys/kernel/bpf_stats_enabled
result bpf_stats_enabled "$(cat /proc/sys/kernel/bpf_stats_enabled)"
for slot in 1000 10000; do
  run_scx_tt "bpf_$slot" --table /tt/plans/lateness_${slot}us.json --duration-s "$D" \
    --summary-json $OUT/bpf_$slot.json
  taskset -c 1 sh -c 'while :; do :; done' &
  load=$!
  tt_timer_baseline --cpu 1 --slot-us $slot --duration-s "$D" --json $OUT/baseline_$slot.json \
    > $OUT/baseline_$slot.out 2>&1
  result "baseline_${slot}_rc" $?
  cat $OUT/baseline_$slot.out
  kill $load
done
exit 0
