# A multi-core node (issue 34 item 2): scx_tt --planner bss enforces multicore.json, a plan from
# `scx_tt plan gen --tasks 6 --util 1.6 --cpus 4 --slot-us 10000 --frame-slots 20 --period
# 10..20 --wcet 1..4 --seed 7` (CPUs 1-4 managed, CPU 0 housekeeping; -smp 5; 10 ms slots, frame
# 20; six busy tt tasks over the four CPUs). While the table runs, over the control socket:
#   vm     `admit --qemu vmm --util 0.2 --latency-us 100000`: a real QEMU VM of 2 vCPUs (nested
#          TCG), one task per vCPU thread, 1 slot every 5 each, on two distinct CPUs
#   job    `admit --pid` of a busy process: one job of 6 slots within 30, then it leaves
#   firmN  `admit-firm` of 2 slots within 30 for each plan task (each on its own CPU)
#   st     status
# Leaves the trace, the summary, the witness, the planner log, every reply and the vCPU threads.
. /tt/lib.sh
DEFAULT_DURATION_S=12
PLAN=$HERE/multicore.json
VM=$(QEMU_SMP=2 start_qemu_spinner vmm paused)
result vm_pid $VM
result vm_vcpu_ms "$(wait_qemu_vcpu $VM 60000 2)"
start_control_run multicore 1 --table $PLAN --planner bss --planner-log $OUT/multicore.plog
qemu_cont vmm
sleep 1
for t in /proc/$VM/task/*; do echo "$(basename $t) $(cat $t/comm)"; done > "$OUT/vmm.threads"
ctl vm admit --name vm --qemu vmm --util 0.2 --latency-us 100000
JOB=$(start_busy_loop)
result job_pid $JOB
ctl job admit --name job --pid $JOB --wcet-slots 6 --deadline-slots 30 --after leave
for t in t0 t1 t2 t3 t4 t5; do
  ctl firm_$t admit-firm --task $t --wcet-slots 2 --deadline-slots 30
done
sleep 3
ctl st status
kill $JOB
stop_scx_tt multicore 1
kill $VM 2> /dev/null
exit 0
