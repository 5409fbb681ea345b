// Builds the BPF scheduler and the bindgen view of src/bpf/intf.h when the `bpf` feature is on
// (the default). Pure logic builds without clang: `cargo test --no-default-features --lib`.
// Always: SCX_TT_GIT_REV, the git revision `scx_tt --version` prints.
fn main() {
    git_revision();
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

/// `SCX_TT_GIT_REV`: `git rev-parse --short HEAD`, with `-dirty` when tracked files differ from
/// it, or `unknown` outside a git tree (a crate tarball) or without git. Rerun when HEAD or the
/// branch it names changes (a commit, a checkout) or build.rs does; `-dirty` is as of that run
/// (docs/service.md, "Version"). The index is not watched: every `git add` would rebuild the
/// whole package.
fn git_revision() {
    let git = |args: &[&str]| -> Option<String> {
        // no optional locks: `status` must not rewrite the index it is watched by
        let out = std::process::Command::new("git")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let rev = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(rev) if !rev.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{rev}-dirty")
            } else {
                rev
            }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=SCX_TT_GIT_REV={rev}");
    // a watched path that does not exist would rerun this script on every build
    let watch = |p: std::path::PathBuf| {
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = std::path::PathBuf::from(dir);
        watch(dir.join("HEAD"));
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let common = git(&["rev-parse", "--git-common-dir"])
                .map(std::path::PathBuf::from)
                .unwrap_or(dir);
            watch(common.join(head_ref));
            watch(common.join("packed-refs"));
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
