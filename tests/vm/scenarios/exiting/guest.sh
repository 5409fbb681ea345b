# Exiting threads of a tt task stay in its slots (src/bpf/tt_sched.bpf.c C, "Exiting and
# migration-disabled tasks"). exiting.json (this folder): managed CPU 1, 10 ms slots; `forker`
# owns 2 of every 4 slots and loops forever: `tt_jobs` (3 ms of CPU, then it exits and wakes
# its waiting parent, whose enqueue preempts it in its exit path), then the parent spins in the
# shell for a while, often past the end of its run; `spin` (a busy loop) owns the other slots,
# `filler` is be. The witness records the kernel's switches. tt.duration_s (default 10).
. /tt/lib.sh
measured_run exiting $HERE/exiting.json "$(arg tt.duration_s 10)"
exit 0
