// Generated BPF skeleton (OUT_DIR/bpf_skel.rs), built by build.rs from src/bpf/tt_sched.bpf.c.
include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
