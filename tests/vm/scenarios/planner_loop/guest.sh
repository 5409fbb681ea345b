# The closed planner loop on a live kernel (docs/planner.md, "Observations: the closed loop"):
# scx_tt --planner bss enforces planner_loop.json (managed CPU 1, 10 ms slots, frame 20): tt-a
# owns 7 of every 10 slots and its jobs (tt_jobs, released on the slot grid) run 30-100 % of
# that, then sched_yield (completion yield); tt-b 2 of every 20, 20-50 %, then sleeps to its
# next release (completion block); tt-f is declared admitted and only ever runs firm jobs (a
# busy loop, completion none); be spins in the slack. With --planner-log, 16 firm jobs of 5
# slots due in 10 are asked for tt-f, 0.1-0.4 s apart (the host replays the log, also on a
# worst-case twin: which admissions only the closed loop accepted). Leaves the trace, the
# summary, the planner log, the witness, every reply and the results.
. /tt/lib.sh
DEFAULT_DURATION_S=8
PLAN=$HERE/planner_loop.json

# run_loop NAME ARGS...: the warm-up run (not measured), then the measured run NAME.
run_loop() {
  # run_scx_tt, start_scx_tt and ctl set the (global) name: keep this one apart
  loop_run=$1; shift
  # tt_jobs reads t0 from /tmp/run.trace, scx_tt's --trace header: this run's trace
  ln -sfn /nonexistent /tmp/run.trace
  run_scx_tt "${loop_run}_warmup" --table $PLAN --planner bss "$@" --duration-s 1
  ln -sfn "$OUT/$loop_run.trace.jsonl" /tmp/run.trace
  witness_start && WITNESS_ON=1
  start_scx_tt "$loop_run" --table $PLAN --planner bss "$@" \
    --duration-s "$(arg tt.duration_s "$DEFAULT_DURATION_S")" --control "$SOCK" \
    --trace "$OUT/$loop_run.trace.jsonl" --summary-json "$OUT/$loop_run.json" \
    --planner-log "$OUT/$loop_run.plog"
  sleep 3
  k=0
  while [ $k -lt 16 ]; do
    ctl "${loop_run}_f$k" admit-firm --task tt-f --wcet-slots 5 --deadline-slots 10
    # a varying pause, so that the requests fall at every phase of tt-a's 10-slot period
    sleep 0.$((10 + (k * 7) % 30))
    k=$((k + 1))
  done
  finish_scx_tt "$loop_run"
}

run_loop closed
exit 0
