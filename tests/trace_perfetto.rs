//! `scx_tt trace export --perfetto` checked by a reader that is not ours: Debian's `protoc`
//! decodes the written file as `perfetto.protos.Trace` with Perfetto's published schema
//! (`perfetto_trace.proto` as shipped compiled in PyPI's `perfetto` package, turned into a
//! descriptor set by tests/perfetto/descriptor_set.py). The decoded text is then compared with
//! what the slot trace's records say, counted here independently of the exporter: one slice per
//! run of consecutive slots with the same owner and kind on each CPU track, a nested `stolen`
//! slice per slot with stolen time, the frequency and lateness counters sample by sample, the
//! instants of the summary, the planner log and the simulate report. Fields the schema does not
//! know (a wrong field number) show up as numbers in protoc's output and fail the test.
//!
//! Needs `protoc` (Debian: protobuf-compiler) and `python3 -m pip install --no-deps perfetto`
//! (for the `python3` on PATH; or `--target DIR` and PYTHONPATH=DIR); without them the schema
//! tests print why and pass, unless SCX_TT_REQUIRE_PERFETTO=1 (then they fail).
//! The CLI's refusals are checked without them.
//!
//! Fixtures (tests/perfetto/README.md): kernel traces of VM runs, trimmed.

mod common;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/perfetto")
        .join(name)
}

// ---- the external reader ----

const INSTALL: &str = "bash scripts/install-deps.sh (protobuf-compiler; perfetto==0.59.1 \
                       from PyPI into target/pydeps)";

/// The descriptor set of Perfetto's trace schema, or why the reader is missing.
fn schema(dir: &Path) -> Result<PathBuf, String> {
    match Command::new("protoc").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        _ => return Err("`protoc` not found (Debian package protobuf-compiler)".into()),
    }
    let set = dir.join("perfetto_trace.pb");
    // scripts/install-deps.sh installs the package into target/pydeps
    let pydeps = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pydeps");
    let pythonpath = match std::env::var_os("PYTHONPATH") {
        Some(p) => std::env::join_paths(std::iter::once(pydeps).chain(std::env::split_paths(&p)))
            .map_err(|e| format!("PYTHONPATH: {e}"))?,
        None => pydeps.into_os_string(),
    };
    let out = Command::new("python3")
        .env("PYTHONPATH", pythonpath)
        .arg(fixture("descriptor_set.py"))
        .arg(&set)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "Perfetto's schema not found: {} (PyPI package perfetto)",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(set)
}

/// The schema, or `None` after saying loudly why the test is skipped (a failure with
/// SCX_TT_REQUIRE_PERFETTO=1).
fn schema_or_skip(dir: &Path, test: &str) -> Option<PathBuf> {
    match schema(dir) {
        Ok(s) => Some(s),
        Err(why) => {
            let msg = format!(
                "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
                 !!! {test}: SKIPPED: {why}.\n\
                 !!! The Perfetto output is not checked. Install the reader with:\n\
                 !!!   {INSTALL}\n\
                 !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
            );
            if std::env::var_os("SCX_TT_REQUIRE_PERFETTO").is_some_and(|v| v != "0") {
                panic!("{msg}");
            }
            // straight to stderr, past the test harness's capture: seen in every run
            let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
            None
        }
    }
}

/// protoc's text decoding of a file as `perfetto.protos.Trace`.
fn decode(set: &Path, file: &Path) -> String {
    let out = Command::new("protoc")
        .arg(format!("--descriptor_set_in={}", set.display()))
        .arg("--decode=perfetto.protos.Trace")
        .arg("protos/perfetto/trace/perfetto_trace.proto")
        .stdin(std::fs::File::open(file).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "protoc could not decode {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A message of protoc's text format: its fields in order.
#[derive(Debug, Default)]
struct Msg {
    fields: Vec<(String, Val)>,
}

#[derive(Debug)]
enum Val {
    S(String),
    M(Msg),
}

fn unquote(v: &str) -> String {
    let v = v
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v);
    v.replace("\\'", "'")
        .replace("\\\"", "\"")
        .replace("\\\\", "\\")
}

fn parse_text(text: &str) -> Msg {
    let mut stack = vec![(String::new(), Msg::default())];
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(name) = line.strip_suffix(" {") {
            stack.push((name.to_string(), Msg::default()));
        } else if line == "}" {
            let (name, m) = stack.pop().unwrap();
            stack.last_mut().unwrap().1.fields.push((name, Val::M(m)));
        } else {
            let (k, v) = line
                .split_once(": ")
                .unwrap_or_else(|| panic!("line {line:?}"));
            stack
                .last_mut()
                .unwrap()
                .1
                .fields
                .push((k.to_string(), Val::S(unquote(v))));
        }
    }
    assert_eq!(stack.len(), 1, "unbalanced text");
    stack.pop().unwrap().1
}

impl Msg {
    fn get(&self, k: &str) -> Option<&str> {
        self.fields.iter().find_map(|(n, v)| match v {
            Val::S(s) if n == k => Some(s.as_str()),
            _ => None,
        })
    }
    fn msg<'a>(&'a self, k: &'a str) -> Option<&'a Msg> {
        self.msgs(k).next()
    }
    fn msgs<'a>(&'a self, k: &'a str) -> impl Iterator<Item = &'a Msg> + 'a {
        self.fields.iter().filter_map(move |(n, v)| match v {
            Val::M(m) if n == k => Some(m),
            _ => None,
        })
    }
    /// Field names the schema did not know: protoc prints them as numbers.
    fn unknown(&self, path: &str, out: &mut Vec<String>) {
        for (n, v) in &self.fields {
            if n.chars().all(|c| c.is_ascii_digit()) {
                out.push(format!("{path}.{n}"));
            }
            if let Val::M(m) = v {
                m.unknown(&format!("{path}.{n}"), out);
            }
        }
    }
}

/// A decoded slice: (begin, end, name, category, nesting depth).
type Slice = (u64, u64, String, String, usize);

/// What the decoded trace shows, by track name.
#[derive(Debug, Default)]
struct Shown {
    /// Per slice track.
    slices: BTreeMap<String, Vec<Slice>>,
    /// Per counter track: (time, value as text).
    counters: BTreeMap<String, Vec<(u64, String)>>,
    /// Per track: (time, name, category).
    instants: BTreeMap<String, Vec<(u64, String, String)>>,
    counter_units: BTreeMap<String, String>,
}

fn shown(text: &str) -> Shown {
    let trace = parse_text(text);
    let mut unknown = Vec::new();
    trace.unknown("Trace", &mut unknown);
    assert!(
        unknown.is_empty(),
        "fields unknown to the schema: {unknown:?}"
    );
    let mut names = BTreeMap::new();
    let mut s = Shown::default();
    let mut open: BTreeMap<String, Vec<(u64, String, String)>> = BTreeMap::new();
    let mut last_ts = 0;
    for p in trace.msgs("packet") {
        assert_eq!(p.get("trusted_packet_sequence_id"), Some("1"));
        if let Some(d) = p.msg("track_descriptor") {
            let name = d.get("name").expect("a track name").to_string();
            if let Some(c) = d.msg("counter") {
                let unit = c.get("unit").or(c.get("unit_name")).unwrap_or("");
                s.counter_units.insert(name.clone(), unit.to_string());
            }
            names.insert(d.get("uuid").unwrap().to_string(), name);
            continue;
        }
        let e = p.msg("track_event").expect("a descriptor or an event");
        let ts: u64 = p.get("timestamp").unwrap().parse().unwrap();
        assert!(ts >= last_ts, "time goes back at {ts}");
        last_ts = ts;
        let track = names[e.get("track_uuid").unwrap()].clone();
        let name = e.get("name").unwrap_or("").to_string();
        let cat = e.get("categories").unwrap_or("").to_string();
        match e.get("type").unwrap() {
            "TYPE_SLICE_BEGIN" => open.entry(track).or_default().push((ts, name, cat)),
            "TYPE_SLICE_END" => {
                let stack = open.get_mut(&track).unwrap();
                let (b, n, c) = stack.pop().expect("an end without a begin");
                let depth = stack.len();
                s.slices
                    .entry(track)
                    .or_default()
                    .push((b, ts, n, c, depth));
            }
            "TYPE_COUNTER" => {
                let v = e
                    .get("counter_value")
                    .or(e.get("double_counter_value"))
                    .unwrap();
                s.counters
                    .entry(track)
                    .or_default()
                    .push((ts, v.to_string()));
            }
            "TYPE_INSTANT" => s.instants.entry(track).or_default().push((ts, name, cat)),
            t => panic!("event type {t}"),
        }
    }
    assert!(
        open.values().all(|v| v.is_empty()),
        "unclosed slices {open:?}"
    );
    for v in s.slices.values_mut() {
        v.sort();
    }
    s
}

// ---- what the slot trace says, counted here ----

#[derive(Debug, Default)]
struct Expected {
    t0: u64,
    slot_ns: u64,
    cpus: Vec<u64>,
    /// Per CPU: owner runs (first slot, end slot, name, kind).
    runs: BTreeMap<u64, Vec<(u64, u64, String, String)>>,
    stolen: BTreeMap<u64, Vec<(u64, u64)>>,
    freq: BTreeMap<u64, Vec<(u64, f64)>>,
    late: BTreeMap<u64, Vec<(u64, i64)>>,
}

fn expected(trace: &Path) -> Expected {
    let text = std::fs::read_to_string(trace).unwrap();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let h: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let mut x = Expected {
        t0: h["t0_ns"].as_u64().unwrap_or(0),
        slot_ns: h["slot_ns"].as_u64().unwrap(),
        cpus: h["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect(),
        ..Default::default()
    };
    for l in lines {
        let r: Value = serde_json::from_str(l).unwrap();
        let cpu = r["cpu"].as_u64().unwrap();
        let slot = r["slot"].as_u64().unwrap();
        let kind = r["kind"].as_str().unwrap().to_string();
        let name = r["task"].as_str().unwrap_or(&kind).to_string();
        let runs = x.runs.entry(cpu).or_default();
        match runs.last_mut() {
            Some(last) if last.1 == slot && last.2 == name && last.3 == kind => last.1 += 1,
            _ => runs.push((slot, slot + 1, name, kind)),
        }
        if let Some(ns) = r["stolen_ns"].as_u64().filter(|&n| n > 0) {
            x.stolen.entry(cpu).or_default().push((slot, ns));
        }
        let f = r["freq"].as_f64().unwrap();
        let freq = x.freq.entry(cpu).or_default();
        if freq.last().map(|l| l.1) != Some(f) {
            freq.push((slot, f));
        }
        if let Some(late) = r["late_ns"].as_i64() {
            x.late.entry(cpu).or_default().push((slot, late));
        }
    }
    x
}

fn export(dir: &Path, trace: &Path, extra: &[&str]) -> PathBuf {
    let out = dir.join("out.pftrace");
    let o = common::scx_tt()
        .args(["trace", "export", "--perfetto"])
        .arg(trace)
        .arg("-o")
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Compares the decoded trace with the records; returns the instants of `scx_tt events`.
fn check(x: &Expected, s: &Shown) -> Vec<(u64, String, String)> {
    let ts = |slot: u64| x.t0 + slot * x.slot_ns;
    for &cpu in &x.cpus {
        let track = format!("CPU {cpu}");
        let got = s.slices.get(&track).cloned().unwrap_or_default();
        let owners: Vec<_> = got
            .iter()
            .filter(|g| g.4 == 0)
            .map(|(b, e, n, c, _)| (*b, *e, n.clone(), c.clone()))
            .collect();
        let want: Vec<_> = x.runs[&cpu]
            .iter()
            .map(|(f, e, n, k)| (ts(*f), ts(*e), n.clone(), k.clone()))
            .collect();
        assert_eq!(owners.len(), want.len(), "{track}: slices vs owner runs");
        assert_eq!(owners, want, "{track}");
        let stolen: Vec<_> = got
            .iter()
            .filter(|g| g.4 == 1)
            .map(|(b, e, n, c, _)| (*b, *e, n.clone(), c.clone()))
            .collect();
        let want: Vec<_> = x
            .stolen
            .get(&cpu)
            .into_iter()
            .flatten()
            .map(|&(slot, ns)| {
                (
                    ts(slot),
                    ts(slot) + ns.min(x.slot_ns),
                    "stolen".to_string(),
                    "stolen".to_string(),
                )
            })
            .collect();
        assert_eq!(stolen, want, "{track}: stolen");
        assert!(
            got.iter().all(|g| g.4 <= 1),
            "{track}: nested deeper than stolen"
        );

        let freq: Vec<_> = s.counters[&format!("CPU {cpu} freq")]
            .iter()
            .map(|(t, v)| (*t, v.parse::<f64>().unwrap()))
            .collect();
        let want: Vec<_> = x.freq[&cpu].iter().map(|&(s, f)| (ts(s), f)).collect();
        assert_eq!(freq, want, "{track}: freq");

        let late_track = format!("CPU {cpu} late_ns");
        match x.late.get(&cpu) {
            Some(late) => {
                let got: Vec<_> = s.counters[&late_track]
                    .iter()
                    .map(|(t, v)| (*t, v.parse::<i64>().unwrap()))
                    .collect();
                let want: Vec<_> = late.iter().map(|&(s, l)| (ts(s), l)).collect();
                assert_eq!(got, want, "{late_track}");
                assert_eq!(s.counter_units[&late_track], "UNIT_TIME_NS");
            }
            None => assert!(!s.counters.contains_key(&late_track)),
        }
    }
    assert!(
        s.slices
            .keys()
            .all(|k| x.cpus.iter().any(|c| *k == format!("CPU {c}"))),
        "slice tracks {:?}",
        s.slices.keys()
    );
    s.instants.get("scx_tt events").cloned().unwrap_or_default()
}

#[test]
fn kernel_trace_with_table_switches_from_the_summary() {
    let dir = common::temp_dir("perfetto", "switch");
    let Some(set) = schema_or_skip(&dir, "kernel_trace_with_table_switches_from_the_summary")
    else {
        return;
    };
    let trace = fixture("switch.trace.jsonl");
    let summary = fixture("switch.summary.json");
    let out = export(&dir, &trace, &["--summary", summary.to_str().unwrap()]);
    let x = expected(&trace);
    let s = shown(&decode(&set, &out));
    assert!(x.stolen.values().map(Vec::len).sum::<usize>() > 0);
    assert!(x.runs[&1].len() > 10);
    let instants = check(&x, &s);
    // the summary's table switches, read here from the summary itself
    let sum: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let want: Vec<_> = sum["table_switches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|sw| {
            (
                x.t0 + sw["slot"].as_u64().unwrap() * x.slot_ns,
                format!("switch_table {}", sw["table"].as_str().unwrap()),
                "table".to_string(),
            )
        })
        .collect();
    assert_eq!(want.len(), 2);
    assert_eq!(instants, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kernel_trace_with_admissions_and_removal_from_the_planner_log() {
    let dir = common::temp_dir("perfetto", "admit");
    let Some(set) = schema_or_skip(
        &dir,
        "kernel_trace_with_admissions_and_removal_from_the_planner_log",
    ) else {
        return;
    };
    let trace = fixture("admit.trace.jsonl");
    let plog = fixture("admit.plog");
    let out = export(&dir, &trace, &["--planner-log", plog.to_str().unwrap()]);
    let x = expected(&trace);
    let s = shown(&decode(&set, &out));
    let instants = check(&x, &s);
    // admit.plog: admit_periodic tasks 3 and 2 after the advances of kernel slots 211 and 245,
    // remove task 2 after the one of slot 478
    let at = |slot: u64| x.t0 + slot * x.slot_ns;
    assert_eq!(
        instants,
        vec![
            (
                at(211),
                "admit_periodic task 3 (14 slots every 20)".into(),
                "admission".into()
            ),
            (
                at(245),
                "admit_periodic task 2 (3 slots every 10)".into(),
                "admission".into()
            ),
            (at(478), "remove task 2".into(), "removal".into()),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kernel_trace_of_two_cpus_under_dpm_and_dvfs() {
    let dir = common::temp_dir("perfetto", "dpmdvfs");
    let Some(set) = schema_or_skip(&dir, "kernel_trace_of_two_cpus_under_dpm_and_dvfs") else {
        return;
    };
    let trace = fixture("dpmdvfs.trace.jsonl");
    let out = export(&dir, &trace, &[]);
    let x = expected(&trace);
    let s = shown(&decode(&set, &out));
    assert_eq!(x.cpus, vec![1, 2]);
    assert!(x.freq.values().all(|f| f.len() > 1), "frequency changes");
    assert!(check(&x, &s).is_empty());
    assert!(s.instants.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn simulate_trace_with_the_simulate_report() {
    let dir = common::temp_dir("perfetto", "simulate");
    let Some(set) = schema_or_skip(&dir, "simulate_trace_with_the_simulate_report") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let trace = dir.join("sim.jsonl");
    let report = dir.join("sim.json");
    let o = common::scx_tt()
        .arg("simulate")
        .arg("--table")
        .arg(root.join("schedules/demo.json"))
        .arg("--arrivals")
        .arg(root.join("schedules/arrivals/demo.json"))
        .arg("--trace")
        .arg(&trace)
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&report, &o.stdout).unwrap();
    let out = export(&dir, &trace, &["--sim-report", report.to_str().unwrap()]);
    let x = expected(&trace);
    assert_eq!(x.t0, 0, "simulate traces start at 0");
    let s = shown(&decode(&set, &out));
    let instants = check(&x, &s);
    let rep: Value = serde_json::from_slice(&o.stdout).unwrap();
    let want: Vec<_> = rep["admissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let kind = a["kind"].as_str().unwrap();
            let name = a["name"].as_str().unwrap();
            let answer = if a["accepted"].as_bool().unwrap() {
                "accepted"
            } else {
                "rejected"
            };
            let (label, cat) = match kind {
                "remove" => (format!("remove {name}: {answer}"), "removal"),
                k => (format!("admit {k} {name}: {answer}"), "admission"),
            };
            (
                a["at_slot"].as_u64().unwrap() * x.slot_ns,
                label,
                cat.to_string(),
            )
        })
        .collect();
    assert!(want.len() >= 2, "{want:?}");
    let mut sorted = want.clone();
    sorted.sort_by_key(|w| w.0);
    assert_eq!(instants, sorted);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_unknown_field_check_catches_a_field_the_schema_does_not_have() {
    let dir = common::temp_dir("perfetto", "unknown");
    let Some(set) = schema_or_skip(
        &dir,
        "the_unknown_field_check_catches_a_field_the_schema_does_not_have",
    ) else {
        return;
    };
    // Trace { packet { <field 999>: 1 } }: a TracePacket field number nobody defined
    let f = dir.join("bad.pftrace");
    std::fs::write(&f, [0x0a, 0x03, 0xb8, 0x3e, 0x01]).unwrap();
    let text = decode(&set, &f);
    let r = std::panic::catch_unwind(|| shown(&text));
    assert!(r.is_err(), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- refusals (no external reader needed) ----

fn run_export(args: &[&std::ffi::OsStr]) -> std::process::Output {
    common::scx_tt()
        .args(["trace", "export", "--perfetto"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_bad_input_names_file_line_and_field_and_writes_nothing() {
    let dir = common::temp_dir("perfetto", "refuse");
    let trace = dir.join("bad.jsonl");
    let good = std::fs::read_to_string(fixture("admit.trace.jsonl")).unwrap();
    let mut lines: Vec<String> = good.lines().map(String::from).collect();
    lines[2] = lines[2].replace("\"freq\":1.0", "\"freq\":-1");
    assert!(lines[2].contains("\"freq\":-1"));
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let out = dir.join("out.pftrace");
    std::fs::write(&out, "before").unwrap();
    let o = run_export(&[trace.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}: line 3: freq: -1", trace.display())),
        "{err}"
    );
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "before");

    // a bad planner log is named, the trace being fine
    let plog = dir.join("bad.plog");
    let text = std::fs::read_to_string(fixture("admit.plog"))
        .unwrap()
        .replace("\"wcet\":14", "\"wcet\":\"x\"");
    std::fs::write(&plog, text).unwrap();
    std::fs::remove_file(&out).unwrap();
    let o = run_export(&[
        fixture("admit.trace.jsonl").as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--planner-log".as_ref(),
        plog.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}: line 3: task.wcet: ", plog.display())),
        "{err}"
    );
    assert!(!out.exists());

    // another run's summary: its t0_ns is refused
    let o = run_export(&[
        fixture("admit.trace.jsonl").as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--summary".as_ref(),
        fixture("switch.summary.json").as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("switch.summary.json: line "), "{err}");
    assert!(err.contains(": t0_ns: "), "{err}");
    assert!(!out.exists());

    // a missing file: exit 1, named
    let o = run_export(&[
        dir.join("none.jsonl").as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("none.jsonl"));
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
