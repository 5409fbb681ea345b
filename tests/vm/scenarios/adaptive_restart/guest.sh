# Issue 17's leftover: an adaptive task's reservation across a restart of the BPF scheduler.
# adaptive_restart.json (this folder): managed CPU 1, 2 ms slots, frame 120; tt-a (a busy
# loop, 6 slots every 20) and `legacy`, class adaptive (tt_jobs blocking between jobs released
# every 40 ms, 4-8 ms of CPU each). scx_tt --planner bss reserves slots for legacy after about
# 3 s; at 7 s CPU 2 (not in the plan) goes offline: the kernel exits the scheduler asking for a
# restart and scx_tt attaches again. Run tt.duration_s (default 14) seconds, the witness
# recording (the restart's gap marked pause .. resume).
. /tt/lib.sh
D=$(arg tt.duration_s 14)
RUN=adaptive_restart
witness_start
scx_tt --table $HERE/adaptive_restart.json --planner bss --duration-s "$(bounded_duration_s "$D")" \
  --trace $OUT/$RUN.trace.jsonl --summary-json $OUT/$RUN.json > $OUT/$RUN.out 2> $OUT/$RUN.err &
pid=$!
result enable_ms "$(wait_state enabled 30000)"
run_window_start "$D"
sleep 7
witness_mark pause
echo 0 > /sys/devices/system/cpu/cpu2/online
result offline_rc $?
result reenabled_ms "$(wait_state enabled 30000)"
# judged again once scx_tt enforces (the slot clock is armed after the attach; restart/guest.sh)
result enforcing_ms "$(wait_text $OUT/$RUN.err 'enforcing from slot' 30000)"
witness_mark resume
# the host judges legacy from 1 s after the resume to the end: at least 5 s of it, however long
# the re-attach took (seconds of verification under TCG, more on a loaded host)
now=$(uptime_ms)
end=$(( RUN_START_MS + D * 1000 + 500 ))
[ "$end" -lt $(( now + 6000 )) ] && end=$(( now + 6000 ))
result ${RUN}_extended_ms $(( end - RUN_START_MS - D * 1000 - 500 ))
usleep $(( (end - now) * 1000 ))
kill -TERM $pid
wait $pid
result ${RUN}_rc $?
witness_stop $RUN
result ${RUN}_state "$(scx_state)"
cat $OUT/$RUN.out $OUT/$RUN.err
echo 1 > /sys/devices/system/cpu/cpu2/online
exit 0
