# Guest side of a by-hand measurement (guest-only, no check.rs; docs/control.md "The socket"):
# how long a switch_table keeps the run loop and its client waiting.
#   small: switch_a.json <-> switch_b.json of the switch scenario, 8 switches; each reply's time
#          (the plan loads in ~1 ms: the rest is the wait for the run loop and the client);
#   big:   big_a.json -> big_b.json, the largest table this VM takes (2 managed CPUs x the
#          1,000,000-slot frame cap: 2,000,000 entries a half); `status` every 50 ms while the
#          switch loads, each reply's time (a run loop blocked by the kernel write answers none).
# Times from CLOCK_MONOTONIC (/proc/timer_list), in us, per binary: scx_tt, and $BEFORE when
# given (an older build added with SCX_TT_INITRD_EXTRA="/path/scx_tt:/tt/scx_tt-before").
# Run: bash tests/vm/run.sh --scenario switch_timing --smp 3 --timeout-s 900 --live
. /tt/lib.sh
BEFORE=/tt/scx_tt-before
SMALL=/tt/scenarios/switch

now_us() { awk '/^now at/ { printf "%d\n", $3 / 1000; exit }' /proc/timer_list; }

# timed_ctl ARGS...: one request; prints "<us> <reply>".
timed_ctl() {
  t0=$(now_us)
  r=$(scx_tt ctl --socket "$SOCK" --timeout-s 300 "$@" 2>&1)
  echo "$(( $(now_us) - t0 )) $r"
}

# up BIN PLAN LOG: starts BIN on PLAN with the control socket; waits for its first status.
up() {
  "$1" --table "$2" --control "$SOCK" --duration-s 600 > "$OUT/$3.out" 2> "$OUT/$3.err" &
  PID=$!
  i=0
  until scx_tt ctl --socket "$SOCK" status > /dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 1200 ] && { echo "tt-vm: $3: no status"; return 1; }
    usleep 100000
  done
}

down() {
  kill -TERM $PID; wait $PID
  cat "$OUT/$1.out" "$OUT/$1.err" | grep -v "^ " | head -20
}

measure() {
  bin=$1 tag=$2
  [ -x "$bin" ] || return 0
  up "$bin" $SMALL/switch_a.json "$tag-small" || return 0
  sleep 2
  for k in 1 2 3 4 5 6 7 8; do
    echo "tt-vm: $tag status $(timed_ctl status)"
    plan=$SMALL/switch_b.json; [ $((k % 2)) = 0 ] && plan=$SMALL/switch_a.json
    echo "tt-vm: $tag small switch $k $(timed_ctl switch-table $plan)"
    usleep 400000
  done
  down "$tag-small"
  up "$bin" $HERE/big_a.json "$tag-big" || return 0
  sleep 2
  echo "tt-vm: $tag big status before $(timed_ctl status)"
  T0=$(now_us)
  ( r=$(timed_ctl switch-table $HERE/big_b.json); echo "$r" > /tmp/sw ) &
  sw=$!
  while [ -d /proc/$sw ]; do
    at=$(( $(now_us) - T0 ))
    echo "tt-vm: $tag big status during, sent at $at us: $(timed_ctl status)"
    usleep 50000
  done
  echo "tt-vm: $tag big switch reply: $(cat /tmp/sw)"
  down "$tag-big"
}

measure "$(command -v scx_tt)" after
measure $BEFORE before
exit 0
