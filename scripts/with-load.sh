#!/bin/bash
# Runs CMD with host load beside it for its whole run, and returns CMD's exit status:
# `stress-ng --cpu N` (N = SCX_TT_LOAD_CPUS, default 2: every core of the 2-core machines) at
# nice 0 starts before CMD and is stopped, workers included, after it, whatever happens: CMD
# fails, Ctrl-C, SIGTERM. `make test-vm-loaded` runs the VM tests under it (docs/vm-harness.md).
#
# Usage: with-load.sh CMD [ARG]...
# The VM tests' bounds and retries are meant to hold on a busy host too (CI machines are shared);
# this makes "busy" reproducible. run.sh still gives QEMU's session autogroup nice -20, so this
# measures how well that shields the guest from work in another session, such as a build.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: with-load.sh CMD [ARG]..." >&2; exit 2; }
command -v stress-ng >/dev/null \
  || { echo "with-load: no stress-ng (bash scripts/install-deps.sh)" >&2; exit 1; }
CPUS=${SCX_TT_LOAD_CPUS:-2}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# stress-ng runs in a session and process group of its own (setsid): one signal to the group
# reaches it and every worker, and a Ctrl-C at the terminal reaches only CMD (the traps below
# stop the load). The group also holds a watchdog that ends it when this script is gone without
# running its traps (SIGKILL: the watchdog's parent is then no longer this script; a test of
# this script's pid would still succeed on its zombie), so the load never outlives the run. A background job of a script
# is no process group leader, so setsid does not fork: $! is the group's id. `nice -n -CURRENT`
# gives nice 0 whatever niceness this script inherited (lowering it needs root).
setsid bash -c '
  nice -n "$(( -$(nice) ))" stress-ng --cpu "$1" --quiet &
  while read -r _ _ _ ppid _ < /proc/$$/stat && [ "$ppid" = "$2" ] && kill -0 $! 2>/dev/null; do
    sleep 2
  done
  kill -TERM -- -$$' with-load "$CPUS" $$ < /dev/null &
load=$!

stop_load() {
  kill -TERM -- "-$load" 2>/dev/null || return 0
  # the group's leader (the watchdog's shell) dies at once; stress-ng stops its workers, and
  # whatever is left of the group after 5 s gets SIGKILL
  wait "$load" 2>/dev/null
  for _ in $(seq 50); do
    pgrep -g "$load" > /dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$load" 2>/dev/null
  echo "with-load: stress-ng stopped"
}
trap stop_load EXIT
# CMD runs in the foreground, where it keeps the terminal's SIGINT (a background job of a script
# ignores it); bash runs these traps once CMD has returned, then the EXIT trap stops the load.
trap 'exit 130' INT
trap 'exit 143' TERM

sleep 1
pgrep -g "$load" -x stress-ng > /dev/null \
  || { echo "with-load: stress-ng did not start" >&2; exit 1; }
echo "with-load: stress-ng --cpu $CPUS at nice 0 (process group $load, a session of its own)" \
  "beside: $*"
echo "with-load: host: $(nproc) CPUs, load average $(loadavg) (1, 5, 15 min) at the start"
"$@"
rc=$?
echo "with-load: host load average $(loadavg) (1, 5, 15 min) at the end, load still running;" \
  "exit status $rc"
exit $rc
