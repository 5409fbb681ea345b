# The planner on two threads (scx_tt --planner-threads, docs/planner.md "The step on several
# threads"): scx_tt --planner dvfs --planner-threads 2 --planner-shard-min 2 enforces
# planner_threads.json at -smp 4 (managed CPUs 1 and 2, housekeeping 0 and 3: the planner
# thread on CPU 0, its helper on CPU 3; 10 ms slots, frame 40; closed loop), so every slot's
# step is cut in two, one CPU a shard. After 2 s, `scx_tt ctl admit-firm` asks 3 slots due in
# 20 for tt-a and for tt-c (one on each CPU); then a refused request: --planner-threads 3 (one
# housekeeping CPU short). Leaves the trace, the summary, the planner log, the witness, every
# reply and results.
. /tt/lib.sh
DEFAULT_DURATION_S=6
PLAN=$HERE/planner_threads.json

start_control_run threads 1 --table $PLAN --planner dvfs --planner-threads 2 \
  --planner-shard-min 2 --planner-log $OUT/threads.plog
sleep 2
ctl firm_a admit-firm --task tt-a --wcet-slots 3 --deadline-slots 20
ctl firm_c admit-firm --task tt-c --wcet-slots 3 --deadline-slots 20
ctl status status
stop_scx_tt threads 1
# one housekeeping CPU short: refused before anything changes (sched_ext stays disabled)
run_scx_tt three --table $PLAN --planner bss --planner-threads 3 --duration-s 1
exit 0
