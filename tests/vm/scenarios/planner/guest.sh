# Planner mode (docs/planner.md, "Kernel path"): scx_tt --planner bss --planner-open-loop enforces planner.json
# (one managed CPU, tt-a and tt-b with 60 % spare capacity, 10 ms slots, frame 100) with
# --control and --trace; after 2 s `scx_tt ctl admit-firm` sends a firm job that cannot fit
# (rejected: exit 3), a request for an unknown task (exit 1) and 20 slots for tt-a due in 60
# slots (accepted: exit 0); scx_tt runs on to tt.duration_s (default 6). Leaves the trace, the
# summary, every reply and results (exit codes, sched_ext state, socket left).
# --planner-open-loop: the checks expect the worst-case planner's decisions; the closed loop
# gives a slot's lost time back from spare capacity, so its owners can differ from these in
# slots after a late tick (planner_loop judges the closed loop by replaying its log).
. /tt/lib.sh
DEFAULT_DURATION_S=6
PLAN=$HERE/planner.json

start_control_run planner 2 --table $PLAN --planner bss --planner-open-loop --timeline-slots 100 \
  --planner-log $OUT/planner.plog
sleep 2
ctl status status
ctl reject admit-firm --task tt-a --wcet-slots 40 --deadline-slots 30
ctl bad admit-firm --task nope --wcet-slots 2 --deadline-slots 30
ctl accept admit-firm --task tt-a --wcet-slots 20 --deadline-slots 60
ctl switch switch-table $PLAN
stop_scx_tt planner 2
exit 0
