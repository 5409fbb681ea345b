# The cpufreq backend and crash safety (issue 14 items 3-5, docs/energy.md "Frequency backends",
# "Crash safety"). The VM has no cpufreq: scx_tt runs on fake sysfs trees laid out like the
# kernel's (--sysfs-root), built here:
#   acpi:   acpi-cpufreq, policy0 = CPU 0 (housekeeping), policy1 = CPUs 1 and 2 (shared by
#           both managed CPUs), frequency lists 1.0-2.3 GHz, governor ondemand;
#   pstate: intel_pstate in active mode, one policy per CPU, a range 0.8-3.9 GHz (a static tree
#           cannot re-create the policies as the kernel does on the switch to passive: it shows
#           the passive mode's files, governor schedutil, from the start).
# Runs (freq.json: managed CPUs 1-2, 10 ms slots, dvfs picks several frequencies on each):
#   acpi     --freq-backend cpufreq --planner-open-loop --freq-log, stopped by SIGINT;
#   dpmdvfs  freq_dpm.json (CPU 1 15 %, CPU 2 21 % busy: dpm+dvfs stretches the jobs to 0.43
#            and leaves ~60-slot idle periods) --planner dpm+dvfs --freq-backend cpufreq on the
#            acpi tree (DPM idle periods with deferred ticks and a pm_qos limit each, frequencies
#            per slot), stopped by SIGINT;
#   pstate   --freq-backend auto (picks cpufreq), stopped by SIGTERM;
#   ghost    a plan whose task cannot be found: an error during start-up, after the take-over;
#   killed1  SIGKILL, then `next` (a new start) restores what it left;
#   killed2  SIGKILL, then `scx_tt restore` restores what it left (and a second restore: nothing).
# After each, the tree is compared with a copy made before (diff -r: byte for byte). The acpi
# tree also has pm_qos files: --idle-control policy (the default) keeps the managed CPUs polling
# (n/a) under dvfs; the pstate tree has none (idle control falls back to the kernel's).
. /tt/lib.sh
PLAN=$HERE/freq.json
RUN_DIR=/run/tt-freq
CPU_DIR=sys/devices/system/cpu

put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }
acpi_tree() {
  local d=$1/$CPU_DIR p cpus pd
  for p in 0 1; do
    if [ $p = 0 ]; then cpus=0; else cpus="1 2"; fi
    pd=$d/cpufreq/policy$p
    put $pd/affected_cpus "$cpus"
    put $pd/related_cpus "$cpus"
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
  for p in 0 1 2; do put $d/cpu$p/power/pm_qos_resume_latency_us 0; done
}
pstate_tree() {
  local d=$1/$CPU_DIR p pd
  put $d/intel_pstate/status active
  for p in 0 1 2; do
    pd=$d/cpufreq/policy$p
    put $pd/affected_cpus $p
    put $pd/related_cpus $p
    put $pd/cpuinfo_min_freq 800000
    put $pd/cpuinfo_max_freq 3900000
    put $pd/cpuinfo_transition_latency 20000
    put $pd/scaling_min_freq 800000
    put $pd/scaling_max_freq 3900000
    put $pd/scaling_driver intel_cpufreq
    put $pd/scaling_governor schedutil
    put $pd/scaling_available_governors "conservative ondemand userspace powersave performance schedutil"
    put $pd/scaling_setspeed "<unsupported>"
    put $pd/scaling_cur_freq 1800000
  done
}
# restored NAME TREE: whether TREE is byte for byte its copy TREE.orig (the diff in NAME.diff)
restored() {
  if diff -r "$2" "$2.orig" > "$OUT/$1.diff" 2>&1; then result "$1_restored" yes
  else result "$1_restored" no; cat "$OUT/$1.diff"; fi
}
gov() { cat "$1/$CPU_DIR/cpufreq/policy$2/scaling_governor"; }
journal() { ls "$RUN_DIR" 2>/dev/null | tr '\n' ' ' | sed 's/ $//'; }

ACPI=/tmp/fake-acpi PSTATE=/tmp/fake-pstate
acpi_tree $ACPI && cp -a $ACPI $ACPI.orig
pstate_tree $PSTATE && cp -a $PSTATE $PSTATE.orig
cp $ACPI/$CPU_DIR/cpufreq/policy1/scaling_available_frequencies $OUT/acpi_freqs.txt

# TCG translates the scheduler's paths on first use: a warm-up run, frequencies left alone
run_scx_tt warmup --table $PLAN --planner dvfs --freq-backend none --duration-s 2

# 1. acpi-cpufreq, SIGINT
start_scx_tt acpi --table $PLAN --planner dvfs --planner-open-loop --freq-backend cpufreq \
  --sysfs-root $ACPI --run-dir $RUN_DIR --freq-log $OUT/acpi.freq.jsonl \
  --trace $OUT/acpi.trace.jsonl --summary-json $OUT/acpi.json
result acpi_enable_ms "$(wait_state enabled 30000)"
sleep "$(arg tt.duration_s 4)"
result acpi_gov0_during "$(gov $ACPI 0)"
result acpi_gov1_during "$(gov $ACPI 1)"
result acpi_journal_during "$(journal)"
result acpi_qos0_during "$(cat $ACPI/$CPU_DIR/cpu0/power/pm_qos_resume_latency_us)"
result acpi_qos1_during "$(cat $ACPI/$CPU_DIR/cpu1/power/pm_qos_resume_latency_us)"
result acpi_qos2_during "$(cat $ACPI/$CPU_DIR/cpu2/power/pm_qos_resume_latency_us)"
kill -INT $SCX_TT_PID
finish_scx_tt acpi
restored acpi $ACPI
result acpi_journal_after "$(journal)"

# 1b. dpm+dvfs on the acpi tree, SIGINT
start_scx_tt dpmdvfs --table $HERE/freq_dpm.json --planner dpm+dvfs --freq-backend cpufreq \
  --sysfs-root $ACPI --run-dir $RUN_DIR --freq-log $OUT/dpmdvfs.freq.jsonl \
  --idle-log $OUT/dpmdvfs.idle.jsonl --planner-log $OUT/dpmdvfs.plog \
  --trace $OUT/dpmdvfs.trace.jsonl --summary-json $OUT/dpmdvfs.json
result dpmdvfs_enable_ms "$(wait_state enabled 30000)"
sleep "$(arg tt.duration_s 4)"
result dpmdvfs_gov1_during "$(gov $ACPI 1)"
kill -INT $SCX_TT_PID
finish_scx_tt dpmdvfs
restored dpmdvfs $ACPI

# 2. intel_pstate (active), --freq-backend auto, SIGTERM
start_scx_tt pstate --table $PLAN --planner dvfs --sysfs-root $PSTATE --run-dir $RUN_DIR \
  --summary-json $OUT/pstate.json
result pstate_enable_ms "$(wait_state enabled 30000)"
sleep 2
result pstate_status_during "$(cat $PSTATE/$CPU_DIR/intel_pstate/status)"
result pstate_gov0_during "$(gov $PSTATE 0)"
result pstate_gov2_during "$(gov $PSTATE 2)"
kill -TERM $SCX_TT_PID
finish_scx_tt pstate
restored pstate $PSTATE

# 3. an error during start-up (a task that cannot be found), after the take-over
run_scx_tt ghost --table $HERE/freq_ghost.json --planner dvfs --freq-backend cpufreq \
  --sysfs-root $ACPI --run-dir $RUN_DIR --duration-s 2
restored ghost $ACPI

# 4. SIGKILL; the next start restores what it left
start_scx_tt killed1 --table $PLAN --planner dvfs --freq-backend cpufreq --sysfs-root $ACPI \
  --run-dir $RUN_DIR
result killed1_enable_ms "$(wait_state enabled 30000)"
sleep 1
kill -KILL $SCX_TT_PID
wait $SCX_TT_PID
result killed1_rc $?
result killed1_disable_ms "$(wait_state disabled 10000)"
result killed1_gov1_after "$(gov $ACPI 1)"
result killed1_journal_after "$(journal)"
run_scx_tt next --table $PLAN --planner dvfs --freq-backend cpufreq --sysfs-root $ACPI \
  --run-dir $RUN_DIR --duration-s 1
result next_said_restored "$(grep -c 'did not exit cleanly' $OUT/next.err)"
restored next $ACPI

# 5. SIGKILL; `scx_tt restore` restores what it left
start_scx_tt killed2 --table $PLAN --planner dvfs --freq-backend cpufreq --sysfs-root $ACPI \
  --run-dir $RUN_DIR
result killed2_enable_ms "$(wait_state enabled 30000)"
sleep 1
kill -KILL $SCX_TT_PID
wait $SCX_TT_PID
result killed2_rc $?
result killed2_disable_ms "$(wait_state disabled 10000)"
result killed2_gov1_after "$(gov $ACPI 1)"
scx_tt restore --run-dir $RUN_DIR > $OUT/restore.out 2>&1
result restore_rc $?
cat $OUT/restore.out
restored restore $ACPI
scx_tt restore --run-dir $RUN_DIR > $OUT/restore2.out 2>&1
result restore2_rc $?
result restore2_nothing "$(grep -c 'nothing to restore' $OUT/restore2.out)"
result journal_end "$(journal)"
exit 0
