# Issue 16 item 4: seed 001's server designs in the kernel. servers_{ptps,crps}.json on CPU 1,
# 10 ms slots, frame 10: `a` (3 slots, completion none) runs 20-40 % of its 30 ms budget,
# sleeping 2 ms halfway (b reclaims the slot meanwhile, until a's wake-up preempts it), and
# sleeps until its next release, so most of its slots are left unused; `b` (3 slots) wants 60
# ms of CPU every 100 ms and is always runnable; `filler` is be work. Under ptps a's unused
# time idles; under crps b reclaims it (b's current job is released, not done and runnable).
# Leaves RUN.{json,trace.jsonl,out,err,witness} and the jobs' logs RUN-{a,b}.log for
# RUN = servers_ptps, servers_crps. Argument: tt.duration_s (default 8).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-8}
for RUN in servers_ptps servers_crps; do
  measured_run $RUN $HERE/$RUN.json "$D" --timeline-slots 20
done
exit 0
