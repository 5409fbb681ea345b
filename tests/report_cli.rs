//! `scx_tt report`'s command line: a page is written for good inputs; a bad input is refused
//! naming the file, the line and the field, with exit code 2 and nothing written.

mod common;

use std::path::Path;
use std::process::Output;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/report");

fn report(args: &[&Path], out: &Path) -> Output {
    let mut c = common::scx_tt();
    c.arg("report");
    for a in args {
        c.arg(a);
    }
    c.arg("-o").arg(out).output().expect("run scx_tt report")
}

/// Refused with exit code 2, a message containing every `needle`, and no page.
fn refused(dir: &Path, args: &[&Path], needles: &[&str]) {
    let out = dir.join("report.html");
    let o = report(args, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in {err:?}");
    }
    assert!(!out.exists(), "a page was written");
    assert!(
        std::fs::read_dir(dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("report.html")),
        "something was written"
    );
}

#[test]
fn writes_the_page() {
    let dir = common::temp_dir("report-cli", "ok");
    let out = dir.join("r.html");
    let trace = Path::new(FIXTURES).join("demo.trace.jsonl");
    let summary = Path::new(FIXTURES).join("demo.summary.json");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demo.json");
    let o = report(
        &[
            &trace,
            Path::new("--summary"),
            &summary,
            Path::new("--plan"),
            &plan,
        ],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("250 Gantt bars on 2 CPU(s), 300 slot records"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert_eq!(html.matches("<rect class=\"bar ").count(), 250);
    // self-contained: nothing fetched from anywhere
    for needle in ["http:", "https:", "src=", "<link", "@import"] {
        let hits: Vec<_> = html
            .match_indices(needle)
            .filter(|(i, _)| !html[*i..].starts_with("http://www.w3.org/2000/svg"))
            .collect();
        assert!(hits.is_empty(), "{needle} in the page");
    }
}

#[test]
fn bad_inputs_name_file_line_and_field() {
    let dir = common::temp_dir("report-cli", "bad");
    let header =
        r#"{"format":"scx_tt slot trace v1","source":"kernel","slot_ns":10000000,"cpus":[1]}"#;
    let good = r#"{"slot":0,"cpu":1,"kind":"tt","task":"a","freq":1.0}"#;
    let trace = dir.join("bad.trace.jsonl");
    std::fs::write(
        &trace,
        format!("{header}\n{good}\n{{\"slot\":1,\"cpu\":1,\"kind\":\"tt\",\"freq\":\"high\"}}\n"),
    )
    .unwrap();
    refused(
        &dir,
        &[&trace],
        &["bad.trace.jsonl: line 3, field freq: invalid type"],
    );
    std::fs::write(
        &trace,
        format!("{header}\n{{\"slot\":1,\"kind\":\"tt\",\"freq\":1}}\n"),
    )
    .unwrap();
    refused(
        &dir,
        &[&trace],
        &["bad.trace.jsonl: line 2, field cpu: missing field"],
    );
    std::fs::write(&trace, format!("{header}\n{good}\n")).unwrap();

    let summary = dir.join("s.json");
    std::fs::write(
        &summary,
        "{\"slot_us\": 10000, \"duration_ns\": 1,\n \"tasks\": [{\"name\": \"a\", \"class\": \"tt\",\n  \"planned_ns\": -1, \"delivered_ns\": 0}], \"cpus\": []}",
    )
    .unwrap();
    refused(
        &dir,
        &[&trace, Path::new("--summary"), &summary],
        &["s.json: line 3, field tasks[0].planned_ns"],
    );
    std::fs::write(
        &summary,
        "{\"slot_us\": 1000, \"duration_ns\": 1, \"tasks\": [], \"cpus\": []}",
    )
    .unwrap();
    refused(
        &dir,
        &[&trace, Path::new("--summary"), &summary],
        &["s.json: field slot_us: 1000 µs", "not the same run"],
    );

    let plan = dir.join("p.json");
    std::fs::write(
        &plan,
        r#"{"version":1,"slot_us":10000,"cpus":{"managed":[1],"housekeeping":[0]},
"tasks":[{"name":"a","pid":1,"class":"tt","cpu":1,"period":10,"wcet":"x"}]}"#,
    )
    .unwrap();
    refused(
        &dir,
        &[&trace, Path::new("--plan"), &plan],
        &["p.json: invalid plan: tasks[0].wcet: line 2"],
    );
    let missing = dir.join("missing.jsonl");
    refused(&dir, &[&missing], &["missing.jsonl: cannot read"]);
}
