# Run-time admission of tasks the plan does not name (issue 15; docs/control.md, `admit`):
# scx_tt --planner bss enforces admit.json (managed CPU 1, 10 ms slots, frame 10: tt-a 4 of
# every 10, be in the slack; -smp 2: CPU 0 is housekeeping). Outside the plan: two busy
# processes and two real QEMU VMs (qemu-system-x86_64, TCG nested in this TCG guest, 1 vCPU
# spinning in its boot sector, -name NAME,debug-threads=on so that the vCPU thread is named
# `CPU 0/TCG`), running from the attach on. 1 s after it:
#   app  `admit --pid` 3 slots every 10                      -> accepted (exit 0)
#   vm1  `admit --qemu vm1 --util 0.2 --latency-us 100000`  -> 1 slot every 5: accepted
#   vm2  the same for vm2                                    -> rejected (exit 3: 4+3+2+2 > 10)
#   big  `admit --pid` 5 slots every 10                      -> rejected (exit 3)
#   rt   a SCHED_FIFO sleeper                                -> refused (exit 1, says what to do)
# then vm1 is killed (its capacity is freed once its vCPU thread is gone) and vm2 is asked again
# (vm2b: accepted); 2 s later `remove --task app` takes app out of the plan: its thread
# leaves the managed CPU for the housekeeping one; then `job`, a new busy process, is admitted
# aperiodic (6 slots within 30, `--after leave`) and leaves the plan after its job. Leaves the
# trace, the summary, the witness, the planner log, every reply, the vCPU threads' names and the
# results.
. /tt/lib.sh
DEFAULT_DURATION_S=22
PLAN=$HERE/admit.json
# The QEMUs start before scx_tt with their vCPUs paused (their start-up stalls the whole TCG
# guest for seconds), the busy processes and the VMs' vCPUs once scx_tt is attached: six CPU
# hogs on the guest's two vCPUs while scx_tt loaded made its load take 18-35 s, once over
# start_control_run's 120 s on a slow CI host (no socket: every request exit 2). Admitting a
# process that started after the attach is the same request as one from before.
VM1=$(start_qemu_spinner vm1 paused)
VM2=$(start_qemu_spinner vm2 paused)
result vm1_pid $VM1
result vm2_pid $VM2
result vm1_vcpu_ms "$(wait_qemu_vcpu $VM1 60000)"
result vm2_vcpu_ms "$(wait_qemu_vcpu $VM2 60000)"
start_control_run admit 1 --table $PLAN --planner bss --planner-log $OUT/admit.plog
APP=$(start_busy_loop)
BIG=$(start_busy_loop)
result app_pid $APP
result big_pid $BIG
qemu_cont vm1
qemu_cont vm2
sleep 1
# the QEMU processes' threads as the kernel names them, for the host to compare
for q in vm1 vm2; do
  pid=$(eval echo \$$(echo $q | tr a-z A-Z))
  for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/comm)"; done > "$OUT/$q.threads"
done
ctl app admit --name app --pid $APP --period-slots 10 --wcet-slots 3
ctl vm1 admit --name vm1 --qemu vm1 --util 0.2 --latency-us 100000
ctl vm2 admit --name vm2 --qemu vm2 --util 0.2 --latency-us 100000
ctl big admit --name big --pid $BIG --period-slots 10 --wcet-slots 5
# only needed for the rejection: it would load the housekeeping CPUs, where the VMs' QEMU main
# threads (which their vCPU threads wait for) run
kill $BIG
# a real-time thread is refused, saying why and what to do (a sleeper: a busy SCHED_FIFO loop
# would starve the housekeeping CPU; on CPU 0: a real-time task is no sched_ext task, it would
# run on CPU 1 as well)
taskset -c 0 chrt -f 1 sleep 100 &
RT=$!
result rt_pid $RT
ctl rt admit --name rt --pid $RT --period-slots 10 --wcet-slots 1
sleep 2
kill -9 $VM1
wait $VM1 2> /dev/null
sleep 1
ctl vm2b admit --name vm2 --qemu vm2 --util 0.2 --latency-us 100000
# app leaves the plan: its busy thread runs on the housekeeping CPU from then on
sleep 2
ctl rm_app remove --task app
# an aperiodic task: one job of 6 slots within 30 slots (0.3 s, within the planner's horizon), then its thread leaves the
# plan (`--after leave`) and runs on the housekeeping CPUs again
sleep 1
JOB=$(start_busy_loop)
result job_pid $JOB
ctl job admit --name job --pid $JOB --wcet-slots 6 --deadline-slots 30 --after leave
sleep 2
ctl st status
kill $JOB
stop_scx_tt admit 1
kill $APP $BIG $RT $VM2 $JOB 2> /dev/null
exit 0
