//! Issue 19 item 4: the systemd unit, its defaults file, `make install`, the Debian package's
//! file list and `scx_tt --version` (docs/service.md).
//!
//! The VM boots a busybox initramfs, not systemd, so the unit is not started there; instead its
//! command lines are read here the way systemd reads them (a small reader of the unit and the
//! defaults file, `systemd-analyze verify` when the host has it) and run with arguments that
//! cannot attach anything: the run's command line with a plan on CPU 200 (refused by the
//! machine checks on every host, after the flags are parsed and the plan is loaded), and the
//! restore of an empty run directory.

mod common;

use common::{read_repo, BIN, ROOT};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A unit file: (section, key) → values in order (a key may repeat: ExecStopPost=...).
/// Comments (`#`, `;`) and blank lines are skipped; no line continuations (the unit has none,
/// which `unit_has_no_continuations_or_quotes` checks).
fn parse_unit(text: &str) -> BTreeMap<(String, String), Vec<String>> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not key=value: {line}"));
        out.entry((section.clone(), k.trim().to_string()))
            .or_default()
            .push(v.trim().to_string());
    }
    out
}

fn unit_value<'a>(
    unit: &'a BTreeMap<(String, String), Vec<String>>,
    sec: &str,
    key: &str,
) -> &'a str {
    match unit
        .get(&(sec.to_string(), key.to_string()))
        .map(Vec::as_slice)
    {
        Some([v]) => v,
        other => panic!("[{sec}] {key}: want one value, found {other:?}"),
    }
}

/// An EnvironmentFile: KEY=VALUE lines, `#` comments; a value in double or single quotes is
/// unquoted (systemd.exec, "EnvironmentFile").
fn parse_env(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not KEY=VALUE: {line}"));
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(v);
        out.insert(k.trim().to_string(), v.to_string());
    }
    out
}

/// A command line as systemd expands it (systemd.service, "Command lines"): words split on
/// whitespace; a word that is exactly `$VAR` becomes the value's whitespace-separated words
/// (none when empty), `${VAR}` anywhere in a word is replaced by the value in that one word.
/// Every variable must be defined.
fn expand(cmdline: &str, env: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for word in cmdline.split_whitespace() {
        if let Some(name) = word.strip_prefix('$').filter(|n| !n.starts_with('{')) {
            let v = env
                .get(name)
                .unwrap_or_else(|| panic!("${name} is not in the defaults"));
            out.extend(v.split_whitespace().map(str::to_string));
            continue;
        }
        let mut w = String::new();
        let mut rest = word;
        while let Some(i) = rest.find("${") {
            w.push_str(&rest[..i]);
            let end = rest[i..].find('}').expect("closing brace") + i;
            let name = &rest[i + 2..end];
            w.push_str(
                env.get(name)
                    .unwrap_or_else(|| panic!("${{{name}}} is not in the defaults")),
            );
            rest = &rest[end + 1..];
        }
        w.push_str(rest);
        out.push(w);
    }
    out
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A plan whose managed CPU 200 no test machine has: a start with it is refused by the machine
/// checks (docs/run-output.md "Start-up" step 1) after the flags parsed and the plan loaded.
fn refused_plan(dir: &Path) -> PathBuf {
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        r#"{ "version": 1, "slot_us": 1000, "frame_slots": 10,
             "cpus": { "managed": [200], "housekeeping": [0] },
             "tasks": [ { "name": "a", "pid": 1, "class": "tt", "period": 10, "wcet": 1 } ] }"#,
    )
    .expect("plan");
    plan
}

/// The messages of the machine checks (src/sched/system.rs): a start that got this far parsed
/// its command line and loaded its plan.
fn refused_by_the_machine_checks(stderr: &str) -> bool {
    [
        "must run as root",
        "this kernel has no sched_ext",
        "is attached",
        "sched_ext is busy",
        "plan CPU 200 does not exist",
    ]
    .iter()
    .any(|m| stderr.contains(m))
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn unit_has_no_continuations_or_quotes() {
    // what the reader above does not handle must not be in the unit
    for line in read_repo("packaging/scx_tt.service").lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        assert!(
            !line.ends_with('\\') && !line.contains('"') && !line.contains('\''),
            "{line}"
        );
    }
}

#[test]
fn the_units_command_lines_are_what_the_defaults_file_says() {
    let unit = parse_unit(&read_repo("packaging/scx_tt.service"));
    let env = parse_env(&read_repo("packaging/scx_tt.default"));
    assert_eq!(
        unit_value(&unit, "Service", "EnvironmentFile"),
        "/etc/default/scx_tt"
    );
    assert_eq!(env["SCX_TT_TABLE"], "/etc/scx_tt/plan.json");
    assert_eq!(env["SCX_TT_RUN_DIR"], "/run/scx_tt");
    assert_eq!(env["SCX_TT_FLAGS"], "");
    assert_eq!(
        expand(unit_value(&unit, "Service", "ExecStart"), &env),
        strs(&[
            "/usr/bin/scx_tt",
            "--table",
            "/etc/scx_tt/plan.json",
            "--run-dir",
            "/run/scx_tt"
        ])
    );
    assert_eq!(
        expand(unit_value(&unit, "Service", "ExecStopPost"), &env),
        strs(&["/usr/bin/scx_tt", "restore", "--run-dir", "/run/scx_tt"])
    );
    // flags are split into words, the plan path is one word whatever it holds
    let mut env2 = env.clone();
    env2.insert("SCX_TT_FLAGS".into(), "--planner bss  --stats 10".into());
    let argv = expand(unit_value(&unit, "Service", "ExecStart"), &env2);
    assert_eq!(argv[5..], strs(&["--planner", "bss", "--stats", "10"]));
    // every SCX_TT_ variable of the defaults is used by the unit, and no other
    let used: BTreeSet<&str> = ["ExecStart", "ExecStopPost"]
        .iter()
        .flat_map(|k| unit_value(&unit, "Service", k).split_whitespace())
        .filter_map(|w| w.find('$').map(|i| &w[i..]))
        .map(|w| {
            w.trim_start_matches('$')
                .trim_start_matches('{')
                .trim_end_matches('}')
        })
        .collect();
    let defined: BTreeSet<&str> = env.keys().map(String::as_str).collect();
    assert_eq!(used, defined);
    // restart like scx.service, but not for an invalid plan (exit 2); restore after any end
    assert_eq!(unit_value(&unit, "Service", "Restart"), "on-failure");
    assert_eq!(
        unit_value(&unit, "Service", "RestartPreventExitStatus"),
        "2"
    );
    assert_eq!(
        unit_value(&unit, "Unit", "ConditionPathIsDirectory"),
        "/sys/kernel/sched_ext"
    );
    assert_eq!(unit_value(&unit, "Unit", "Conflicts"), "scx.service");
    assert_eq!(
        unit_value(&unit, "Install", "WantedBy"),
        "multi-user.target"
    );
}

/// The unit's ExecStart (the binary and the plan replaced, the commented example flags of the
/// defaults file added) parses and loads its plan: the start gets to the machine checks. Its
/// ExecStopPost on an empty run directory has nothing to restore and succeeds.
#[test]
fn the_units_command_lines_run() {
    let dir = common::temp_dir("packaging", "cmdlines");
    let unit = parse_unit(&read_repo("packaging/scx_tt.service"));
    let defaults = read_repo("packaging/scx_tt.default");
    let mut env = parse_env(&defaults);
    let example = defaults
        .lines()
        .find_map(|l| {
            l.trim_start_matches('#')
                .trim()
                .strip_prefix("SCX_TT_FLAGS=")
        })
        .filter(|f| !f.is_empty())
        .expect("an example of SCX_TT_FLAGS in a comment");
    let run_dir = dir.join("run");
    env.insert(
        "SCX_TT_TABLE".into(),
        refused_plan(&dir).display().to_string(),
    );
    env.insert("SCX_TT_RUN_DIR".into(), run_dir.display().to_string());
    let sock = dir.join("ctl.sock");
    for flags in [
        String::new(),
        example.replace("/run/scx_tt/ctl.sock", &sock.display().to_string()),
    ] {
        env.insert("SCX_TT_FLAGS".into(), flags.clone());
        let argv = expand(unit_value(&unit, "Service", "ExecStart"), &env);
        assert_eq!(argv[0], "/usr/bin/scx_tt");
        let (code, _, err) = run(common::scx_tt().args(&argv[1..]));
        assert!(
            code == 1 && refused_by_the_machine_checks(&err),
            "ExecStart with SCX_TT_FLAGS={flags:?}: exit {code}: {err}"
        );
        assert!(!sock.exists() && !run_dir.exists());
    }
    let argv = expand(unit_value(&unit, "Service", "ExecStopPost"), &env);
    let (code, out, err) = run(common::scx_tt().args(&argv[1..]));
    assert_eq!(code, 0, "ExecStopPost: {out}{err}");
    assert!(out.contains("nothing to restore"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/service.md's /etc/default/scx for scx's own scx.service: its ExecStart runs
/// `${SCX_SCHEDULER} ${SCX_FLAGS}` through bash; scx_tt parses those flags and loads the plan.
#[test]
fn scx_service_runs_scx_tt_with_the_documented_flags() {
    let doc = read_repo("docs/service.md");
    let block = doc
        .split("```")
        .find(|b| b.contains("SCX_SCHEDULER=scx_tt"))
        .expect("docs/service.md shows /etc/default/scx for scx_tt");
    let env = parse_env(block.trim_start_matches(|c: char| c.is_alphanumeric()));
    assert_eq!(env["SCX_SCHEDULER"], "scx_tt");
    let dir = common::temp_dir("packaging", "scx");
    let flags = env["SCX_FLAGS"]
        .replace(
            "/etc/scx_tt/plan.json",
            &refused_plan(&dir).display().to_string(),
        )
        .replace("/run/scx_tt", &dir.join("run").display().to_string());
    assert!(flags.starts_with("--table "), "{flags}");
    let (code, _, err) = run(Command::new("bash")
        .args(["-c", "exec $SCX_SCHEDULER $SCX_FLAGS"])
        .env("SCX_SCHEDULER", BIN)
        .env("SCX_FLAGS", &flags));
    assert!(
        code == 1 && refused_by_the_machine_checks(&err),
        "scx.service's command line: exit {code}: {err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `make install` with `vars`: (exit code, output).
fn make_install(vars: &[String]) -> (i32, String) {
    let (code, out, err) = run(Command::new("make")
        .args(["-s", "--no-print-directory", "-C", ROOT, "install"])
        .arg(format!("BIN={BIN}"))
        .args(vars)
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL"));
    (code, format!("{out}{err}"))
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.insert(p.strip_prefix(base).expect("under").display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

const DOCS: [&str; 6] = [
    "README.md",
    "service.md",
    "run-output.md",
    "plan-format.md",
    "energy.md",
    "control.md",
];

fn listed(prefix: &str, sysconf: &str) -> BTreeSet<String> {
    let mut want: BTreeSet<String> = [
        format!("{prefix}/bin/scx_tt"),
        format!("{prefix}/lib/systemd/system/scx_tt.service"),
        format!("{sysconf}/default/scx_tt"),
        format!("{prefix}/share/doc/scx-tt/examples/demo.json"),
    ]
    .into_iter()
    .collect();
    want.extend(
        DOCS.iter()
            .map(|d| format!("{prefix}/share/doc/scx-tt/{d}")),
    );
    want
}

#[test]
fn make_install_installs_exactly_the_listed_files() {
    let dir = common::temp_dir("packaging", "install");
    let dest = dir.join("dest");
    let (code, out) = make_install(&[format!("DESTDIR={}", dest.display())]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(files_under(&dest), listed("usr/local", "etc"));
    // the unit follows PREFIX; the defaults file is the packaged one
    let unit = std::fs::read_to_string(dest.join("usr/local/lib/systemd/system/scx_tt.service"))
        .expect("unit");
    let exec = parse_unit(&unit);
    assert!(unit_value(&exec, "Service", "ExecStart").starts_with("/usr/local/bin/scx_tt "));
    assert!(unit_value(&exec, "Service", "ExecStopPost").starts_with("/usr/local/bin/scx_tt "));
    assert!(!unit.contains("/usr/bin/") && !unit.contains("/usr/share/doc"));
    assert_eq!(
        std::fs::read_to_string(dest.join("etc/default/scx_tt")).expect("defaults"),
        read_repo("packaging/scx_tt.default")
    );
    let mode = |p: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(dest.join(p))
            .expect(p)
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("usr/local/bin/scx_tt"), 0o755);
    assert_eq!(mode("usr/local/lib/systemd/system/scx_tt.service"), 0o644);
    assert_eq!(mode("etc/default/scx_tt"), 0o644);
    // an edited defaults file is the admin's: a second install keeps it
    std::fs::write(dest.join("etc/default/scx_tt"), "SCX_TT_TABLE=/mine.json\n").expect("edit");
    let (code, out) = make_install(&[format!("DESTDIR={}", dest.display())]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("keeping"), "{out}");
    assert_eq!(
        std::fs::read_to_string(dest.join("etc/default/scx_tt")).expect("defaults"),
        "SCX_TT_TABLE=/mine.json\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `make install PREFIX=/usr` installs what the Debian package holds ([package.metadata.deb]
/// assets in Cargo.toml), the unit byte for byte as packaged.
#[test]
fn the_debian_package_holds_what_make_install_installs() {
    let toml = read_repo("Cargo.toml");
    let assets = toml
        .split("\nassets = [\n")
        .nth(1)
        .and_then(|s| s.split("\n]\n").next())
        .expect("[package.metadata.deb] assets");
    let mut deb = BTreeSet::new();
    for line in assets.lines() {
        let fields: Vec<&str> = line
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(',')
            .trim_end_matches(']')
            .split(',')
            .map(|f| f.trim().trim_matches('"'))
            .collect();
        let [src, dest, _mode] = fields[..] else {
            panic!("asset line {line:?}");
        };
        let file = Path::new(src).file_name().expect("name").to_string_lossy();
        deb.insert(match dest.strip_suffix('/') {
            Some(d) => format!("{d}/{file}"),
            None => dest.to_string(),
        });
    }
    let dir = common::temp_dir("packaging", "deb");
    let dest = dir.join("dest");
    let (code, out) = make_install(&[format!("DESTDIR={}", dest.display()), "PREFIX=/usr".into()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(files_under(&dest), deb);
    assert_eq!(deb, listed("usr", "etc"));
    assert_eq!(
        std::fs::read_to_string(dest.join("usr/lib/systemd/system/scx_tt.service")).expect("unit"),
        read_repo("packaging/scx_tt.service")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `systemd-analyze verify` on the installed unit (its ExecStart binary exists there), when
/// the host has systemd-analyze.
#[test]
fn systemd_analyze_verifies_the_installed_unit() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no systemd-analyze on this host");
        return;
    }
    let dir = common::temp_dir("packaging", "verify");
    let prefix = dir.join("usr");
    let (code, out) = make_install(&[
        format!("PREFIX={}", prefix.display()),
        format!("SYSCONFDIR={}", dir.join("etc").display()),
    ]);
    assert_eq!(code, 0, "{out}");
    let unit = prefix.join("lib/systemd/system/scx_tt.service");
    let (code, out, err) = run(Command::new("systemd-analyze").arg("verify").arg(&unit));
    assert!(
        code == 0 && err.trim().is_empty(),
        "verify {}: {code}: {out}{err}",
        unit.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn version_names_the_git_revision_of_the_checkout() {
    let (code, out, err) = run(common::scx_tt().arg("--version"));
    assert_eq!(code, 0, "{err}");
    let git = Command::new("git")
        .args(["-C", ROOT, "rev-parse", "--short", "HEAD"])
        .output();
    let rev = match git {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => "unknown".to_string(),
    };
    let want = format!("scx_tt {} (git {rev}", env!("CARGO_PKG_VERSION"));
    assert!(out.starts_with(&want), "{out:?} should start with {want:?}");
}
