//! The core crate (`crates/tt-core`) stays pure, checked two ways (issue 33):
//! 1. its dependency closure (normal dependencies, transitively, from `cargo metadata`) holds
//!    only crates that cannot do I/O: an allowlist, so a new dependency is a decision made here,
//!    and never libc, nix, libbpf-rs or scx_utils;
//! 2. its sources name no file, clock, thread, lock, environment or process API.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Serialization and error derives, and what they are built from: none reads a file, a clock or
/// the environment at run time (proc-macro crates run only at compile time).
const ALLOWED: &[&str] = &[
    "tt-core",
    "serde",
    "serde_core",
    "serde_derive",
    "serde_json",
    "serde_path_to_error",
    "serde_norway",
    "unsafe-libyaml-norway",
    "thiserror",
    "thiserror-impl",
    "indexmap",
    "hashbrown",
    "equivalent",
    "itoa",
    "ryu",
    "zmij",
    "memchr",
    "proc-macro2",
    "quote",
    "syn",
    "unicode-ident",
];

/// Never in the core, whatever the allowlist says.
const FORBIDDEN_CRATES: &[&str] = &[
    "libc",
    "nix",
    "libbpf-rs",
    "libbpf-sys",
    "scx_utils",
    "scx_stats",
];

/// Source patterns the core must not use.
const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::time",
    "Instant",
    "SystemTime",
    "std::thread",
    "Mutex",
    "RwLock",
    "std::sync::atomic",
    "std::env",
    "std::process",
    "std::net",
    "std::os::unix::fs",
    "libc::",
    "File::",
    "OpenOptions",
];

#[derive(serde::Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    resolve: Resolve,
}
#[derive(serde::Deserialize)]
struct Package {
    id: String,
    name: String,
}
#[derive(serde::Deserialize)]
struct Resolve {
    nodes: Vec<Node>,
}
#[derive(serde::Deserialize)]
struct Node {
    id: String,
    deps: Vec<NodeDep>,
}
#[derive(serde::Deserialize)]
struct NodeDep {
    pkg: String,
    dep_kinds: Vec<DepKind>,
}
#[derive(serde::Deserialize)]
struct DepKind {
    kind: Option<String>,
}

/// The names of the packages `root` depends on at run or build time (not dev), transitively.
fn closure(meta: &Metadata, root: &str) -> BTreeSet<String> {
    let names: BTreeMap<&str, &str> = meta
        .packages
        .iter()
        .map(|p| (p.id.as_str(), p.name.as_str()))
        .collect();
    let nodes: BTreeMap<&str, &Node> = meta
        .resolve
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), n))
        .collect();
    let start = meta
        .packages
        .iter()
        .find(|p| p.name == root)
        .unwrap_or_else(|| panic!("no package {root} in the workspace"));
    let mut seen = BTreeSet::new();
    let mut todo = vec![start.id.as_str()];
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        for d in &nodes[id].deps {
            if d.dep_kinds.iter().any(|k| k.kind.as_deref() != Some("dev")) {
                todo.push(d.pkg.as_str());
            }
        }
    }
    seen.into_iter().map(|id| names[id].to_string()).collect()
}

/// Each use of a forbidden pattern in `text`, as `line: pattern`, outside comments.
fn forbidden_uses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for p in FORBIDDEN {
            if code.contains(p) {
                out.push(format!("{}: {p}: {}", i + 1, line.trim()));
            }
        }
    }
    out
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_core_depends_only_on_crates_that_cannot_do_io() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // this machine's target only: the other platforms' crates may not be downloaded
    let host = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    let host = String::from_utf8_lossy(&host.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc -vV names the host");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        .arg(&host)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Metadata = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let deps = closure(&meta, "tt-core");
    println!("tt-core's dependency closure: {deps:?}");
    assert!(
        deps.contains("serde_json"),
        "the closure was not read: {deps:?}"
    );
    let bad: Vec<_> = deps
        .iter()
        .filter(|d| FORBIDDEN_CRATES.contains(&d.as_str()))
        .collect();
    assert!(bad.is_empty(), "tt-core depends on {bad:?}");
    let unknown: Vec<_> = deps
        .iter()
        .filter(|d| !ALLOWED.contains(&d.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "tt-core depends on {unknown:?}, not on the allowlist of crates that cannot do I/O \
         (tests/core_purity.rs): keep I/O at the edge, or add it there with the reason"
    );
    // the edge package does use the crates the core may not: the closure walk sees them
    assert!(closure(&meta, "scx_tt").contains("libc"));
}

#[test]
fn the_core_sources_use_no_file_clock_thread_lock_env_or_process_api() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/tt-core/src");
    let mut files = Vec::new();
    rs_files(&root, &mut files);
    assert!(
        files.len() > 50,
        "only {} files under {}",
        files.len(),
        root.display()
    );
    let mut hits = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        for h in forbidden_uses(&text) {
            hits.push(format!("{}:{h}", f.display()));
        }
    }
    assert!(hits.is_empty(), "I/O in the core:\n{}", hits.join("\n"));
}

#[test]
fn the_source_check_finds_a_use_and_skips_comments() {
    let text =
        "use std::fs::File;\n// std::thread::spawn in a comment\nlet t = Instant::now(); // x\n";
    let hits = forbidden_uses(text);
    assert_eq!(
        hits,
        vec![
            "1: std::fs: use std::fs::File;".to_string(),
            "3: Instant: let t = Instant::now(); // x".to_string()
        ]
    );
}
