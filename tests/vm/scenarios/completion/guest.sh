# Issue 13 item 2: job completion on a static table. completion.json on CPU 1: three tt_jobs
# tasks released every 100 ms on the slot grid (t0 from the --trace header), each job spinning
# 30-100 % of its budget: `jy` ends each job with sched_yield() and then spins, runnable, until
# its next release (completion "yield"), except its job released at t0 + 3 s, which runs 36 ms
# of its 30 ms of slots and so ends in the next job's slots; `jb` sleeps until its next release in 3 ms naps
# (completion "block"); `jn` yields like jy but its completion is "none"; `filler` is the be task
# that should get what jy and jb leave. The measured run reads the observation ring every slot
# (SCX_TT_TEST_OBS). Leaves completion.{json,trace.jsonl,obs.jsonl,out,err,witness}, and the
# jobs' logs jy.log, jb.log, jn.log. Argument: tt.duration_s (default 10).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-10}
PLAN=$HERE/completion.json
# Warm-up, not measured (TCG translates new code paths on first use); the workloads wait for
# the trace header, so the warm-up writes one too. Its files are removed before the measured run.
run_scx_tt warmup --table $PLAN --duration-s 3 --trace $OUT/completion.trace.jsonl
rm -f $OUT/completion.trace.jsonl $OUT/jy.log $OUT/jb.log $OUT/jn.log
witness_start
export SCX_TT_TEST_OBS=$OUT/completion.obs.jsonl
run_scx_tt completion --table $PLAN --duration-s "$D" --trace $OUT/completion.trace.jsonl \
  --summary-json $OUT/completion.json --timeline-slots 40
unset SCX_TT_TEST_OBS
witness_stop completion
exit 0
