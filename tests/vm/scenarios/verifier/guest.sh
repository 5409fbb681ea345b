# The BPF load's cost (a measuring aid, guest-only; docs/vm-harness.md "Where a VM test's time
# goes"): one scx_tt run of the demo plan (-smp 3: managed CPUs 1-2) with -v, whose load line
# gives the instructions the verifier walked (total and the largest programs), and while it is
# attached, per BPF map the kernel memory it holds (bpftool's bytes_memlock). Boot:
# bash tests/vm/run.sh --scenario verifier --smp 3 --live; figures on the console, in
# results.env and files/maps.txt.
. /tt/lib.sh
scx_tt --table /schedules/demo.json --duration-s 8 -v > $OUT/run.out 2> $OUT/run.err &
pid=$!
result enable_ms "$(wait_state enabled 60000)"
bpftool -j map show > $OUT/maps.json
wait $pid
result run_rc $?
load=$(grep "loaded in" $OUT/run.err)
echo "$load"
result verified_insns "$(echo "$load" | sed -n 's/.*the verifier walked \([0-9]*\) instructions.*/\1/p')"
# one "name bytes_memlock" line per map (bpftool's JSON, one object a map)
tr '{' '\n' < $OUT/maps.json | grep '"bytes_memlock"' |
  sed -n 's/.*"name":"\([^"]*\)".*"bytes_memlock":\([0-9]*\).*/\1 \2/p' > $OUT/maps.txt
cat $OUT/maps.txt
result memlock_total "$(awk '{ s += $2 } END { print s }' $OUT/maps.txt)"
exit 0
