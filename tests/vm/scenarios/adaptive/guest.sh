# Issue 17: an adaptive task in planner mode (docs/adaptive.md). adaptive.json (this folder):
# managed CPU 1, 2 ms slots, frame 120; tt-a (a busy loop, 6 slots every 20) and `legacy`, class
# adaptive: tt_jobs blocking between jobs released every 40 ms (250 jobs, 4-8 ms of CPU each),
# then every 30 ms (3-6 ms) until the run ends. Neither period is announced. scx_tt
# --planner bss traces legacy's wakeups and prints its inferred period every second
# (adaptive.out); the witness records the kernel's switches. tt.duration_s (default 24).
. /tt/lib.sh
DEFAULT_DURATION_S=24
measured_run adaptive $HERE/adaptive.json "$(arg tt.duration_s $DEFAULT_DURATION_S)" --planner bss
exit 0
