# Issue 18 item 3: DEmOS's golden configurations whose SC work the plan states exactly (01, 03,
# 07 of tests/demos/, copied here with every CPU one higher: 0 -> 1, 1 -> 2, so that CPU 0
# stays housekeeping; check.rs checks the copies against tests/demos/) on the kernel path, one
# after the other in this one boot: each is imported with `scx_tt plan import --demos` (01:
# slots of 5 ms, the gcd; 03 and 07: 1 ms; major frame 10 ms), run for tt.duration_s seconds
# (default 3) with the witness, and the SC schedule logs written: DEmOS's own (`simulate
# --demos --sc-only`, NAME.sim.log) and the kernel run's (`--from-trace`, NAME.kernel.log),
# with the run's plan, summary, trace, output and witness (RUN = g01, g03, g07).
# `dummy` (DEmOS's test command) is a busy loop here: busybox sh execs the last command of
# `sh -c 'cd DIR && dummy ARGS'`, so the process keeps the task's pid.
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-3}
printf '#!/bin/sh\nwhile :; do :; done\n' > /usr/bin/dummy
chmod 755 /usr/bin/dummy
for cfg in 01-one-sc-budget-below-window 03-two-sc-processes 07-be-after-all-sc; do
  run=g${cfg%%-*}
  scx_tt plan import --demos $HERE/$cfg.yaml --all-cpus 1-2 --out $OUT/$run.plan.json \
    2> $OUT/$run.import.err
  result ${run}_import_rc $?
  cat $OUT/$run.import.err
  # frames of 10 ms: at least the run's
  scx_tt simulate --demos $HERE/$cfg.yaml --demos-cpus 1-2 --frames $((D * 100 + 100)) \
    --sc-only --schedule-log $OUT/$run.sim.log
  result ${run}_sim_rc $?
  measured_run $run $OUT/$run.plan.json "$D"
  scx_tt simulate --demos $HERE/$cfg.yaml --demos-cpus 1-2 \
    --from-trace $OUT/$run.trace.jsonl --schedule-log $OUT/$run.kernel.log
  result ${run}_kernel_log_rc $?
done
exit 0
