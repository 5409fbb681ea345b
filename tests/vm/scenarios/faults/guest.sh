# Item 6 of issue 10 and item 1 of issue 32: a broken slot clock ends the BPF scheduler loudly.
# The BPF test seam (src/bpf/tt_sched.bpf.c, H; SCX_TT_TEST_TIMER_FAULT=CPU:SLOT) breaks managed
# CPU 1's clock, on faults.json (this folder; 10 ms slots). tt.case picks what is broken:
#   timer (default): a real bpf_timer_start fails.
#     rearm: the re-arm for slot tt.fault_slot (default 100, 1 s in) from the slot tick; the run
#            would last 10 s. Leaves rearm.out/.err, rearm.json (--summary-json), rearm_ms (how
#            long scx_tt ran);
#     arm:   slot 0, i.e. arm_timer itself while scx_tt arms the timers. Leaves arm.out/.err.
#     On a PREEMPT_RT kernel there is no BPF timer to break: `refused` instead runs
#     --slot-clock timer, which scx_tt must refuse before it attaches anything.
#   stall: --slot-clock rt (the helper-thread clock, on any kernel): CPU 1's helper stalls from
#     slot tt.fault_slot on, as one descheduled for good would, and the watchdog in ops.tick must
#     end the run. Leaves stall.out/.err, stall.json, stall_ms.
# Each case also leaves NAME_rc and NAME_state (sched_ext's state right after scx_tt exited), and
# kernel_rt (1 on a PREEMPT_RT kernel).
. /tt/lib.sh
P=$HERE
S=$(cmdline_arg tt.fault_slot); S=${S:-100}
CASE=$(cmdline_arg tt.case); CASE=${CASE:-timer}
# as scx_tt decides (src/sched/rt_clock.rs): /sys/kernel/realtime, else the version string
if [ -r /sys/kernel/realtime ]; then RT=$(cat /sys/kernel/realtime)
elif grep -q PREEMPT_RT /proc/sys/kernel/version; then RT=1
else RT=0; fi
result kernel_rt "$RT"
result kernel_release "$(uname -r)"

if [ "$CASE" = stall ]; then
  export SCX_TT_TEST_TIMER_FAULT=1:$S
  t0=$(uptime_ms)
  run_scx_tt stall --table $P/faults.json --slot-clock rt --duration-s 10 \
    --summary-json $OUT/stall.json
  result stall_ms $(( $(uptime_ms) - t0 ))
  exit 0
fi

if [ "$RT" = 1 ]; then
  run_scx_tt refused --table $P/faults.json --slot-clock timer --duration-s 5
  exit 0
fi
export SCX_TT_TEST_TIMER_FAULT=1:$S
t0=$(uptime_ms)
run_scx_tt rearm --table $P/faults.json --duration-s 10 --summary-json $OUT/rearm.json
result rearm_ms $(( $(uptime_ms) - t0 ))

export SCX_TT_TEST_TIMER_FAULT=1:0
run_scx_tt arm --table $P/faults.json --duration-s 5
unset SCX_TT_TEST_TIMER_FAULT
exit 0
