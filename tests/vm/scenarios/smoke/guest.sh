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
# What the kernel's BTF has, read by bpftool (independent of scx_tt), and a 1 s run of scx_tt,
# whose start-up notes name what the kernel lacks (check.rs compares the two).
btf=$(bpftool btf dump file /sys/kernel/btf/vmlinux format raw 2>/dev/null)
for piece in SCX_OPS_ENQ_EXITING SCX_OPS_ENQ_MIGRATION_DISABLED scx_bpf_cpuperf_set; do
  case $btf in *"'$piece'"*) result "btf_$piece" yes ;; *) result "btf_$piece" no ;; esac
done
result kernel_release "$(uname -r)"
scx_tt --table /tt/scenarios/delivery/demo_one_cpu.json --duration-s 1 > $OUT/run.out 2> $OUT/run.err
result run_rc $?
result run_state "$(scx_state)"
# The file transfer to the host is byte-exact (check.rs, TRANSFER): files with and without a
# final newline, an empty one, one ending in a blank line, with a tab and a carriage return;
# their sizes and checksums as the guest sees them go into the results.
printf '{"a": 1}\n\n\t{"b": "tab"}\r\n{"c": 3}\n' > $OUT/xfer_eol.jsonl
printf 'first line\nno newline at the end' > $OUT/xfer_noeol.txt
: > $OUT/xfer_empty.txt
printf 'a blank line follows\n\n' > $OUT/xfer_blank_end.txt
for f in xfer_eol.jsonl xfer_noeol.txt xfer_empty.txt xfer_blank_end.txt; do
  result "${f}_bytes" "$(wc -c < $OUT/$f)"
  result "${f}_md5" "$(md5sum < $OUT/$f | cut -d' ' -f1)"
done
exit $ok
