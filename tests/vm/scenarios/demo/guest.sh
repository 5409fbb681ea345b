# `make demo` on a host without sched_ext: scx_tt enforces schedules/demo.json for 10 s and
# prints the per-slot timeline and its summary (-smp 3: managed CPUs 1-2, housekeeping CPU 0);
# its trace and summary JSON go to the host for the demo's report.
. /tt/lib.sh
echo "tt-vm: scx_tt --table /schedules/demo.json --duration-s 10 --timeline-slots 40"
scx_tt --table /schedules/demo.json --duration-s 10 --timeline-slots 40 \
  --trace $OUT/demo.trace.jsonl --summary-json $OUT/demo.json
rc=$?
echo "tt-vm: scx_tt exit code $rc, sched_ext state $(scx_state)"
exit $rc
