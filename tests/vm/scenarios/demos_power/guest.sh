# Issue 18 items 4-5 on the kernel path: DEmOS's -m/-M messages and the minbe power policy in a
# kernel run of an imported configuration (../demos/demos.yaml: a 100 ms window, SC1 30 + 20 ms,
# then a 50 ms window, SC2 40 ms; BE1 in the rest; CPU 1; 10 ms slots). The VM has no cpufreq:
# the policy drives a fake sysfs tree laid out like the kernel's (acpi-cpufreq, policy0 = CPU 0,
# policy1 = CPU 1, frequency lists 1.0-2.3 GHz, governor ondemand), compared byte for byte with
# a copy after the run. scx_tt's stdout goes through a reader that writes each line to ftrace's
# trace_marker (clock mono, the slot grid's clock): when each message reached a reader, the
# independent measure of its latency (demos_power.marks). Runs:
#   demos_power  --demos demos.yaml -m WIN -M MF -p minbe -v for tt.duration_s seconds;
#   refused      the plan of another configuration (one 100 ms window) with demos.yaml: not
#                its import, refused, nothing changed.
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-6}
CFG=/tt/scenarios/demos/demos.yaml
TREE=/tmp/fake-cpufreq
RUN_DIR=/run/tt-demos-power
CPU_DIR=sys/devices/system/cpu
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
restored() {
  if diff -r $TREE $TREE.orig > "$OUT/$1.diff" 2>&1; then result "$1_restored" yes
  else result "$1_restored" no; cat "$OUT/$1.diff"; fi
  result "$1_journal_left" "$(ls $RUN_DIR 2>/dev/null | tr '\n' ' ' | sed 's/ $//')x"
}
scx_tt plan import --demos $CFG --all-cpus 1 --out $OUT/plan.json 2> $OUT/import.err
result import_rc $?
# the message reader: ftrace's trace_marker, nothing else traced
echo 0 > $TRACING/tracing_on
echo mono > $TRACING/trace_clock
echo 0 > $TRACING/events/enable
echo > $TRACING/trace
echo 1 > $TRACING/tracing_on
echo "tt-vm: run scx_tt --demos (stdout through trace_marker)"
{ scx_tt --table $OUT/plan.json --demos $CFG -m WIN -M MF -p minbe -v \
    --sysfs-root $TREE --run-dir $RUN_DIR --duration-s $D --summary-json $OUT/demos_power.json \
    2> $OUT/demos_power.err; echo $? > /tmp/demos_power.rc; } |
  mark_lines $OUT/demos_power.out
echo 0 > $TRACING/tracing_on
grep tracing_mark_write $TRACING/trace > $OUT/demos_power.marks
echo > $TRACING/trace
cat $OUT/demos_power.err
result demos_power_rc "$(cat /tmp/demos_power.rc)"
result demos_power_state "$(scx_state)"
restored demos_power
printf '%s\n' '{windows: [{length: 100, cpu: 1, sc_processes: [{cmd: "while :; do :; done", budget: 30}]}]}' > /tmp/other.yaml
scx_tt plan import --demos /tmp/other.yaml --all-cpus 1 --out $OUT/other.json 2>/dev/null
run_scx_tt refused --table $OUT/other.json --demos $CFG -p minbe --sysfs-root $TREE \
  --run-dir $RUN_DIR --duration-s 1
restored refused
exit 0
