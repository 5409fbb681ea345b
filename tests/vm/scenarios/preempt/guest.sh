# Issue 11 defect 2: a SCHED_FIFO task on managed CPU 1 (tt_timer_baseline --spin-us: wakes every
# tt.rt_period_us, spins tt.rt_spin_us) preempts whatever scx task runs there, at phases that
# rotate against the slot grid; a tt task owns every other slot and a be task the rest. After
# each preemption the CPU must go back to the slot's owner, never to the be task it preempted.
# The witness (ftrace) records every CPU. Leaves preempt.json, preempt.trace.jsonl,
# preempt.witness, rt.json. Arguments: tt.duration_s (6), tt.rt_period_us (3300), tt.rt_spin_us (1000),
# tt.rt=0 (no RT task), tt.plan (a plan of this folder, default preempt.json).
. /tt/lib.sh
D=$(arg tt.duration_s 6)
PLAN=$HERE/$(arg tt.plan preempt.json)
run_scx_tt warmup --table "$PLAN" --duration-s 2
witness_start
rt=""
if [ "$(arg tt.rt 1)" = 1 ]; then
  tt_timer_baseline --cpu 1 --slot-us "$(arg tt.rt_period_us 3300)" --spin-us "$(arg tt.rt_spin_us 1000)" \
    --fifo-priority 50 --duration-s $((D + 2)) --json $OUT/rt.json > $OUT/rt.out 2>&1 &
  rt=$!
fi
result rt_pid ${rt:-0}
run_scx_tt preempt --table "$PLAN" --duration-s "$D" --summary-json $OUT/preempt.json \
  --trace $OUT/preempt.trace.jsonl
[ -n "$rt" ] && { wait $rt; result rt_rc $?; }
witness_stop preempt
exit 0
