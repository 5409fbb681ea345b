# Issue 18: DEmOS's sequence on the kernel path (`--planner bss --demos`, the slot sequencer).
# demos_seq.yaml (written here: the job logs go to $OUT), one 200 ms window on CPU 1, 10 ms
# slots: SC1 = sc1a (tt_jobs: 15 ms of CPU time per job, then sched_yield(), the plan's
# completion "yield"; budget 100 ms) then sc1b (busy, 30 ms); BE1 = be1 (busy, budget 250 ms:
# more than a window's BE time, so it carries over) and be2 (busy, 50 ms), which own their BE
# turns in the sequenced run (class tt there). The imported plan gets "server": "ptps"
# (a done owner's slot idles instead of going to be work). sc1a has `init: yes`: 200 ms of CPU
# time (init.log) before it stops itself, the end of its initialisation, before slot 0.
# Run for tt.duration_s seconds
# (default 6) with lead 2; leaves the sequenced log (kernel.log), DEmOS's own
# (`simulate --demos`, sim.log), sc1a's job logs (init.log, sc1a.log), and the run's files (RUN = demos_seq).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-6}
CFG=$OUT/demos_seq.yaml
cat > $CFG <<YAML
partitions:
  - name: SC1
    processes:
      - {cmd: "TT_SIM_WORK_MS=15 tt_jobs --period-us 1 --exec-us 200000 --exec-min-pct 100 --exec-max-pct 100 --end none --jobs 1 --log $OUT/init.log; kill -STOP \$\$; exec tt_jobs --period-us 1 --exec-us 15000 --exec-min-pct 100 --exec-max-pct 100 --end yield --log $OUT/sc1a.log # sc1a", budget: 100, init: yes}
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
# an init process that never ends its initialisation: the run ends before slot 0 with an error
# naming it, kills it, attaches nothing
cat > $OUT/noinit.yaml <<'YAML'
partitions:
  - name: P
    processes:
      - {cmd: "while :; do :; done # noinit-marker", budget: 10, init: yes}
windows:
  - length: 10
    slices:
      - {cpu: 1, sc_partition: P}
YAML
scx_tt plan import --demos $OUT/noinit.yaml --all-cpus 1 --out $OUT/noinit.json 2>/dev/null
run_scx_tt noinit --table $OUT/noinit.json --demos $OUT/noinit.yaml --init-timeout-ms 500 \
  --duration-s 2
result noinit_left "$(grep -l 'noinit-marke[r]' /proc/[0-9]*/cmdline 2>/dev/null | wc -l)"
exit 0
