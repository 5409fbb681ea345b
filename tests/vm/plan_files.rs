//! The VM test plans (`tests/vm/scenarios/*/*.json`) are what the VM tests think they are:
//! every plan loads except `invalid_*`, which fail validation with a message naming the bad
//! field. Runs in the plain `cargo test` (no VM).

use std::path::{Path, PathBuf};

fn scenarios() -> PathBuf {
    crate::harness::repo().join("tests/vm/scenarios")
}

/// Every scenario folder's plans.
fn plans() -> Vec<PathBuf> {
    let ls = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect()
    };
    let mut v: Vec<PathBuf> = ls(&scenarios())
        .iter()
        .filter(|d| d.is_dir())
        .flat_map(|d| ls(d))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn is_invalid(p: &std::path::Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("invalid_"))
}

#[test]
fn valid_test_plans_load() {
    let valid: Vec<_> = plans().into_iter().filter(|p| !is_invalid(p)).collect();
    assert!(valid.len() >= 5, "test plans missing: {valid:?}");
    for p in valid {
        if let Err(e) = scx_tt::plan::from_file(&p) {
            panic!("{}: {e}", p.display());
        }
    }
}

#[test]
fn invalid_test_plans_fail_naming_the_field() {
    let invalid: Vec<_> = plans().into_iter().filter(|p| is_invalid(p)).collect();
    assert!(!invalid.is_empty());
    for p in invalid {
        let err = scx_tt::plan::from_file(&p).err().map(|e| e.to_string());
        // invalid_<field>.json names the field its error must mention.
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let field = stem.trim_start_matches("invalid_");
        match err {
            Some(msg) => assert!(msg.contains(field), "{}: {msg}", p.display()),
            None => panic!("{} loads but must be invalid", p.display()),
        }
    }
}

#[test]
fn lateness_plans_keep_the_measured_cpu_busy_on_a_common_grid() {
    for (file, slot_us) in [
        ("lateness_1000us.json", 1000),
        ("lateness_10000us.json", 10_000),
    ] {
        let p = scenarios().join("lateness").join(file);
        let plan = scx_tt::plan::from_file(&p).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(plan.slot_us, slot_us, "{file}");
        assert_eq!(
            plan.managed,
            vec![1],
            "{file}: bench/lateness.rs measures CPU 1"
        );
        assert_eq!(plan.housekeeping, vec![0], "{file}");
    }
}
