# Item 6 of issue 10: a broken slot clock ends the BPF scheduler loudly. The BPF test seam
# (src/bpf/tt_sched.bpf.c, H; SCX_TT_TEST_TIMER_FAULT=CPU:SLOT) makes a real bpf_timer_start
# on managed CPU 1 fail, on faults.json (this folder; 10 ms slots):
#   rearm: the re-arm for slot tt.fault_slot (default 100, 1 s in) from the slot tick; the run
#          would last 10 s. Leaves rearm.out/.err, rearm.json (--summary-json), rearm_ms (how
#          long scx_tt ran);
#   arm:   slot 0, i.e. arm_timer itself while scx_tt arms the timers. Leaves arm.out/.err.
# Each case also leaves NAME_rc and NAME_state (sched_ext's state right after scx_tt exited).
. /tt/lib.sh
P=$HERE
S=$(cmdline_arg tt.fault_slot); S=${S:-100}

export SCX_TT_TEST_TIMER_FAULT=1:$S
t0=$(uptime_ms)
run_scx_tt rearm --table $P/faults.json --duration-s 10 --summary-json $OUT/rearm.json
result rearm_ms $(( $(uptime_ms) - t0 ))

export SCX_TT_TEST_TIMER_FAULT=1:0
run_scx_tt arm --table $P/faults.json --duration-s 5
unset SCX_TT_TEST_TIMER_FAULT
exit 0
