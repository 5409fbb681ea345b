# Smoke boot: the guest kernel has sched_ext, no scheduler is attached, and every binary of the
# initramfs runs (libraries complete).
. /tt/lib.sh
ok=0
[ -d /sys/kernel/sched_ext ] && result sched_ext present || { result sched_ext missing; ok=1; }
result state "$(scx_state)"
result cpus "$(nproc)"
for b in scx_tt tt_timer_baseline stress-ng cyclictest bpftool; do
  if "$b" --help > /dev/null 2>&1 || "$b" --version > /dev/null 2>&1; then
    result "bin_$b" runs
  else
    result "bin_$b" broken; ok=1
  fi
done
# Whether this scx_tt has the run mode of the VM tests (the summary JSON).
scx_tt --help 2>&1 | grep -q -- --summary-json && result run_mode yes || result run_mode no
exit $ok
