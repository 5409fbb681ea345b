# Planner mode under dvfs (docs/planner.md, "Kernel path"): scx_tt --planner dvfs enforces
# planner_dvfs.json (one managed CPU, tt-a 15 of every 50 slots and tt-b 30 of every 100, 10 ms
# slots, frame 100) with --control and --trace; after 2 s `scx_tt ctl` asks the status, a swap
# to dpm (refused: exit 1), a swap to bss (exit 0, the reply names from_slot) and the status
# again; scx_tt runs on to tt.duration_s (default 5). Leaves the trace, the summary, every reply
# and results (exit codes, sched_ext state, socket left).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-5}
SOCK=/run/tt.sock
PLAN=$HERE/planner_dvfs.json

# Warm-up, not measured (TCG translates new code paths on first use; see delivery/guest.sh).
run_scx_tt warmup --table $PLAN --planner dvfs --duration-s 1
start_scx_tt dvfs --table $PLAN --planner dvfs --duration-s "$D" --control $SOCK \
  --trace $OUT/dvfs.trace.jsonl --summary-json $OUT/dvfs.json
sleep 2
ctl status_dvfs status
ctl refuse set-policy dpm
ctl swap set-policy bss
ctl status_bss status
finish_scx_tt dvfs
exit 0
