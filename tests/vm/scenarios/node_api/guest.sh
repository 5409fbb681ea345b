# The node admission API scx_tt.node/v1 (docs/cluster.md, "The node API") on the kernel run:
# scx_tt --planner bss on the admit scenario's plan (managed CPU 1, 10 ms slots, frame 10: tt-a
# 4 of every 10, be in the slack; -smp 2: CPU 0 is housekeeping) with --node-api on
# 127.0.0.1:7443 and a token file. One busy process outside the plan, APP, started once scx_tt
# is attached. 1 s after the attach, over HTTP:
#   cap_noauth   GET  /v1/capacity without the token              -> 401
#   cap0         GET  /v1/capacity                                 -> 200, the plan's tasks
#   dry          POST /v1/dry-run ns/app util 0.3 within 100 ms, select APP -> admit, cpus [1]
#   adm          POST /v1/admit   the same                         -> admitted, cpus [1]
#   big          POST /v1/dry-run ns/big util 0.9 within 100 ms    -> admit false, a reason
#   nosel        POST /v1/admit   ns/nosel without select          -> 400 naming select
#   badutil      POST /v1/admit   ns/bad util 1.5                  -> 400 naming timing.util
#   cap1         GET  /v1/capacity (1 s after the admit)           -> ns/app on CPU 1
# ~4 s after the admit:
#   rm           POST /v1/remove  ns/app                           -> removed
#   cap2         GET  /v1/capacity                                 -> the plan's again
#   st           scx_tt ctl status (the control socket)            -> ns/app removed from slot R
# then the run ends 2 s later (SIGTERM). Every status and body is left in /out: NAME_status
# (results) and NAME.body. busybox wget sends each request (-S: the status line); it keeps no
# body of a non-2xx answer (it only says "server returned error"), so the requests that must be
# refused go over busybox nc as raw HTTP/1.1 (NAME.http: the whole answer).
. /tt/lib.sh
DEFAULT_DURATION_S=11
PLAN=/tt/scenarios/admit/admit.json
PORT=7443
API=http://127.0.0.1:$PORT
TOKEN_FILE=/tmp/node-token
# the guest's /init brings no network up: the loopback interface, for 127.0.0.1
ip link set lo up || ifconfig lo 127.0.0.1 up
result lo_up "$(ip link show lo | grep -c UP)"
# a token of visible ASCII, in a file its owner alone may read (scx_tt refuses it otherwise)
TOKEN="tt-vm-node-$(cat /proc/sys/kernel/random/uuid 2>/dev/null || echo 4242)"
umask 077
echo "$TOKEN" > $TOKEN_FILE
chmod 600 $TOKEN_FILE
umask 022

# api NAME GET|POST PATH [BODY] [noauth]: one request with busybox wget; the status (from -S)
# as result NAME_status, wget's exit code as NAME_wget_rc, the body in NAME.body (a 2xx answer
# only), wget's messages in NAME.wget.
api() {
  name=$1 method=$2 path=$3 body=$4 auth=$5
  set -- -q -S -O "$OUT/$name.body"
  [ "$auth" = noauth ] || set -- "$@" --header "Authorization: Bearer $TOKEN"
  [ "$method" = POST ] \
    && set -- "$@" --header "Content-Type: application/json" --post-data "$body"
  t0=$(uptime_ms)
  wget "$@" "$API$path" 2> "$OUT/$name.wget"
  rc=$?
  status=$(sed -n 's/^ *HTTP\/1\.[01] \([0-9][0-9]*\).*/\1/p' "$OUT/$name.wget" | head -1)
  result "${name}_status" "${status:-none}"
  result "${name}_wget_rc" $rc
  result "${name}_ms" $(( $(uptime_ms) - t0 ))
  echo "tt-vm: $method $path: $status $(cat "$OUT/$name.body" 2>/dev/null)"
}

# api_raw NAME POST PATH BODY: the same request as raw HTTP/1.1 over busybox nc
# (Connection: close): the whole answer in NAME.http, its status as NAME_status, its body in
# NAME.body.
api_raw() {
  name=$1 method=$2 path=$3 body=$4
  t0=$(uptime_ms)
  printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$method" "$path" "$PORT" "$TOKEN" "${#body}" "$body" \
    | nc 127.0.0.1 $PORT > "$OUT/$name.http"
  status=$(head -1 "$OUT/$name.http" | cut -d' ' -f2)
  tr -d '\r' < "$OUT/$name.http" | sed '1,/^$/d' > "$OUT/$name.body"
  result "${name}_status" "${status:-none}"
  result "${name}_ms" $(( $(uptime_ms) - t0 ))
  echo "tt-vm: $method $path (nc): $status $(cat "$OUT/$name.body")"
}

# wait_api TIMEOUT_MS: until GET /v1/capacity answers 200 (the node API starts with the
# control socket); prints the ms it took, or "timeout".
wait_api() {
  t0=$(uptime_ms)
  until wget -q -O /dev/null --header "Authorization: Bearer $TOKEN" "$API/v1/capacity" \
      2> /dev/null; do
    [ $(( $(uptime_ms) - t0 )) -ge "$1" ] && { echo "timeout"; return 1; }
    sleep 0.1
  done
  echo $(( $(uptime_ms) - t0 ))
}

# start_control_run's warm-up run takes the measured run's arguments but not its --control, and
# --node-api needs --control (the warm-up then fails at once, exit 2): so the warm-up (1 s,
# unmeasured) without the node API's flags, then start_control_run's steps for the measured run
# with them
start_node_run() {
  run_scx_tt warmup --table $PLAN --planner bss --duration-s 1
  witness_start && WITNESS_ON=1
  start_scx_tt node_api --table $PLAN --planner bss --planner-log $OUT/node_api.plog \
    --node-api 127.0.0.1:$PORT --node-token-file $TOKEN_FILE --node-name vm-node \
    --duration-s "$(bounded_duration_s "$(arg tt.duration_s "$DEFAULT_DURATION_S")")" \
    --control "$SOCK" --trace "$OUT/node_api.trace.jsonl" --summary-json "$OUT/node_api.json"
  result node_api_enable_ms "$(wait_state enabled 120000)"
  result node_api_control_ms "$(wait_control 60000)"
  run_window_start "$(arg tt.duration_s "$DEFAULT_DURATION_S")"
}
start_node_run
result api_ms "$(wait_api 60000)"
APP=$(start_busy_loop)
result app_pid $APP
sleep 1
api cap_noauth GET /v1/capacity "" noauth
api cap0 GET /v1/capacity
REQ='{"name":"ns/app","vcpus":1,"timing":{"util":0.3,"latency_us":100000},"select":{"pid":'$APP'}}'
api dry POST /v1/dry-run "$REQ"
api adm POST /v1/admit "$REQ"
result admitted_ms "$(uptime_ms)"
# (without select: a dry run may test a reservation before its threads exist)
api big POST /v1/dry-run '{"name":"ns/big","vcpus":1,"timing":{"util":0.9,"latency_us":100000}}'
api_raw nosel POST /v1/admit '{"name":"ns/nosel","vcpus":1,"timing":{"util":0.1,"latency_us":100000}}'
api_raw badutil POST /v1/admit \
  '{"name":"ns/bad","vcpus":1,"timing":{"util":1.5,"latency_us":100000},"select":{"pid":'$APP'}}'
sleep 1
api cap1 GET /v1/capacity
# ns/app runs in its slots for ~4 s in all, then leaves the plan
sleep 3
api rm POST /v1/remove '{"name":"ns/app"}'
api cap2 GET /v1/capacity
# the planner's view over the control socket: ns/app removed, and from which slot
ctl st status
stop_scx_tt node_api 2
kill $APP 2> /dev/null
exit 0
