# Planner mode under dvfs (docs/planner.md, "Kernel path"): scx_tt --planner dvfs --planner-open-loop enforces
# planner_dvfs.json (one managed CPU, tt-a 15 of every 50 slots and tt-b 30 of every 100, 10 ms
# slots, frame 100) with --control and --trace; after 2 s `scx_tt ctl` asks the status, a swap
# to bss (exit 0, the reply names from_slot) and the status again; scx_tt runs on to tt.duration_s (default 5). Leaves the trace, the summary, every reply
# and results (exit codes, sched_ext state, socket left).
# --planner-open-loop: the checks expect the worst-case planner's decisions; the closed loop
# gives a slot's lost time back from spare capacity, so its owners can differ from these in
# slots after a late tick (planner_loop judges the closed loop by replaying its log).
. /tt/lib.sh
DEFAULT_DURATION_S=5
PLAN=$HERE/planner_dvfs.json

start_control_run dvfs 1 --table $PLAN --planner dvfs --planner-open-loop --planner-log $OUT/dvfs.plog
sleep 2
ctl status_dvfs status
ctl swap set-policy bss
ctl status_bss status
stop_scx_tt dvfs 2
exit 0
