# Issue 18: a DEmOS configuration on the kernel path. demos.yaml (this folder: SC1 = two busy
# processes of 30 and 20 ms in a 100 ms window, SC2 = one of 40 ms in a 50 ms window, BE1 in the
# rest, all on CPU 1) is imported with `scx_tt plan import --demos` (10 ms slots, frame 15
# slots; CPU 0 housekeeping) and run for tt.duration_s seconds (default 6) with the witness.
# Leaves the imported plan (demos.plan.json) and the import's warnings, DEmOS's own SC schedule
# log from `simulate --demos` (sim.log) and the one of the kernel run's trace (kernel.log),
# and the run's summary, trace, output and witness (RUN = demos).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-6}
scx_tt plan import --demos $HERE/demos.yaml --all-cpus 1 --out $OUT/demos.plan.json \
  2> $OUT/import.err
result import_rc $?
cat $OUT/import.err
# frames of the simulation: at least the run's (150 ms each)
scx_tt simulate --demos $HERE/demos.yaml --demos-cpus 1 --frames $((D * 7 + 7)) --sc-only \
  --schedule-log $OUT/sim.log
result sim_rc $?
measured_run demos $OUT/demos.plan.json "$D"
scx_tt simulate --demos $HERE/demos.yaml --demos-cpus 1 --from-trace $OUT/demos.trace.jsonl \
  --schedule-log $OUT/kernel.log
result kernel_log_rc $?
exit 0
