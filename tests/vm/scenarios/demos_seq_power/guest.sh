# Issue 18: DEmOS's -m/-M messages and the minbe power policy in a *sequenced* kernel run
# (`--planner bss --demos`, docs/demos.md "Messages and power policies in a sequenced run").
# demos_seq_power.yaml (written here: the job logs go to $OUT), CPU 1, 10 ms slots, major frame
# 200 ms: window 0 (100 ms) runs SC1 = sc1a (tt_jobs: 15 ms of CPU time per job, then
# sched_yield(), its completion; budget 60 ms) then sc1b (busy, 20 ms); window 1 (100 ms) runs
# SC2 = sc2a (tt_jobs, 15 ms a job, budget 60 ms); BE1 = be1 (busy, 200 ms, carried over) after
# the SC work of each window. The imported plan gets "server": "ptps" (a done owner's slot
# idles). The static table's BE starts are at 80 ms and 160 ms of each frame; the sequence's
# come earlier because sc1a and sc2a complete early. The slot is set to 10 ms (the gcd is 20).
# The VM has no cpufreq: the policy drives a fake acpi-cpufreq tree (policy0 = CPU 0, policy1 =
# CPU 1, 1.0-2.3 GHz, as demos_power's), compared byte for byte with a copy after the run.
# scx_tt's stdout and stderr (-v: every cpufreq write with its slot time) go through a reader
# that writes each line to ftrace's trace_marker, recorded with the witness (clock mono, the
# slot grid's clock): when each message and each write's line reached the reader. During the
# run two control requests: admit-firm (refused in a sequenced run) and status. Then a second
# run (pp, tt.pp_s seconds, default 4) with -p per_process: each process's `frequency` key
# (sc1a 2300, sc1b 2000, sc2a 1800, be1 1000 MHz) written at its sequenced start (-v lines in
# pp.err, the sequenced log in pp.log), the tree restored again.
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-6}
RUN=demos_seq_power
CFG=$OUT/$RUN.yaml
TREE=/tmp/fake-cpufreq
RUN_DIR=/run/tt-demos-seq-power
CPU_DIR=sys/devices/system/cpu
JOB="tt_jobs --period-us 1 --exec-us 15000 --exec-min-pct 100 --exec-max-pct 100 --end yield"
cat > $CFG <<YAML
partitions:
  - name: SC1
    processes:
      - {cmd: "TT_SIM_WORK_MS=15 $JOB --log $OUT/sc1a.log # sc1a", budget: 60, frequency: 2300}
      - {cmd: "while :; do :; done # sc1b", budget: 20, frequency: 2000}
  - name: SC2
    processes:
      - {cmd: "TT_SIM_WORK_MS=15 $JOB --log $OUT/sc2a.log # sc2a", budget: 60, frequency: 1800}
  - name: BE1
    processes:
      - {cmd: "while :; do :; done # be1", budget: 200, frequency: 1000}
windows:
  - length: 100
    slices:
      - {cpu: 1, sc_partition: SC1, be_partition: BE1}
  - length: 100
    slices:
      - {cpu: 1, sc_partition: SC2, be_partition: BE1}
YAML
put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }
for p in 0 1; do
  pd=$TREE/$CPU_DIR/cpufreq/policy$p
  put $pd/affected_cpus $p
  put $pd/related_cpus $p
  put $pd/scaling_available_frequencies "2300000 2200000 2100000 2000000 1900000 1800000 1700000 1600000 1500000 1400000 1300000 1200000 1100000 1000000"
  put $pd/cpuinfo_min_freq 1000000
  put $pd/cpuinfo_max_freq 2300000
  put $pd/cpuinfo_transition_latency 10000
  put $pd/scaling_min_freq 1200000
  put $pd/scaling_max_freq 2100000
  put $pd/scaling_driver acpi-cpufreq
  put $pd/scaling_governor ondemand
  put $pd/scaling_available_governors "conservative ondemand userspace powersave performance schedutil"
  put $pd/scaling_setspeed "<unsupported>"
  put $pd/scaling_cur_freq 1200000
done
cp -a $TREE $TREE.orig
scx_tt plan import --demos $CFG --all-cpus 1 --slot-us 10000 --out $OUT/import.json 2> $OUT/import.err
result import_rc $?
sed 's/^{/{"server": "ptps",/' $OUT/import.json > $OUT/$RUN.plan.json
# the control requests, from another shell while the run goes on
# once the control socket answers (a fixed 3 s sleep came before the socket on a slow host)
( wait_control 120000 > /dev/null
  ctl admit_firm admit-firm --task SC1.0 --wcet-slots 1 --deadline-slots 50
  ctl status status ) &
CTL_PID=$!
witness_start
echo "tt-vm: run scx_tt --planner bss --demos (stdout and stderr through trace_marker)"
{ scx_tt --table $OUT/$RUN.plan.json --planner bss --planner-lead-slots 2 --demos $CFG \
    -m WIN -M MF -p minbe -v --sysfs-root $TREE --run-dir $RUN_DIR --control $SOCK \
    --duration-s $D --trace $OUT/$RUN.trace.jsonl --summary-json $OUT/$RUN.json \
    --schedule-log $OUT/kernel.log 2>&1; echo $? > /tmp/$RUN.rc; } |
  mark_lines $OUT/$RUN.out
witness_stop $RUN
wait $CTL_PID
grep -v '^scx_tt: demos: .*cpufreq policy' $OUT/$RUN.out | grep -v '^WIN$' | grep -v '^MF$' | head -60
result ${RUN}_rc "$(cat /tmp/$RUN.rc)"
result ${RUN}_state "$(scx_state)"
if diff -r $TREE $TREE.orig > $OUT/$RUN.diff 2>&1; then result ${RUN}_restored yes
else result ${RUN}_restored no; cat $OUT/$RUN.diff; fi
result ${RUN}_journal_left "$(ls $RUN_DIR 2>/dev/null | tr '\n' ' ' | sed 's/ $//')x"
PP=$(cmdline_arg tt.pp_s); PP=${PP:-4}
run_scx_tt pp --table $OUT/$RUN.plan.json --planner bss --planner-lead-slots 2 --demos $CFG \
  -p per_process -v --sysfs-root $TREE --run-dir $RUN_DIR --duration-s $PP \
  --summary-json $OUT/pp.json --schedule-log $OUT/pp.log
if diff -r $TREE $TREE.orig > $OUT/pp.diff 2>&1; then result pp_restored yes
else result pp_restored no; cat $OUT/pp.diff; fi
result pp_journal_left "$(ls $RUN_DIR 2>/dev/null | tr '\n' ' ' | sed 's/ $//')x"
exit 0
