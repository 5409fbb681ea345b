# Issue 3 item 3: what happens to a tt task's slots when it blocks, exits or cannot be found.
# semantics.json on CPU 1: `sleeper` spins a while then sleeps 4 ms, over and
# over (it blocks mid-slot); `quitter` is a busy loop killed after 3 s (it exits); `ghost`
# selects a thread name nothing has (not found); `filler` is the be task that should take
# whatever they leave. Leaves summary.json, trace.jsonl and scx_tt's output (semantics.out/.err).
# Argument: tt.duration_s (default 8).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-8}
witness_start
# quitter is busybox `timeout`, whose watchdog leaves the process group in a double fork during
# the settle period: it must still be quitter's (the witness checks where it runs)
run_scx_tt semantics --table $HERE/semantics.json --duration-s "$D" \
  --trace $OUT/trace.jsonl --summary-json $OUT/summary.json --timeline-slots 40
witness_stop semantics
exit 0
