# Issue 3 item 6 c): bad plans and impossible runs exit non-zero with a clear message and leave
# sched_ext disabled. Each case leaves NAME.out / NAME.err and the results NAME_rc, NAME_state.
. /tt/lib.sh
P=$HERE
run_scx_tt invalid_plan --table $P/invalid_slot_us.json --duration-s 5
run_scx_tt missing_pid --table $P/missing_pid.json --duration-s 5
run_scx_tt missing_cpu --table $P/missing_cpu.json --duration-s 5

# Not root: the same valid plan as an unprivileged user.
mkdir -p /etc
echo 'root:x:0:0::/:/bin/sh' > /etc/passwd
echo 'tt:x:1000:1000::/tmp:/bin/sh' >> /etc/passwd
printf 'root:x:0:\ntt:x:1000:\n' > /etc/group
echo "tt-vm: run scx_tt as user tt (uid 1000)"
su -s /bin/sh tt -c "scx_tt --table $P/one_cpu.json --duration-s 5" \
  > $OUT/not_root.out 2> $OUT/not_root.err
result not_root_rc $?
result not_root_state "$(scx_state)"
cat $OUT/not_root.err

# Another scheduler attached: a second scx_tt while the first one runs.
scx_tt --table $P/one_cpu.json --duration-s 60 > $OUT/first.out 2> $OUT/first.err &
first=$!
result first_enable_ms "$(wait_state enabled 30000)"
result attached_ops "$(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
run_scx_tt second --table $P/one_cpu.json --duration-s 5
result second_state_while_first_runs "$(scx_state)"
kill -INT $first
wait $first
result first_rc $?
result first_disable_ms "$(wait_state disabled 5000)"
exit 0
