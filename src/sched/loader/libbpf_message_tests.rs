use super::benign_libbpf_message;

#[test]
fn only_the_known_harmless_libbpf_warnings_are_dropped() {
    assert!(benign_libbpf_message(
        "libbpf: struct_ops tt_ops: member sub_cid_sched_updated not found in kernel, \
         skipping it as it's set to zero\n"
    ));
    assert!(benign_libbpf_message(
        "libbpf: map 'tt_ops': BPF map skeleton link is uninitialized\n"
    ));
    assert!(!benign_libbpf_message(
        "libbpf: struct_ops init_kern tt_ops: member dispatch not found in kernel\n"
    ));
    assert!(!benign_libbpf_message(
        "libbpf: prog 'tt_dispatch': BPF program load failed: Permission denied\n"
    ));
}
