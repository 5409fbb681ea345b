# Periodic admissions in planner mode (docs/planner.md, "Kernel path"): scx_tt --planner bss --planner-open-loop
# enforces planner_admit.json (one managed CPU, tt-a and tt-b in the table, tt-v and tt-w
# declared "start": "admitted", 10 ms slots, frame 20) with --control and --trace. After 2 s
# `scx_tt ctl` admits tt-w (too big: rejected, exit 3), tt-a (not declared admitted: exit 1) and
# tt-v (accepted: exit 0), asks the status; 2 s later removes tt-v (exit 0), removes it again
# (exit 1) and asks the status; scx_tt runs on to tt.duration_s (default 6). Leaves the trace,
# the summary, every reply and results (exit codes, sched_ext state, socket left).
# --planner-open-loop: the checks expect the worst-case planner's decisions; the closed loop
# gives a slot's lost time back from spare capacity, so its owners can differ from these in
# slots after a late tick (planner_loop judges the closed loop by replaying its log).
# Beside it `scx_tt --monitor 1` (started first, stopped 2 s after the run) prints what the
# runs serve on the default stats socket into monitor.out and monitor.err.
. /tt/lib.sh
DEFAULT_DURATION_S=6
PLAN=$HERE/planner_admit.json

scx_tt --monitor 1 > $OUT/monitor.out 2> $OUT/monitor.err &
MONITOR_PID=$!
sleep 1
result monitor_state "$(scx_state)"
start_control_run admit 1 --table $PLAN --planner bss --planner-open-loop --timeline-slots 40 \
  --planner-log $OUT/admit.plog
sleep 2
ctl reject admit-periodic --task tt-w
ctl bad admit-periodic --task tt-a
ctl accept admit-periodic --task tt-v
ctl status status
sleep 2
ctl remove remove --task tt-v
ctl again remove --task tt-v
ctl status2 status
stop_scx_tt admit 1
sleep 2
[ -e /var/run/scx/root/stats ] && result stats_socket_left yes || result stats_socket_left no
kill $MONITOR_PID
wait $MONITOR_PID
cat $OUT/monitor.out $OUT/monitor.err
exit 0
