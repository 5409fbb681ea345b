# Issue 16 item 5: a component of seed 001 inside one tt task. compositional.json on CPU 1: the
# task `comp` is tt_component with three periodic threads (hi 40 ms, mid 80 ms, lo 160 ms; each
# job spins 80 % of its wcet in slots of thread CPU time), whose interface Γ = (5, 4) the plan
# computes from the workload (RM), so scx_tt orders the threads by RM in comp's slots;
# `filler` is be work in the free slot. compositional_short.json is the same with the budget
# one slot smaller (Θ = 3): the workload no longer fits. Leaves RUN.{json,trace.jsonl,out,err,
# witness} and the threads' own logs RUN-{hi,mid,lo}.log for RUN in both.
# Argument: tt.duration_s (default 8).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-8}
for RUN in compositional compositional_short; do
  measured_run $RUN $HERE/$RUN.json "$D" --timeline-slots 20
done
exit 0
