//! `scx_tt report` pages in a real browser: Debian's chromium, headless (docs/report.md,
//! "Testing"). For each page: it loads with no console message and no script error, its Gantt
//! has one bar per non-idle slot record of the trace (counted here from the trace file, not by
//! the report code), and a screenshot is produced (a non-empty PNG). Negative checks show the
//! checks can fail: a page with a deliberate script error, one with a console error and one
//! missing a bar are refused.
//!
//! Chromium is found as `$SCX_TT_CHROMIUM`, else `chromium`, `chromium-browser`,
//! `google-chrome` on PATH; without one the tests print a loud SKIPPED message and pass.
//! The artefacts stay under `$TMPDIR/scx_tt-report-browser-PID-NAME/` (page.html, dom.html,
//! chromium.log, screenshot.png).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One chromium at a time (the machine running the tests may be small).
static BROWSER: Mutex<()> = Mutex::new(());

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/report");

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SCX_TT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The browser, or a loud message and `None`.
fn browser_or_skip(test: &str) -> Option<PathBuf> {
    let c = chromium();
    // `make test` installs chromium and sets this: there a missing browser is a failure
    if c.is_none() && std::env::var_os("SCX_TT_REQUIRE_CHROMIUM").is_some_and(|v| v != "0") {
        panic!("{test}: no chromium, and SCX_TT_REQUIRE_CHROMIUM is set (make test installs it)");
    }
    if c.is_none() {
        // Straight to the process's stderr: the test harness captures eprintln! of a passing
        // test, and this must be seen.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             !!! SKIPPED {test}: no chromium (apt-get install chromium, or set \
             SCX_TT_CHROMIUM)\n\
             !!! the run report was NOT checked in a browser\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
        );
    }
    c
}

/// Headless chromium on `page` with `extra` arguments, as root-safe as it gets (no sandbox, a
/// fresh profile), bounded by `timeout`. Returns (stdout, stderr).
fn run_chromium(
    chrome: &Path,
    dir: &Path,
    tag: &str,
    page: &Path,
    extra: &[&str],
) -> (String, String) {
    let profile = dir.join(format!("profile-{tag}"));
    let out = Command::new("timeout")
        .arg("120")
        .arg(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium (timeout from coreutils)");
    let _ = std::fs::remove_dir_all(&profile);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let _ = std::fs::write(dir.join(format!("chromium-{tag}.log")), &stderr);
    assert!(
        out.status.success(),
        "chromium {extra:?} on {} failed ({}):\n{stderr}",
        page.display(),
        out.status
    );
    (stdout, stderr)
}

/// What the browser made of a page: the DOM after its scripts ran, and its console lines.
struct Loaded {
    dom: String,
    console: Vec<String>,
}

fn load(chrome: &Path, dir: &Path, tag: &str, page: &Path) -> Loaded {
    let (dom, stderr) = run_chromium(chrome, dir, tag, page, &["--dump-dom"]);
    let _ = std::fs::write(dir.join(format!("dom-{tag}.html")), &dom);
    // chromium logs every console message (console.*, uncaught exceptions) as
    // `[...:INFO:CONSOLE:LINE] "message", source: URL (LINE)`.
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Loaded { dom, console }
}

/// The Gantt bars in a DOM: `<rect class="bar ...`.
fn dom_bars(dom: &str) -> usize {
    dom.matches("<rect class=\"bar ").count()
}

/// A page is good when its scripts ran to the end (`data-report-ready`, written last by the
/// report's script), none threw (the error catcher's `data-js-errors`), and nothing reached
/// the console (the report logs nothing). Returns the number of Gantt bars.
fn check(l: &Loaded) -> Result<usize, String> {
    if !l.console.is_empty() {
        return Err(format!("console messages:\n{}", l.console.join("\n")));
    }
    if let Some(i) = l.dom.find("data-js-errors=") {
        return Err(format!(
            "script errors: {}",
            &l.dom[i..(i + 24).min(l.dom.len())]
        ));
    }
    let bars = dom_bars(&l.dom);
    let ready = format!("data-report-ready=\"{bars}\"");
    if !l.dom.contains(&ready) {
        return Err(format!(
            "the report's script did not finish, or counted other bars than the DOM has \
             ({bars}): no {ready}"
        ));
    }
    Ok(bars)
}

/// Non-idle slot records of a trace file, counted from its JSON lines (not with scx_tt's
/// reader): every object with a `slot` whose `kind` is not `idle`.
fn non_idle_records(trace: &Path) -> usize {
    let text = std::fs::read_to_string(trace).expect("trace");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON line"))
        .filter(|v| v.get("slot").is_some())
        .filter(|v| v["kind"].as_str().expect("kind") != "idle")
        .count()
}

fn report(dir: &Path, trace: &Path, extra: &[&str]) -> PathBuf {
    let page = dir.join("page.html");
    let out = common::scx_tt()
        .arg("report")
        .arg(trace)
        .args(extra)
        .arg("-o")
        .arg(&page)
        .output()
        .expect("run scx_tt report");
    assert!(
        out.status.success(),
        "scx_tt report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    page
}

fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.len() > 10_000,
        "{}: {} bytes, too small for a report's screenshot",
        path.display(),
        bytes.len()
    );
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{}: not a PNG",
        path.display()
    );
}

/// The whole check of one report: loads clean, one bar per non-idle record, a screenshot.
fn check_report(chrome: &Path, dir: &Path, trace: &Path, page: &Path) -> Loaded {
    let expected = non_idle_records(trace);
    assert!(expected > 0, "{}: no non-idle record", trace.display());
    let loaded = load(chrome, dir, "page", page);
    let bars = check(&loaded).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    assert_eq!(
        bars,
        expected,
        "{}: Gantt bars in the browser's DOM against non-idle records of {}",
        page.display(),
        trace.display()
    );
    let shot = dir.join("screenshot.png");
    run_chromium(
        chrome,
        dir,
        "shot",
        page,
        &[
            "--window-size=1400,2400",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    assert_png(&shot);
    loaded
}

#[test]
fn kernel_trace_with_summary_and_plan() {
    let Some(chrome) = browser_or_skip("kernel_trace_with_summary_and_plan") else {
        return;
    };
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = common::temp_dir("report-browser", "kernel");
    let trace = Path::new(FIXTURES).join("demo.trace.jsonl");
    let summary = Path::new(FIXTURES).join("demo.summary.json");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demo.json");
    let page = report(
        &dir,
        &trace,
        &[
            "--summary",
            summary.to_str().unwrap(),
            "--plan",
            plan.to_str().unwrap(),
        ],
    );
    let loaded = check_report(&chrome, &dir, &trace, &page);
    // both CPUs, the plan's capacity intervals under them, the zoom's label written by the
    // script
    assert_eq!(loaded.dom.matches("<svg class=\"gantt zoomable").count(), 2);
    assert!(
        loaded.dom.contains("<rect class=\"cap "),
        "no capacity interval"
    );
    assert!(
        loaded
            .dom
            .contains("<span id=\"zoom-label\">slots 0 to 150"),
        "zoom label not written by the script"
    );

    // The zoom works in the browser: zoomed in as far as it goes, one slot is shown; a range
    // typed in is shown as typed.
    let html = std::fs::read_to_string(&page).unwrap();
    let zoomed = dir.join("zoom.html");
    std::fs::write(
        &zoomed,
        html.replace(
            "</body>",
            "<script>(function(){var g=document.querySelector('svg.gantt');\
for(var i=0;i<12;i++)document.getElementById('zoom-in').click();\
var one=g.getAttribute('viewBox');\
document.getElementById('zoom-from').value='10';document.getElementById('zoom-to').value='20';\
document.getElementById('zoom-go').click();\
document.body.setAttribute('data-zoom-test',one+'|'+g.getAttribute('viewBox')+'|'+\
document.querySelector('svg.freq').getAttribute('viewBox'));})();</script></body>",
        ),
    )
    .unwrap();
    let l = load(&chrome, &dir, "zoom", &zoomed);
    check(&l).unwrap_or_else(|e| panic!("zoom page: {e}"));
    assert!(
        l.dom
            .contains("data-zoom-test=\"74.5 0 1 70|10 0 10 70|10 0 10 100\""),
        "zoom: {}",
        l.dom
            .find("data-zoom-test")
            .map(|i| &l.dom[i..(i + 60).min(l.dom.len())])
            .unwrap_or("no data-zoom-test")
    );

    // The checks can fail. A deliberate script error:
    let bad = dir.join("throws.html");
    std::fs::write(
        &bad,
        html.replace(
            "</body>",
            "<script>throw new Error(\"deliberate report test error\")</script></body>",
        ),
    )
    .unwrap();
    let e = check(&load(&chrome, &dir, "throws", &bad)).unwrap_err();
    assert!(e.contains("deliberate report test error"), "{e}");
    // an error inside the report's own script (it stops before marking the page ready):
    let bad = dir.join("script-error.html");
    std::fs::write(
        &bad,
        html.replacen("\"use strict\";", "\"use strict\"; undefinedFunction();", 1),
    )
    .unwrap();
    let l = load(&chrome, &dir, "script-error", &bad);
    assert!(
        !l.dom.contains("data-report-ready=\""),
        "the script went on"
    );
    assert!(check(&l).is_err());
    // a console error:
    let bad = dir.join("console.html");
    std::fs::write(
        &bad,
        html.replace(
            "</body>",
            "<script>console.error(\"deliberate console error\")</script></body>",
        ),
    )
    .unwrap();
    let e = check(&load(&chrome, &dir, "console", &bad)).unwrap_err();
    assert!(e.contains("deliberate console error"), "{e}");
    // a missing bar: the page still loads, the count no longer matches the trace
    let first = html.find("<rect class=\"bar ").unwrap();
    let end = first + html[first..].find("</rect>").unwrap() + "</rect>".len();
    let bad = dir.join("missing-bar.html");
    std::fs::write(&bad, format!("{}{}", &html[..first], &html[end..])).unwrap();
    let bars = check(&load(&chrome, &dir, "missing-bar", &bad)).expect("loads");
    assert_eq!(bars + 1, non_idle_records(&trace));
}

#[test]
fn kernel_trace_one_cpu_dvfs() {
    let Some(chrome) = browser_or_skip("kernel_trace_one_cpu_dvfs") else {
        return;
    };
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = common::temp_dir("report-browser", "dvfs");
    let trace = Path::new(FIXTURES).join("dvfs.trace.jsonl");
    let summary = Path::new(FIXTURES).join("dvfs.summary.json");
    let page = report(&dir, &trace, &["--summary", summary.to_str().unwrap()]);
    let loaded = check_report(&chrome, &dir, &trace, &page);
    assert!(loaded.dom.contains("<polyline class=\"freq-line\""));
}

#[test]
fn simulate_trace_with_hostile_names() {
    let Some(chrome) = browser_or_skip("simulate_trace_with_hostile_names") else {
        return;
    };
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = common::temp_dir("report-browser", "simulate");
    // the demo plan with a task whose name would break the page if it were not escaped
    let plan_text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demo.json"))
            .unwrap();
    let evil = r#"spin-a</title><script>console.error('x')</script>&\"q'"#;
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        plan_text.replace("\"spin-a\"", &format!("\"{evil}\"")),
    )
    .unwrap();
    let trace = dir.join("sim.trace.jsonl");
    let out = common::scx_tt()
        .args(["simulate", "--table"])
        .arg(&plan)
        .args(["--policy", "dpm", "--frames", "6", "--trace"])
        .arg(&trace)
        .output()
        .expect("scx_tt simulate");
    assert!(
        out.status.success(),
        "simulate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = report(&dir, &trace, &["--plan", plan.to_str().unwrap()]);
    let loaded = check_report(&chrome, &dir, &trace, &page);
    // the name reached the DOM as text: an attribute value, not markup
    assert!(loaded
        .dom
        .contains("data-task=\"spin-a&lt;/title&gt;&lt;script&gt;"));
}
