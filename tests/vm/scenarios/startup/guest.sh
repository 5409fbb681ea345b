# Start-up of a run (issue 11 items 4, 5): spawned (`cmd`) tasks reach their steady state
# before slot 0, and the default guard band is calibrated from the measured timer lateness.
# startup.json on CPU 1 (10 ms slots, single-slot runs): two tt tasks `app-a`, `app-b` that start
# like an application with a start-up script (12 helper processes that each wait 20 ms, as a
# device or a peer would make them wait, then the exec of stress-ng, dynamically linked, which
# forks its busy worker), and a be busy loop `fill`. Two runs of it, each leaving NAME.json
# (summary), NAME.trace.jsonl and scx_tt's output:
#   old:     --settle-ms 0 --guard-us 500: the tasks exec in their slots from slot 0, as before
#            the settle period, and the guard band is the flag's;
#   startup: the defaults: the settle period and the calibrated guard band; the witness records
#            it (startup.witness).
# Arguments: tt.duration_s (default 6).
. /tt/lib.sh
D=$(arg tt.duration_s 6)
# Warm-up, not measured: TCG translates the scheduler's and sched_ext's paths on first use.
run_scx_tt warmup --table /tt/scenarios/delivery/demo_one_cpu.json --duration-s 2 --guard-us 500
for run in old startup; do
  if [ $run = old ]; then set -- --settle-ms 0 --guard-us 500; else set --; fi
  t=$(uptime_ms)
  [ $run = startup ] && witness_start
  run_scx_tt $run --table $HERE/startup.json --duration-s "$D" "$@" \
    --trace $OUT/$run.trace.jsonl --summary-json $OUT/$run.json --timeline-slots 60
  result ${run}_wall_ms $(( $(uptime_ms) - t ))
  [ $run = startup ] && witness_stop startup
done
exit 0
