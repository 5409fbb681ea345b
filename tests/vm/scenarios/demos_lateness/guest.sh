# bench/demos_lateness.rs (issue 18 item 6): window-start lateness of scx_tt and of a DEmOS-like
# userspace window switcher (tt_demos_baseline) on the same DEmOS configuration (demos.yaml:
# windows of 10 and 5 ms on CPU 1), one after the other in this VM, each with the witness.
# scx_tt runs the imported plan twice (RUN scx_guard: its default guard band; scx_noguard:
# --guard-us 0, so that CPU 1 is busy up to every window start as under the baseline); the
# baseline runs with the cgroup v2 freezer (DEmOS's way; cgroup2 is mounted here for it) and
# its timer thread on CPU 1 (freezer_cpu1) and on CPU 0 (freezer_cpu0), and with
# SIGSTOP/SIGCONT (signals_cpu1). Leaves per run NAME.witness (and NAME_witness_lost), scx_tt's
# summaries (NAME.json) and the baseline's reports (NAME.json). Argument: tt.duration_s (10).
. /tt/lib.sh
D=$(arg tt.duration_s 10)
scx_tt plan import --demos $HERE/demos.yaml --all-cpus 1 --out $OUT/demos.plan.json \
  2> $OUT/import.err
result import_rc $?
cat $OUT/import.err
measured_run scx_guard $OUT/demos.plan.json "$D"
measured_run scx_noguard $OUT/demos.plan.json "$D" --guard-us 0

mkdir -p /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup
result cgroup2_rc $?
baseline() {
  name=$1; shift
  witness_start
  tt_demos_baseline $HERE/demos.yaml --all-cpus 1 --duration-s "$D" --json $OUT/$name.json \
    "$@" > $OUT/$name.out 2>&1
  result "${name}_rc" $?
  witness_stop "$name"
  cat $OUT/$name.out
}
baseline freezer_cpu1 --method freezer --timer-cpu 1
baseline freezer_cpu0 --method freezer --timer-cpu 0
baseline signals_cpu1 --method signals --timer-cpu 1
exit 0
