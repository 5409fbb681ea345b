# EASS-DPM on a live kernel (docs/planner.md, "Kernel path", DPM; src/bpf/tt_sched.bpf.c K):
# scx_tt --planner dpm enforces planner_dpm.json (managed CPU 1, 10 ms slots, frame 50): tt-a
# (busy, completion none) runs 10 slots at the start of every 50, then the CPU is DPM idle for
# 40 slots: be is kept off and the slot ticks are deferred to one wake before the period's end.
# Once, inside an idle period (phase 20 of tt-a's period, read from `ctl status`), a firm job of
# 5 slots due in 10 is asked for tt-f: due before the idle period ends, it cannot wait for it
# (a job that fits after the period leaves it in force: the planner's rule), so the planner cuts
# the idle period short and kicks the CPU.
# Each period's pm_qos_resume_latency_us limit (the deepest state it pays for) goes to
# dpm.idle.jsonl; CPU 1's limit is read before and after the run (restored).
# Then the same plan with --dpm-be: be work runs in the idle slots and the ticks stay per slot.
# Leaves the traces, summaries, witnesses, the planner log, the reply and the results.
. /tt/lib.sh
DEFAULT_DURATION_S=6
PLAN=$HERE/planner_dpm.json

QOS=/sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us
result pmqos_before "$(cat $QOS 2>&1)"
start_control_run dpm 1 --table $PLAN --planner dpm --planner-log $OUT/dpm.plog \
  --idle-log $OUT/dpm.idle.jsonl
sleep 2
slot=$(scx_tt ctl --socket "$SOCK" status 2> /dev/null | sed -n 's/.*"slot":\([0-9]*\).*/\1/p')
if [ -n "$slot" ]; then
  # to phase 20 of the next period that still has it ahead (ms: 10 per slot)
  wait_ms=$(( ((70 - slot % 50) % 50) * 10 ))
  [ $wait_ms -lt 100 ] && wait_ms=$((wait_ms + 500))
  sleep "$((wait_ms / 1000)).$(printf %03d $((wait_ms % 1000)))"
fi
ctl firm admit-firm --task tt-f --wcet-slots 5 --deadline-slots 10
stop_scx_tt dpm 2
result pmqos_after "$(cat $QOS 2>&1)"

start_control_run dpmbe 1 --table $PLAN --planner dpm --dpm-be
stop_scx_tt dpmbe 0
exit 0
