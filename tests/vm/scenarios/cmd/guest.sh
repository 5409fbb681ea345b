# Debugging aid: runs the command given as tt.cmd on the kernel command line, commas for spaces
# (run.sh --scenario cmd --arg tt.cmd=scx_tt,--table,/tt/scenarios/errors/one_cpu.json,--duration-s,5).
. /tt/lib.sh
cmd=$(cmdline_arg tt.cmd | tr ',' ' ')
echo "tt-vm: $cmd"
$cmd
rc=$?
echo "tt-vm: exit code $rc, sched_ext state $(scx_state)"
exit $rc
