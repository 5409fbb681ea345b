// bindgen view of src/bpf/intf.h, built by build.rs.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]
include!(concat!(env!("OUT_DIR"), "/bpf_intf.rs"));
