# A larger node, run by hand (issue 34 item 3; `make test-scale`, not in make test): -smp 9 or
# more, every CPU but 0 managed. The plan is generated here: `scx_tt plan gen --tasks N (tt.tasks,
# default 40) --util U (tt.util, default 0.4 a managed CPU) --cpus K (nproc - 1) --slot-us 20000
# --frame-slots 20 --period 10..20 --wcet 1..2 --seed 11` (busy tasks, spawned by scx_tt).
# scx_tt --planner dvfs enforces it; while it runs, `ctl batch --timing` (tt.chunk requests,
# default 4, a connection; each round trip timed) sends a stream of requests, twice over: a firm job of 1
# slot within 40 for every plan task, K/2 busy processes admitted (1 slot every 10, placed by
# the planner across the CPUs), status, and the processes removed. Leaves the plan, the trace,
# the summary, the planner log, the witness and the client's replies and timings.
. /tt/lib.sh
DEFAULT_DURATION_S=20
CPUS=$(( $(nproc) - 1 ))
N=$(arg tt.tasks 40)
CHUNK=$(arg tt.chunk 4)
U=$(arg tt.util "$(awk -v k=$CPUS 'BEGIN { print 0.4 * k }')")
scx_tt plan gen --tasks "$N" --util "$U" --cpus $CPUS --slot-us 20000 --frame-slots 20 \
  --period 10..20 --wcet 1..2 --seed 11 --out $OUT/scale.plan.json 2> $OUT/gen.err
result gen_rc $?
result managed_cpus $CPUS
start_control_run scale 1 --table $OUT/scale.plan.json --planner dvfs --planner-log $OUT/scale.plog
PIDS=""
# busy processes to admit, at nice 19 until then: they start on the housekeeping CPU, where
# 16 of them at nice 0 starved the run loop and the client (admissions took 3-17 s)
for k in $(seq 1 $(( CPUS / 2 ))); do
  p=$(start_busy_loop)
  renice -n 19 -p $p > /dev/null
  PIDS="$PIDS $p"
done
result busy_pids "$(echo $PIDS | tr ' ' ,)"
tasks=$(seq 0 $(( N - 1 )))
for round in 1 2; do
  {
    for t in $tasks; do
      echo "{\"op\":\"admit_firm\",\"task\":\"t$t\",\"wcet_slots\":1,\"deadline_slots\":40}"
    done
    k=0
    for p in $PIDS; do
      echo "{\"op\":\"admit\",\"name\":\"p$round-$k\",\"select\":{\"pid\":$p},\"period_slots\":10,\"wcet_slots\":1}"
      k=$((k + 1))
    done
    echo '{"op":"status"}'
    k=0
    for p in $PIDS; do
      echo "{\"op\":\"remove\",\"task\":\"p$round-$k\"}"
      k=$((k + 1))
    done
  } > /tmp/round$round.jsonl
  # a connection per CHUNK requests: the server closes a connection 30 s after its accept
  # (MAX_CONN_AGE), and at -smp 9 on two host cores one admission took 3-15 s
  t0=$(uptime_ms) rc=0
  : > $OUT/round$round.reply; : > $OUT/round$round.err
  total=$(grep -c . /tmp/round$round.jsonl)
  i=1
  while [ $i -le $total ]; do
    sed -n "${i},$(( i + CHUNK - 1 ))p" /tmp/round$round.jsonl \
      | scx_tt ctl --socket "$SOCK" --timeout-s 60 batch --timing \
        >> $OUT/round$round.reply 2>> $OUT/round$round.err
    # the worst: 2 (unreachable) before 1 (an error reply) before 3 (a rejection) before 0
    case $? in
      2) rc=2 ;;
      1) [ $rc -ne 2 ] && rc=1 ;;
      3) [ $rc -eq 0 ] && rc=3 ;;
    esac
    i=$(( i + CHUNK ))
  done
  result round${round}_rc $rc
  result round${round}_ms $(( $(uptime_ms) - t0 ))
  result round${round}_requests $total
  sleep 2
done
kill $PIDS 2> /dev/null
stop_scx_tt scale 2
exit 0
