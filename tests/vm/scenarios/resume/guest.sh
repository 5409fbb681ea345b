# Who may use the control socket, and admissions that survive a SIGKILL of scx_tt (issue 15
# items 5-7; docs/control.md, "The socket" and "Restarts and --resume"): scx_tt --planner bss on
# ../admit/admit.json (managed CPU 1, 10 ms slots, frame 10: tt-a 4 of every 10) with
# --control-group 4242 (the socket is 0660 root:4242).
#   alice (uid 1000, in group 4242) asks `status`                 -> served (exit 0)
#   bob (uid 1001, not in it) asks `status`                       -> the socket's mode refuses
#                                                                    his connect (exit 2)
#   the socket made 0666 by mistake: bob again                    -> refused by his peer
#                                                                    credentials (exit 1)
# then root admits a busy process (app, 3 slots every 10), a real QEMU VM (vm1, util 0.2
# within 100 ms: 1 slot every 5) and a second busy process as be work on CPU 1 (batch, `--class
# be --cpu 1`: the slack, no timing); scx_tt is killed with SIGKILL (the kernel falls back to the
# fair class) and started again with --resume: all three come back admitted. Leaves the control
# state before the kill, both runs' output, the second run's trace, summary, planner log and
# witness, every reply.
. /tt/lib.sh
PLAN=/tt/scenarios/admit/admit.json
RUNDIR=/run/tt-resume
mkdir -p /etc
cat > /etc/passwd <<'PW'
root:x:0:0:root:/:/bin/sh
alice:x:1000:1000::/:/bin/sh
bob:x:1001:1001::/:/bin/sh
PW
cat > /etc/group <<'GR'
root:x:0:
alice:x:1000:
bob:x:1001:
ttctl:x:4242:alice
GR
# as_user NAME USER ARGS...: `scx_tt ctl ARGS` as USER (su: their uid, gid and groups)
as_user() {
  name=$1 user=$2; shift 2
  su "$user" -s /bin/sh -c "scx_tt ctl --socket $SOCK $*" > "$OUT/$name.reply" 2> "$OUT/$name.err"
  rc=$?
  echo "tt-vm: ctl as $user $*: rc $rc"
  cat "$OUT/$name.reply" "$OUT/$name.err"
  result "${name}_rc" $rc
}
run_scx_tt warmup --table $PLAN --planner bss --duration-s 1
start_scx_tt first --table $PLAN --planner bss --control "$SOCK" --control-group 4242 \
  --run-dir $RUNDIR --planner-log $OUT/first.plog
result first_enable_ms "$(wait_state enabled 120000)"
# the processes outside the plan start once the first run is attached (three CPU hogs on the
# guest's two vCPUs made the load take 16-28 s); the second run starts with them running
APP=$(start_busy_loop)
BATCH=$(start_busy_loop)
result batch_pid $BATCH
VM1=$(start_qemu_spinner vm1)
result app_pid $APP
result vm1_pid $VM1
result vm1_vcpu_ms "$(wait_qemu_vcpu $VM1 30000)"
sleep 1
result socket_mode "$(stat -c '%a %u %g' "$SOCK")"
as_user alice alice status
as_user bob bob status
chmod 0666 "$SOCK"
as_user bob_creds bob status
chmod 0660 "$SOCK"
ctl app admit --name app --pid $APP --period-slots 10 --wcet-slots 3
ctl vm1 admit --name vm1 --qemu vm1 --util 0.2 --latency-us 100000
ctl batch admit --name batch --pid $BATCH --class be --cpu 1
cp $RUNDIR/control-state.json $OUT/state-before-kill.json
sleep 1
kill -9 $SCX_TT_PID
wait $SCX_TT_PID
result first_rc $?
result first_disabled_ms "$(wait_state disabled 10000)"
cat $OUT/first.out $OUT/first.err
# the machine runs under the fair class now; the second run brings the admissions back
witness_start && WITNESS_ON=1
start_scx_tt second --table $PLAN --planner bss --control "$SOCK" --run-dir $RUNDIR --resume \
  --duration-s "$(arg tt.duration_s 8)" --trace "$OUT/second.trace.jsonl" \
  --summary-json "$OUT/second.json" --planner-log $OUT/second.plog
# (a restart beside the three hogs: its load took 16-29 s; 120 s as start_control_run)
result second_enable_ms "$(wait_state enabled 120000)"
sleep 2
ctl status status
finish_scx_tt second
cp $RUNDIR/control-state.json $OUT/state-after.json 2> /dev/null
kill $APP $BATCH $VM1 2> /dev/null
exit 0
