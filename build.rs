// Builds the BPF scheduler and the bindgen view of src/bpf/intf.h when the `bpf` feature is on
// (the default). Pure logic builds without clang: `cargo test --no-default-features --lib`.
fn main() {
    #[cfg(feature = "bpf")]
    {
        println!("cargo:rerun-if-env-changed=BPF_CLANG");
        // scx_cargo runs `clang` unless BPF_CLANG says otherwise; Debian 12 ships clang >= 18 only
        // as `clang-19`, so use it when there is no `clang` and BPF_CLANG is unset.
        let has = |bin: &str| {
            std::process::Command::new(bin)
                .arg("--version")
                .output()
                .is_ok()
        };
        if std::env::var_os("BPF_CLANG").is_none() && !has("clang") && has("clang-19") {
            std::env::set_var("BPF_CLANG", "clang-19");
        }
        scx_cargo::BpfBuilder::new()
            .expect("BPF builder (is clang >= 18 installed? set BPF_CLANG=clang-19)")
            .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
            .enable_skel("src/bpf/tt_sched.bpf.c", "bpf")
            .build()
            .expect("building src/bpf/tt_sched.bpf.c");
    }
}
