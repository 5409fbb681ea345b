//! Booting a guest scenario (`Vm`) and reading what it sent back (`VmOutput`).

use super::*;

/// One guest scenario to boot.
#[derive(Clone)]
pub struct Vm {
    scenario: String,
    smp: u32,
    timeout_s: u32,
    tries: u32,
    args: Vec<String>,
    label: String,
}

/// What a completed guest run left behind.
pub struct VmOutput {
    pub dir: PathBuf,
    /// The scenario's exit code.
    pub rc: i32,
    pub console: String,
    /// `KEY=VALUE` results of the scenario (guest `result KEY VALUE`).
    pub results: BTreeMap<String, String>,
}

/// Boots per VM test. Every attach and detach of sched_ext patches static keys in the guest's
/// hottest scheduler paths, and QEMU 7.2's MTTCG sometimes lets another vCPU execute a stale
/// `int3` from that patching ("Oops: int3" in sched_tick, update_rq_clock, __schedule). On a
/// quiet host, where the vCPU threads really run in parallel, that hit about half of the boots of
/// scenarios that attach three times (fresh-clone CI, 2026-11-22); on a busy host 1 in 20-40.
/// A crashed boot costs 10-30 s. Eight tries were exhausted once (the `completion` scenario,
/// which attaches twice, crashed 8 boots in a row in a fresh-clone CI run on a quiet host,
/// 2026-11-27), so twelve (docs/vm-harness.md).
pub const VM_TRIES: u32 = 12;

impl Vm {
    pub fn new(scenario: &str) -> Self {
        Vm {
            scenario: scenario.to_string(),
            smp: 2,
            timeout_s: 120,
            tries: VM_TRIES,
            args: Vec::new(),
            label: scenario.to_string(),
        }
    }

    pub fn smp(mut self, smp: u32) -> Self {
        self.smp = smp;
        self
    }

    pub fn timeout_s(mut self, timeout_s: u32) -> Self {
        self.timeout_s = timeout_s;
        self
    }

    /// Names the run directory (target/vm/runs/LABEL; default: the scenario).
    pub fn label(mut self, label: &str) -> Self {
        self.label = label.to_string();
        self
    }

    /// Boots at most this many times when the guest crashes or hangs.
    pub fn tries(mut self, tries: u32) -> Self {
        self.tries = tries;
        self
    }

    /// Adds `tt.KEY=VALUE` to the guest kernel command line.
    pub fn arg(mut self, key: &str, value: impl ToString) -> Self {
        self.args.push(format!("tt.{key}={}", value.to_string()));
        self
    }

    /// Boots the guest (run.sh retries crashed or hung guests) and collects its output. Fails
    /// when the harness or every try failed; a scenario exit code is returned in `rc`.
    pub fn run(self) -> Result<VmOutput> {
        self.run_status().1
    }

    /// Like `run`, also returning run.sh's exit code (3: every try crashed or hung).
    pub fn run_status(self) -> (Option<i32>, Result<VmOutput>) {
        ledger::note(|_| {});
        let dir = repo().join("target/vm/runs").join(&self.label);
        if std::env::var_os("SCX_TT_VM_RECHECK").is_some_and(|v| v == "1") {
            // the checks again over the run directories a boot left (docs/vm-harness.md)
            eprintln!(
                "vm: SCX_TT_VM_RECHECK=1: checking {} without booting",
                dir.display()
            );
            let out = collect(&self.scenario, dir);
            if let Ok(o) = &out {
                note_calibration(&o.console);
            }
            return (Some(0), out);
        }
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("tests/vm/run.sh"))
            .args(["--scenario", &self.scenario])
            .args(["--smp", &self.smp.to_string()])
            .args(["--timeout-s", &self.timeout_s.to_string()])
            .args(["--tries", &self.tries.to_string()])
            .arg("--out")
            .arg(&dir);
        for a in &self.args {
            cmd.args(["--arg", a]);
        }
        eprintln!(
            "vm: booting scenario {} (smp {}, kernel {}) {:?}",
            self.scenario,
            self.smp,
            std::env::var("SCX_TT_VM_KERNEL").unwrap_or_else(|_| "default".into()),
            self.args
        );
        let started = std::time::SystemTime::now();
        match cmd.stdin(Stdio::null()).status() {
            Err(e) => (None, Err(format!("running tests/vm/run.sh: {e}"))),
            Ok(status) => {
                let tries = ledger::tally_run_dir(&dir, started);
                ledger::note(|l| l.add(tries));
                let out = collect(&self.scenario, dir);
                if let Ok(o) = &out {
                    note_calibration(&o.console);
                }
                (status.code(), out)
            }
        }
    }
}

impl Vm {
    /// The skeleton of a VM test, written once: boots the guest (a harness failure or a guest
    /// that crashed or hung on every try panics), gives its output to `check`, and reports every
    /// failed check at once. When only timing checks failed (host noise under TCG), it boots and
    /// checks again, up to TIMING_TRIES measurements in run directories LABEL, LABEL-try2, ...;
    /// the last measurement decides and every one is printed. Exact checks are never measured
    /// again.
    pub fn check(self, check: impl Fn(&VmOutput, &mut Checks)) {
        let label = self.label.clone();
        measure_until_settled(&label, |label| {
            let out = self
                .clone()
                .label(label)
                .run()
                .unwrap_or_else(|e| panic!("{e}"));
            out.print_extended();
            let mut c = Checks::default();
            check(&out, &mut c);
            c
        });
    }
}

impl Vm {
    /// The skeleton of a control-socket test (`check`, boots again on timing-only failures) whose
    /// guest ran scx_tt as RUN (lib.sh `start_scx_tt RUN` with `--summary-json $OUT/RUN.json
    /// --trace $OUT/RUN.trace.jsonl`): prints RUN.out, checks the replies with `protocol`, which
    /// returns what the trace checks need (`None`: they failed, and `missing` names what is then
    /// missing); then gives the summary, printed under `title`, and the trace to `then`, and
    /// checks the run by its witness (`start_control_run` records it; tests/vm/witness/). An
    /// unreadable file is a failed check.
    pub fn check_control<K>(
        self,
        run: &str,
        (title, missing): (&str, &str),
        protocol: impl Fn(&mut Checks, &VmOutput) -> Option<K>,
        then: impl Fn(&mut Checks, &VmOutput, &Summary, &[SlotRecord], K),
    ) {
        self.check(|out, c| {
            out.print_file(&format!("{run}.out"));
            let key = protocol(c, out);
            match (out.summary(&format!("{run}.json")), key) {
                (Ok(s), Some(key)) => {
                    s.print(title);
                    let trace: Vec<SlotRecord> = out
                        .records(&format!("{run}.trace.jsonl"))
                        .unwrap_or_else(|err| {
                            c.check(false, format!("trace: {err}"));
                            Vec::new()
                        });
                    then(c, out, &s, &trace, key);
                    crate::witness::check(c, out, run, &crate::witness::Bounds::default());
                }
                (Err(err), _) => c.check(false, format!("summary: {err}")),
                (_, None) => c.check(false, format!("{missing}: the trace cannot be checked")),
            }
        });
    }
}

/// Reads an existing run directory (target/vm/runs/LABEL), e.g. to check a witness again.
pub fn open_run(dir: &Path) -> Result<VmOutput> {
    collect("(by hand)", dir.to_path_buf())
}

/// Reads a run directory; run.sh writes scenario.rc only when the guest completed.
pub(super) fn collect(scenario: &str, dir: PathBuf) -> Result<VmOutput> {
    let Ok(rc_text) = read(&dir.join("scenario.rc")) else {
        return Err(format!(
            "{scenario}: no completed guest run (every try crashed or hung, or the harness failed), see {}",
            dir.display()
        ));
    };
    let rc = rc_text
        .trim()
        .parse()
        .map_err(|_| format!("bad scenario.rc {rc_text:?}"))?;
    let console = read(&dir.join("console.log"))?;
    let results = parse_results(&read(&dir.join("results.env")).unwrap_or_default());
    Ok(VmOutput {
        dir,
        rc,
        console,
        results,
    })
}

impl VmOutput {
    /// Prints how far the guest's runs went past their nominal length because the scenario's
    /// steps took longer (results `NAME_extended_ms`, tests/vm/guest/lib.sh `stop_scx_tt`): 0 on
    /// a host fast enough for the nominal length.
    pub fn print_extended(&self) {
        for (k, v) in self
            .results
            .iter()
            .filter(|(k, _)| k.ends_with("_extended_ms"))
        {
            let run = k.trim_end_matches("_extended_ms");
            let why = if v == "0" {
                ""
            } else {
                " (its scenario's last step came late)"
            };
            println!("  run {run}: ended {v} ms past its nominal end{why}");
        }
    }

    /// A file the guest left in /out.
    pub fn file(&self, name: &str) -> Result<String> {
        read(&self.dir.join("files").join(name))
    }

    /// The JSON reply a control client in the guest saved as NAME.reply; `Null` when it is
    /// absent or not JSON (the checks then name what was expected).
    pub fn reply(&self, name: &str) -> serde_json::Value {
        let text = self.file(&format!("{name}.reply")).unwrap_or_default();
        serde_json::from_str(text.trim()).unwrap_or(serde_json::Value::Null)
    }

    /// Prints a file the guest left (scx_tt's output) for the test log; nothing when absent.
    pub fn print_file(&self, name: &str) {
        print!("{}", self.file(name).unwrap_or_default());
    }

    /// Checks scx_tt run RUN of the scenario: exit code 0 (result RUN_rc) and sched_ext
    /// `disabled` after it (RUN_state), as `run_scx_tt`/`finish_scx_tt` in lib.sh report them.
    pub fn check_clean_exit(&self, c: &mut Checks, run: &str) {
        let rc = self.result(&format!("{run}_rc"));
        c.check(rc == Ok("0"), format!("{run}: scx_tt exit code {rc:?}"));
        let state = self.result(&format!("{run}_state"));
        c.check(
            state == Ok("disabled"),
            format!("{run}: sched_ext state after exit {state:?}"),
        );
    }

    /// Checks that result `key` is `want`: "WHAT: VALUE" in the log.
    pub fn check_result(&self, c: &mut Checks, key: &str, want: &str, what: &str) {
        let got = self.result(key);
        c.check(got == Ok(want), format!("{what}: {got:?} (want {want})"));
    }

    /// Checks that result `key` is a number of milliseconds, at most `max` if given: "WHAT after
    /// VALUE ms" in the log.
    pub fn check_ms(&self, c: &mut Checks, key: &str, max: Option<i64>, what: &str) {
        let ok = matches!((self.number(key), max), (Ok(ms), Some(m)) if ms <= m)
            || (max.is_none() && self.number(key).is_ok());
        let bound = max.map_or(String::new(), |m| format!(" (<= {m})"));
        c.check(ok, format!("{what} after {:?} ms{bound}", self.result(key)));
    }

    /// A wall-clock bound under TCG, where the same work takes 2-6 times as long on a slower
    /// host: exact that the guest measured `key` (its wait ended before the guest's own
    /// limit), timing that it is at most `max` ms.
    pub fn check_ms_timing(&self, c: &mut Checks, key: &str, max: i64, what: &str) {
        let got = self.number(key);
        c.check(
            got.is_ok(),
            format!("{what}: measured ({:?} ms)", self.result(key)),
        );
        c.check_timing(
            got.is_ok_and(|ms| ms <= max),
            format!("{what} after {:?} ms (<= {max})", self.result(key)),
        );
    }

    /// Checks that the guest reported each result `key` as `want` (exit codes, states).
    pub fn check_results(&self, c: &mut Checks, want: &[(&str, &str)]) {
        for &(key, want) in want {
            let got = self.result(key).unwrap_or("?");
            c.check(got == want, format!("{key} = {got} (want {want})"));
        }
    }

    /// The exit code the guest reported as result NAME_rc, or "?".
    pub fn rc(&self, name: &str) -> String {
        self.result(&format!("{name}_rc"))
            .unwrap_or("?")
            .to_string()
    }

    /// A JSON-lines file the guest left in /out (a `--trace`), one `T` per non-empty line; a
    /// line that does not parse is an error naming the file and the line.
    pub fn records<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<Vec<T>> {
        parse_records(name, &self.file(name)?)
    }

    /// The header line of a `--trace` file the guest left.
    pub fn trace_header(&self, name: &str) -> Result<TraceHeader> {
        let text = self.file(name)?;
        parse_trace_header(text.lines().next().unwrap_or(""))
            .ok_or_else(|| format!("{name}: the first line is not a scx_tt trace header"))
    }

    pub fn result(&self, key: &str) -> Result<&str> {
        self.results.get(key).map(String::as_str).ok_or_else(|| {
            format!(
                "the guest reported no result {key} (see {})",
                self.dir.display()
            )
        })
    }

    /// A numeric result.
    pub fn number(&self, key: &str) -> Result<i64> {
        let v = self.result(key)?;
        v.parse()
            .map_err(|_| format!("result {key}={v} is not a number"))
    }

    pub fn summary(&self, name: &str) -> Result<Summary> {
        let text = self.file(name)?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{name}: not a scx_tt summary: {e}\n{}", head(&text)))
    }

    /// A JSON file the guest left in /out.
    pub fn json<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<T> {
        let text = self.file(name)?;
        serde_json::from_str(&text).map_err(|e| format!("{name}: {e}\n{}", head(&text)))
    }
}

/// The start of a long text, for error messages.
pub(super) fn head(text: &str) -> &str {
    let end = text.char_indices().nth(600).map_or(text.len(), |(i, _)| i);
    &text[..end]
}

/// The task a trace record shows owning its slot: `tt` records name it; be and idle slots have
/// none.
pub fn tt_owner(r: &SlotRecord) -> Option<&str> {
    (r.kind == scx_tt::trace::SlotKind::Tt)
        .then_some(r.task.as_deref())
        .flatten()
}

/// JSON lines `text` (from file `name`) as one `T` per non-empty line; a line that does not
/// parse is an error naming the file and the line.
pub fn parse_records<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> Result<Vec<T>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .filter(|(i, l)| !(*i == 0 && parse_trace_header(l).is_some()))
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("{name} line {}: {e}", i + 1)))
        .collect()
}

/// The first line of scx_tt's `--trace` (docs/trace-format.md), read by the harness's own
/// type (as the summary is, see [`Summary`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceHeader {
    pub format: String,
    pub source: String,
    pub slot_ns: u64,
    #[serde(default)]
    pub t0_ns: Option<u64>,
    pub cpus: Vec<u32>,
}

pub(super) fn parse_trace_header(line: &str) -> Option<TraceHeader> {
    serde_json::from_str::<TraceHeader>(line)
        .ok()
        .filter(|h| h.format == "scx_tt slot trace v1")
}

pub(super) fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// `KEY=VALUE` lines; a later line wins.
pub fn parse_results(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}
