// Builds the BPF scheduler and the bindgen view of src/bpf/intf.h when the `bpf` feature is on
// (the default). Pure logic builds without clang: `cargo test --no-default-features --lib`.
fn main() {
    #[cfg(feature = "bpf")]
    scx_cargo::BpfBuilder::new()
        .expect("BPF builder (is clang >= 18 installed? set BPF_CLANG=clang-19)")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/tt_sched.bpf.c", "bpf")
        .build()
        .expect("building src/bpf/tt_sched.bpf.c");
}
