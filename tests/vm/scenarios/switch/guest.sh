# Table switch at run time over the control socket (docs/control.md): scx_tt enforces
# switch_a.json with --control and --trace; after 3 s `scx_tt ctl` sends a switch to a plan with
# another slot_us (refused), then to switch_b.json (same tasks, other timing); a second scx_tt
# on the same socket must refuse to start; 1 s later a switch back to switch_a.json; scx_tt
# runs on to tt.duration_s (default 9). Leaves
# the trace, the summary, every reply, and results (exit codes, socket mode, socket left).
# First, a run that fails after creating its socket must remove it.
. /tt/lib.sh
DEFAULT_DURATION_S=9
PLANS=$HERE

foreign=$(start_busy_loop)
# An error after the socket was created (guard band longer than the slot): the socket goes too.
run_scx_tt errpath --table $PLANS/switch_a.json --guard-us 20000 --control /run/tt-err.sock
[ -e /run/tt-err.sock ] && result errpath_socket_left yes || result errpath_socket_left no
start_control_run switch 3 --table $PLANS/switch_a.json --timeline-slots 48
sleep 3
result socket_mode "$(stat -c %a $SOCK 2>/dev/null || echo missing)"
ctl status_before status
ctl bad switch-table $PLANS/switch_bad_slot_us.json
ctl good switch-table $PLANS/switch_b.json
run_scx_tt second --table $PLANS/switch_a.json --duration-s 1 --control $SOCK
sleep 1
ctl status_after status
# Back to A: the previous switch is folded first (Scheduler::switch_table), the other half written.
ctl back switch-table $PLANS/switch_a.json
stop_scx_tt switch 2
ctl gone status
[ -d /proc/$foreign ] && result foreign_alive yes || result foreign_alive no
kill $foreign
exit 0
