# Issue 5 item 2b: scx_tt with a perf table (scx_bpf_cpuperf_set at each slot tick) and live
# energy. The guest has neither cpufreq nor RAPL, so the kfunc only records the request and the
# energy is the bundled model's estimate. Leaves perf.json (the table given to scx_tt),
# trace.jsonl, summary.json and scx_tt's output (cpuperf.out/.err).
# Arguments: tt.duration_s (default 5), tt.plan (default cpuperf.json here),
# tt.perf_cpu (default 1) and tt.perf (comma-separated frequencies, one per frame slot).
. /tt/lib.sh
D=$(cmdline_arg tt.duration_s); D=${D:-5}
PLAN=$(cmdline_arg tt.plan); PLAN=${PLAN:-$HERE/cpuperf.json}
CPU=$(cmdline_arg tt.perf_cpu); CPU=${CPU:-1}
ROW=$(cmdline_arg tt.perf); ROW=${ROW:-1.0,0.5,0.25,0.75}

echo "{\"$CPU\": [$ROW]}" > $OUT/perf.json
[ -d /sys/devices/system/cpu/cpufreq/policy0 ] && result cpufreq present || result cpufreq absent
ls -d /sys/class/powercap/intel-rapl:* > /dev/null 2>&1 && result rapl present || result rapl absent
witness_start
run_scx_tt cpuperf --table "$PLAN" --duration-s "$D" --perf-table $OUT/perf.json \
  --trace $OUT/trace.jsonl --summary-json $OUT/summary.json --stats 1 -v
witness_stop cpuperf
exit 0
