# Issue 18: DEmOS's sequence on the kernel path (`--planner bss --demos`, the slot sequencer).
# demos_seq.yaml (written here: the job logs go to $OUT), one 200 ms window on CPU 1, 10 ms
# slots: SC1 = sc1a (tt_jobs: 15 ms of CPU time per job, then sched_yield(), the plan's
# completion "yield"; budget 100 ms) then sc1b (busy, 30 ms); BE1 = be1 (busy, budget 250 ms:
# more than a window's BE time, so it carries over) and be2 (busy, 50 ms), which own their BE
# turns in the sequenced run (class tt there). The imported plan gets "server": "ptps"
# (a done owner's slot idles instead of going to be work). Run for tt.duration_s seconds
# (default 6) with lead 2; leaves the sequenced log (kernel.log), DEmOS's own
# (`simulate --demos`, sim.log), sc1a's job log (sc1a.log), and the run's files (RUN = demos_seq).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-6}
CFG=$OUT/demos_seq.yaml
cat > $CFG <<YAML
partitions:
  - name: SC1
    processes:
      - {cmd: "TT_SIM_WORK_MS=15 tt_jobs --period-us 1 --exec-us 15000 --exec-min-pct 100 --exec-max-pct 100 --end yield --log $OUT/sc1a.log # sc1a", budget: 100}
      - {cmd: "while :; do :; done # sc1b", budget: 30}
  - name: BE1
    processes:
      - {cmd: "while :; do :; done # be1", budget: 250}
      - {cmd: "while :; do :; done # be2", budget: 50}
windows:
  - length: 200
    slices:
      - {cpu: 1, sc_partition: SC1, be_partition: BE1}
YAML
scx_tt plan import --demos $CFG --all-cpus 1 --out $OUT/import.json 2> $OUT/import.err
result import_rc $?
cat $OUT/import.err
# the same plan, its unused owner time idle (the sequence is the configuration's)
sed 's/^{/{"server": "ptps",/' $OUT/import.json > $OUT/demos_seq.plan.json
scx_tt simulate --demos $CFG --demos-cpus 1 --frames $((D * 5 + 5)) --schedule-log $OUT/sim.log
result sim_rc $?
measured_run demos_seq $OUT/demos_seq.plan.json "$D" --planner bss --planner-lead-slots 2 \
  --demos $CFG --schedule-log $OUT/kernel.log
exit 0
