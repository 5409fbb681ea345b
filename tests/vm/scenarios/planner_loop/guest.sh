# The closed planner loop on a live kernel (docs/planner.md, "Observations: the closed loop"):
# scx_tt --planner bss enforces planner_loop.json (managed CPU 1, 10 ms slots, frame 20): tt-a
# owns 7 of every 10 slots and its jobs (tt_jobs, released on the slot grid) run 30-100 % of
# that, then sched_yield (completion yield); tt-b 2 of every 20, 20-50 %, then sleeps to its
# next release (completion block); tt-f is declared admitted and only ever runs firm jobs (a
# busy loop, completion none); be spins in the slack. With --planner-log, 16 firm jobs of 5
# slots due in 10 are asked for tt-f, 0.1-0.4 s apart (the host replays the log, also on a
# worst-case twin: which admissions only the closed loop accepted). Leaves the trace, the
# summary, the planner log, the witness, every reply and the results.
#
# Then the run `reclaim` on planner_reclaim.json, where reclaim is certain: tt-a owns 80 of
# every 100 slots and its jobs run 10 % of that, then yield. Once per period, at phase 30 of
# tt-a's period (read from `ctl status`), a firm job of 25 slots due in 40 is asked for tt-f:
# under the worst case only 20 slots are free before such a deadline (tt-a may still need 80 - 30
# of the 70 slots left in its period), with tt-a's job observed done there are 70.
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
  D=$(arg tt.duration_s "$DEFAULT_DURATION_S")
  start_scx_tt "$loop_run" --table $PLAN --planner bss "$@" \
    --duration-s "$(bounded_duration_s "$D")" --control "$SOCK" \
    --trace "$OUT/$loop_run.trace.jsonl" --summary-json "$OUT/$loop_run.json" \
    --planner-log "$OUT/$loop_run.plog"
  wait_state enabled 30000 > /dev/null
  run_window_start "$D"
  sleep 3
  k=0
  while [ $k -lt 16 ]; do
    ctl "${loop_run}_f$k" admit-firm --task tt-f --wcet-slots 5 --deadline-slots 10
    # a varying pause, so that the requests fall at every phase of tt-a's 10-slot period
    sleep 0.$((10 + (k * 7) % 30))
    k=$((k + 1))
  done
  # the last request's deadline (10 slots) and the planner's horizon are well within 1 s
  stop_scx_tt "$loop_run" 1
}

run_loop closed

# reclaim: the warm-up, then the measured run; a request at phase 30 of each 100-slot period
ln -sfn /nonexistent /tmp/run.trace
run_scx_tt reclaim_warmup --table $HERE/planner_reclaim.json --planner bss --duration-s 1
ln -sfn "$OUT/reclaim.trace.jsonl" /tmp/run.trace
witness_start && WITNESS_ON=1
start_scx_tt reclaim --table $HERE/planner_reclaim.json --planner bss \
  --duration-s "$(bounded_duration_s 10)" --control "$SOCK" \
  --trace "$OUT/reclaim.trace.jsonl" --summary-json "$OUT/reclaim.json" \
  --planner-log "$OUT/reclaim.plog"
wait_state enabled 30000 > /dev/null
run_window_start 10
sleep 1
k=0
while [ $k -lt 5 ]; do
  slot=$(scx_tt ctl --socket "$SOCK" status 2> /dev/null | sed -n 's/.*"slot":\([0-9]*\).*/\1/p')
  [ -n "$slot" ] || break
  # to phase 30 of the next period that still has it ahead (ms: 10 per slot)
  wait_ms=$(( ((130 - slot % 100) % 100) * 10 ))
  [ $wait_ms -lt 100 ] && wait_ms=$((wait_ms + 1000))
  sleep "$((wait_ms / 1000)).$(printf %03d $((wait_ms % 1000)))"
  ctl "reclaim_f$k" admit-firm --task tt-f --wcet-slots 25 --deadline-slots 40
  k=$((k + 1))
done
# the last request's deadline: 40 slots, 0.4 s
stop_scx_tt reclaim 1
exit 0
