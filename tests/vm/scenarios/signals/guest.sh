# Issue 3 item 6 d): SIGINT detaches cleanly (state disabled within 2 s, exit code 0); after
# SIGKILL the kernel detaches by itself and the system keeps working.
. /tt/lib.sh
PLAN=/tt/scenarios/errors/one_cpu.json   # the errors scenario owns this plan

scx_tt --table $PLAN > $OUT/sigint.out 2> $OUT/sigint.err &
pid=$!
result sigint_enable_ms "$(wait_state enabled 30000)"
sleep 2
t0=$(uptime_ms)
kill -INT $pid
result sigint_disable_ms "$(wait_state disabled 10000)"
wait $pid
result sigint_rc $?
result sigint_exit_ms $(( $(uptime_ms) - t0 ))
cat $OUT/sigint.err

scx_tt --table $PLAN > $OUT/sigkill.out 2> $OUT/sigkill.err &
pid=$!
result sigkill_enable_ms "$(wait_state enabled 30000)"
sleep 2
kill -KILL $pid
result sigkill_disable_ms "$(wait_state disabled 10000)"
wait $pid
result sigkill_rc $?
# The system still works: a shell command runs, on every CPU.
result cpus_online "$(nproc)"
result sigkill_shell "$(timeout 5 sh -c 'echo alive')"
for c in $(seq 0 $(( $(nproc) - 1 ))); do
  result "sigkill_cpu${c}" "$(timeout 5 taskset -c "$c" sh -c 'echo alive')"
done
exit 0
