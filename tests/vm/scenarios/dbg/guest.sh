. /tt/lib.sh
scx_tt --table /tt/scenarios/errors/one_cpu.json --duration-s 5 --stats 1 -v > /tmp/o 2>&1 &
pid=$!
for i in 1 2 3 4 5 6 7 8; do sleep 1; echo "t=$i state=$(scx_state) ops=$(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"; tail -3 /tmp/o; done
cat /proc/$pid/status | grep State
cat /proc/$pid/stack 2>/dev/null
cat /proc/$pid/wchan; echo
ls /proc/$pid/task
dmesg | tail -20
sleep 10
cat /tmp/o | tail -30
