# Issue 3 item 6 a), b), e): a plan, first on a quiet machine, then with stress-ng and
# cyclictest loading the housekeeping CPU 0; a busy loop outside the plan runs throughout.
# Leaves quiet.json / loaded.json (scx_tt summaries), their traces and witnesses (RUN.trace.jsonl,
# RUN.witness), their stdout (timeline, histograms) and cyclictest.json. Arguments: tt.duration_s (default 10), tt.plan (default the demo plan),
# tt.loaded=0 to skip the loaded run, tt.foreign=waking for a task outside the plan that wakes
# up 100 times a second instead of the busy loop, tt.guard_us=N for scx_tt's --guard-us,
# tt.slot_clock=CLOCK for scx_tt's --slot-clock (timer, rt: the helper-thread clock).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-10}
PLAN=$(cmdline_arg tt.plan); PLAN=${PLAN:-/schedules/demo.json}
HK=0
GUARD=$(cmdline_arg tt.guard_us)
CLOCK=$(cmdline_arg tt.slot_clock)
set -- ${GUARD:+--guard-us $GUARD} ${CLOCK:+--slot-clock $CLOCK}

FOREIGN=$(cmdline_arg tt.foreign)
if [ "$FOREIGN" = waking ]; then foreign=$(start_waking_loop); else foreign=$(start_busy_loop); fi
result foreign_pid "$foreign"
result foreign_kind "${FOREIGN:-busy}"
# Warm-up, not measured: TCG translates each new guest code path (the scheduler's BPF, the
# sched_ext paths) on first use, which makes the first seconds after attaching slower.
run_scx_tt warmup --table "$PLAN" --duration-s 3 "$@"
witness_start
run_scx_tt quiet --table "$PLAN" --duration-s "$D" "$@" --summary-json $OUT/quiet.json --timeline-slots 40 \
  --trace $OUT/quiet.trace.jsonl
witness_stop quiet
if [ "$(cmdline_arg tt.loaded)" = 0 ]; then
  [ -d /proc/$foreign ] && result foreign_alive yes || result foreign_alive no
  kill $foreign
  exit 0
fi

stress-ng --cpu 1 --taskset $HK --timeout $((D + 20))s --quiet &
stress=$!
cyclictest --affinity $HK --threads 1 --priority 90 --interval 1000 --duration "$((D + 2))s" \
  --quiet --json=$OUT/cyclictest.json > $OUT/cyclictest.out 2>&1 &
cyclic=$!
witness_start
run_scx_tt loaded --table "$PLAN" --duration-s "$D" "$@" --summary-json $OUT/loaded.json --timeline-slots 40 \
  --trace $OUT/loaded.trace.jsonl
witness_stop loaded
wait $cyclic
result cyclictest_rc $?
cat $OUT/cyclictest.out
[ -d /proc/$foreign ] && result foreign_alive yes || result foreign_alive no
kill $stress $foreign 2>/dev/null
exit 0
