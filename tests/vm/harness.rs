//! Rust side of the VM harness, shared by the VM tests (`tests/vm.rs`, one module per
//! `tests/vm/scenarios/NAME/check.rs`) and the lateness benchmark (`bench/lateness.rs`): boots a
//! guest scenario through `tests/vm/run.sh`, reads what the guest sent back, including scx_tt's
//! summary JSON (docs/run-output.md), and runs the skeleton every VM test shares
//! (`Vm::check`: boot, check, measure again when only timing bounds failed). Every test thread
//! that boots a guest leaves one row in target/vm/summary.tsv when it ends ([`ledger`]).
//!
//! The kernel and the initramfs must exist (`make vm-initrd`); the VM tests are `#[ignore]`d so
//! a plain `cargo test` stays fast, and `make test-vm` runs them.
#![allow(dead_code)]

use scx_tt::trace::SlotRecord;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub type Result<T> = std::result::Result<T, String>;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

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
    /// checks the run by its witness (`start_control_run` records it; tests/vm/witness.rs). An
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
fn collect(scenario: &str, dir: PathBuf) -> Result<VmOutput> {
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
fn head(text: &str) -> &str {
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

fn parse_trace_header(line: &str) -> Option<TraceHeader> {
    serde_json::from_str::<TraceHeader>(line)
        .ok()
        .filter(|h| h.format == "scx_tt slot trace v1")
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// `KEY=VALUE` lines; a later line wins.
pub fn parse_results(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// scx_tt's `--summary-json` (the agreed interface; unknown fields are ignored). Kept here on
/// purpose instead of the library's `accounting` types: the VM tests judge the documented JSON
/// format (docs/run-output.md), so a change on either side fails a test.
#[derive(Debug, Deserialize)]
pub struct Summary {
    /// CLOCK_MONOTONIC ns of the start of slot 0.
    pub t0_ns: u64,
    pub slot_us: u64,
    pub duration_ns: u64,
    pub exit: String,
    pub tasks: Vec<TaskSummary>,
    pub cpus: Vec<CpuSummary>,
    /// Tables switched to over the control socket (absent from older summaries).
    #[serde(default)]
    pub table_switches: Vec<TableSwitch>,
    /// Planner mode only (`--planner`).
    #[serde(default)]
    pub planner_late_slots: Option<u64>,
    /// Planner mode: entries decided in time and written after their slot had started.
    #[serde(default)]
    pub planner_late_writes: Option<LateWrites>,
    /// The guard band and where it came from (absent from older summaries).
    #[serde(default)]
    pub guard: Option<Guard>,
}

/// The summary's `planner_late_writes` object (docs/run-output.md).
#[derive(Debug, Default, Deserialize)]
pub struct LateWrites {
    pub slots: u64,
    /// `[managed CPU index, slot]`, the first 64.
    pub first: Vec<[u64; 2]>,
}

impl Summary {
    /// Slots whose planner decision did not reach BPF before their tick: decided late (not
    /// written) or written late (they ran the entries before).
    pub fn planner_late(&self) -> u64 {
        self.planner_late_slots.unwrap_or(0)
            + self.planner_late_writes.as_ref().map_or(0, |w| w.slots)
    }
}

/// The summary's `guard` object (docs/run-output.md).
#[derive(Debug, Deserialize)]
pub struct Guard {
    pub us: u64,
    /// `flag` or `calibrated`.
    pub source: String,
    pub bound_us: Option<GuardBound>,
    pub wanted_us: Option<u64>,
    pub capped: bool,
    pub calibration: Option<Calibration>,
}

#[derive(Debug, Deserialize)]
pub struct GuardBound {
    pub min: u64,
    pub max: u64,
}

#[derive(Debug, Deserialize)]
pub struct Calibration {
    pub cpus: Vec<u32>,
    pub samples: u64,
    pub fifo: bool,
    pub duration_ms: u64,
    pub late_ns: LateNs,
}

#[derive(Debug, Deserialize)]
pub struct TableSwitch {
    pub slot: u64,
    pub table: String,
}

#[derive(Debug, Deserialize)]
pub struct TaskSummary {
    pub name: String,
    pub class: String,
    pub cpu: Option<u32>,
    pub tids: Vec<u32>,
    pub state: String,
    pub planned_ns: u64,
    pub delivered_ns: u64,
    pub outside_ns: u64,
    pub run_ns: u64,
}

#[derive(Debug, Deserialize)]
pub struct CpuSummary {
    pub cpu: u32,
    pub managed: bool,
    pub ticks: u64,
    pub late_ns: LateNs,
    pub late_hist: Vec<Bucket>,
    pub stolen_ns: u64,
    pub kthread_ns: u64,
    pub foreign_ns: u64,
    pub be_while_tt_ready_ns: u64,
    pub bpf_tick_ns_avg: f64,
    /// Guard-band events and the owners they stopped (absent from older summaries).
    #[serde(default)]
    pub guard_events: u64,
    #[serde(default)]
    pub guard_late: u64,
    #[serde(default)]
    pub guard_stops: u64,
    /// BPF's own counters (only those the checks read; absent from older summaries)
    #[serde(default)]
    pub bpf_counters: BpfCounters,
}

#[derive(Debug, Default, Deserialize)]
pub struct BpfCounters {
    /// foreign tasks that started on the managed CPU without being routed there and were sent
    /// to the housekeeping CPUs at once, and their time there (src/bpf/tt_sched.bpf.c, D)
    #[serde(default)]
    pub evictions: u64,
    #[serde(default)]
    pub evicted_ns: u64,
}

/// How long, on average, an evicted task may run on after BPF kicked it off the CPU: the
/// self-kick's IPI and the next reschedule point, stretched by TCG (measured: see
/// docs/vm-harness.md, "nothing foreign on a managed CPU").
pub const EVICT_NS: u64 = 2_000_000;

impl CpuSummary {
    /// Foreign time the scheduler let run (`foreign_ns` less the evicted tasks' time): 0 unless
    /// a task outside the plan is routed here (migration disabled, or pinned to managed CPUs).
    pub fn routed_foreign_ns(&self) -> u64 {
        self.foreign_ns.saturating_sub(self.bpf_counters.evicted_ns)
    }

    /// Exact: no foreign time but that of evicted tasks; timing: each of those left within
    /// [`EVICT_NS`] on average. Both printed.
    pub fn check_foreign(&self, c: &mut Checks, allowed_ns: u64, why: &str) {
        let b = &self.bpf_counters;
        c.check(
            self.routed_foreign_ns() <= allowed_ns,
            format!(
                "cpu {}: foreign {} ns, of which {} ns of {} tasks the kernel left here that BPF \
                 sent away at once: {} ns (want {})",
                self.cpu,
                self.foreign_ns,
                b.evicted_ns,
                b.evictions,
                self.routed_foreign_ns(),
                match allowed_ns {
                    0 => "0".to_string(),
                    n => format!("<= {n}: {why}"),
                }
            ),
        );
        if b.evictions > 0 {
            c.check_timing(
                b.evicted_ns <= b.evictions * EVICT_NS,
                format!(
                    "cpu {}: evicted tasks ran on {:.1} us each on average (<= {} us)",
                    self.cpu,
                    b.evicted_ns as f64 / b.evictions as f64 / 1e3,
                    EVICT_NS / 1000
                ),
            );
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct LateNs {
    pub min: i64,
    pub p50: i64,
    pub p99: i64,
    pub max: i64,
}

#[derive(Debug, Deserialize)]
pub struct Bucket {
    /// Upper bound, ns; `None` (null) or u64::MAX for an open last bucket.
    pub le_ns: Option<u64>,
    pub count: u64,
}

impl TaskSummary {
    /// Delivered share of the planned slot time, percent.
    pub fn delivered_pct(&self) -> f64 {
        pct(self.delivered_ns, self.planned_ns)
    }

    /// Share of its run time spent outside its own slots, percent.
    pub fn outside_pct(&self) -> f64 {
        pct(self.outside_ns, self.run_ns)
    }
}

pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

pub fn us(ns: i64) -> f64 {
    ns as f64 / 1e3
}

impl Summary {
    pub fn managed(&self) -> impl Iterator<Item = &CpuSummary> {
        self.cpus.iter().filter(|c| c.managed)
    }

    /// The planned slot time of every tt task: what a derived delivered bound is a share of
    /// (`witness::Taken::bound`).
    pub fn planned_tt_ns(&self) -> u64 {
        self.tasks
            .iter()
            .filter(|t| t.class == "tt")
            .map(|t| t.planned_ns)
            .sum()
    }

    /// Exact: on every managed CPU no task outside the plan ran but those BPF evicted
    /// ([`CpuSummary::check_foreign`]) and be work was never started while the slot's tt task
    /// was runnable (`be_while_tt_ready_ns`).
    pub fn check_managed_clean(&self, c: &mut Checks) {
        for cpu in self.managed() {
            cpu.check_foreign(c, 0, "");
            c.check(
                cpu.be_while_tt_ready_ns == 0,
                format!(
                    "cpu {}: be while tt ready {} ns (want 0)",
                    cpu.cpu, cpu.be_while_tt_ready_ns
                ),
            );
        }
    }

    /// Per-task and per-CPU figures, one line each, for the test log.
    pub fn print(&self, title: &str) {
        println!(
            "--- {title}: slot {} us, {:.1} ms, exit {}",
            self.slot_us,
            ms(self.duration_ns),
            self.exit
        );
        for t in &self.tasks {
            println!(
                "  task {:<10} {:<2} cpu {:<4} {:<9} planned {:>8.1} ms delivered {:>8.1} ms ({:>5.1} %) \
                 outside {:>7.2} ms ({:>5.2} % of run {:.1} ms)",
                t.name,
                t.class,
                t.cpu.map_or("-".into(), |c| c.to_string()),
                t.state,
                ms(t.planned_ns),
                ms(t.delivered_ns),
                t.delivered_pct(),
                ms(t.outside_ns),
                t.outside_pct(),
                ms(t.run_ns)
            );
        }
        for c in &self.cpus {
            println!(
                "  cpu {} {:<11} ticks {:>5} late us min {:.1} p50 {:.1} p99 {:.1} max {:.1}; stolen {:.2} ms \
                 (kthread {:.2}, foreign {:.2}), be while tt ready {:.2} ms, BPF {:.0} ns/tick, \
                 guard band: {} events, {} stopped the owner, {} came after the boundary",
                c.cpu,
                if c.managed { "managed" } else { "housekeeping" },
                c.ticks,
                us(c.late_ns.min),
                us(c.late_ns.p50),
                us(c.late_ns.p99),
                us(c.late_ns.max),
                ms(c.stolen_ns),
                ms(c.kthread_ns),
                ms(c.foreign_ns),
                ms(c.be_while_tt_ready_ns),
                c.bpf_tick_ns_avg,
                c.guard_events,
                c.guard_stops,
                c.guard_late
            );
        }
    }
}

impl CpuSummary {
    /// The lateness histogram as text bars.
    pub fn print_hist(&self) {
        let total: u64 = self.late_hist.iter().map(|b| b.count).sum();
        println!(
            "  cpu {} slot-tick lateness histogram ({total} ticks):",
            self.cpu
        );
        for b in &self.late_hist {
            let bound = match b.le_ns {
                Some(le) if le < u64::MAX => format!("{:.0}", le as f64 / 1e3),
                _ => "inf".to_string(),
            };
            let bar = "#".repeat((60.0 * b.count as f64 / total.max(1) as f64).ceil() as usize);
            println!("    <= {bound:>7} us {:>6} {bar}", b.count);
        }
    }
}

/// Checks with their measured figures, printed either way; collects failures so a test reports
/// all of them at once. Timing checks (bounds on figures that host noise can move) are kept
/// apart from exact ones, so a test may measure again when only timing checks failed.
#[derive(Default)]
pub struct Checks {
    failures: Vec<String>,
    timing_failures: Vec<String>,
    /// The largest median lateness of the scheduler's BPF timers the witness measured in this
    /// measurement, from the kernel's own hrtimer trace (not scx_tt's records): how slow the
    /// emulated platform was ([`NOISY_TIMER_P50_NS`]).
    timer_late_p50_ns: Option<u64>,
}

impl Checks {
    pub fn check(&mut self, ok: bool, what: String) {
        println!("  [{}] {what}", if ok { "ok" } else { "FAIL" });
        if !ok {
            self.failures.push(what);
        }
    }

    pub fn check_timing(&mut self, ok: bool, what: String) {
        println!("  [{}] {what}", if ok { "ok" } else { "FAIL (timing)" });
        if !ok {
            self.timing_failures.push(what);
        }
    }

    /// Every failure, exact ones first.
    pub fn failures(&self) -> Vec<String> {
        self.failures
            .iter()
            .chain(&self.timing_failures)
            .cloned()
            .collect()
    }

    /// Notes a median timer lateness the witness measured (the largest of a measurement counts).
    pub fn note_timer_late_p50(&mut self, ns: u64) {
        self.timer_late_p50_ns = Some(self.timer_late_p50_ns.map_or(ns, |x| x.max(ns)));
    }

    /// The platform was too slow to judge timing: the witness measured a median timer lateness
    /// of at least [`NOISY_TIMER_P50_NS`].
    fn platform_too_slow(&self) -> bool {
        self.timer_late_p50_ns
            .is_some_and(|x| x >= NOISY_TIMER_P50_NS)
    }

    /// Only timing checks failed.
    pub fn only_timing_failed(&self) -> bool {
        self.failures.is_empty() && !self.timing_failures.is_empty()
    }

    pub fn finish(self) {
        if self.only_timing_failed() && host_too_slow() {
            ledger::note(|l| l.timing_not_judged = true);
            println!(
                "--- TIMING NOT JUDGED: only timing bounds were missed, on a host {:.2} times \
                 slower than the reference by the guest's calibration (>= {SLOW_HOST_FACTOR}: \
                 the bounds were measured on the reference host). Missed: {}",
                host_factor().unwrap_or_default(),
                self.timing_failures.join("; ")
            );
            return;
        }
        let all = self.failures();
        assert!(all.is_empty(), "failed checks:\n  {}", all.join("\n  "));
    }
}

/// How many times a scenario with timing bounds is measured at most. A TCG guest on this
/// 2-core, itself virtualised, machine sometimes loses its vCPU threads for 5-40 ms at a time
/// (host steal); a 10 s measurement then misses a timing bound although the scheduler did
/// nothing wrong. Seen in about 1 measurement of 4 on a bad stretch, so three measurements
/// make a false failure rare (docs/vm-harness.md).
pub const TIMING_TRIES: u32 = 3;

/// A measurement whose slot timers came this late or later at the median, by the kernel's own
/// hrtimer trace (the witness), ran on a host too slow or too loaded for the timing bounds: on
/// this machine the median is 65-285 us (tick callback 40-50 us); a CI host that failed every
/// timing bound three times over had slot-tick medians of 460-930 us and 190 us tick callbacks
/// (scx_tt's records; 2026-11-22). When every measurement only missed timing bounds and every
/// one was that slow, the timing failures are printed as not judged and the test passes on its
/// exact checks; the figures stay printed (docs/vm-harness.md, "Timing bounds").
pub const NOISY_TIMER_P50_NS: u64 = 400_000;

/// The guest's calibration (tests/vm/guest/init: the median of three `dd | sha256sum` of
/// 4 MiB, user-space CPU time under TCG, before the scenario) on the reference host: this
/// project's 2-core machine (2026-11-29: 390-430 ms with parallel builds beside at load 4-5;
/// 870-1170 ms with `SCX_TT_VM_CPU_PERCENT=130`).
pub const CALIBRATION_REFERENCE_MS: f64 = 400.0;

/// A host whose guest calibration took this many times the reference's or more is too slow for
/// the timing bounds, which were measured on the reference host: a measurement there that
/// missed only timing bounds is printed as not judged, at once (no second boot), and the test
/// passes on its exact checks. A CI host missed timing bounds in 10 VM tests three times over
/// (2026-11-28); `SCX_TT_VM_CPU_PERCENT` reproduces such a host (tests/vm/run.sh).
pub const SLOW_HOST_FACTOR: f64 = 1.25;

thread_local! {
    /// The slowest calibration factor of this test's boots (libtest runs each test in a thread
    /// of its own).
    static HOST_FACTOR: std::cell::Cell<Option<f64>> = const { std::cell::Cell::new(None) };
}

/// Reads a boot's calibration line, prints it against the reference and keeps the slowest of
/// the test's boots.
fn note_calibration(console: &str) {
    let ms = console
        .lines()
        .filter_map(|l| l.strip_prefix("=== tt-vm: calibration sha256_4mib_ms="))
        .filter_map(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .last();
    let Some(ms) = ms else { return };
    let factor = (CALIBRATION_REFERENCE_MS > 0.0).then(|| ms / CALIBRATION_REFERENCE_MS);
    eprintln!(
        "vm: host calibration: 4 MiB sha256 in the guest took {ms:.0} ms (reference host \
         {CALIBRATION_REFERENCE_MS:.0} ms: factor {}; timing bounds judged below {SLOW_HOST_FACTOR})",
        factor.map_or("-".to_string(), |f| format!("{f:.2}"))
    );
    if let Some(f) = factor {
        HOST_FACTOR.with(|h| h.set(Some(h.get().map_or(f, |x: f64| x.max(f)))));
    }
}

/// The slowest calibration factor of this test's boots so far.
pub fn host_factor() -> Option<f64> {
    HOST_FACTOR.with(|h| h.get())
}

/// This test's host is too slow for the timing bounds ([`SLOW_HOST_FACTOR`]).
pub fn host_too_slow() -> bool {
    host_factor().is_some_and(|f| f >= SLOW_HOST_FACTOR)
}

/// Measures with `measure` (given a label per try) until a measurement passes, fails an exact
/// check (never measured again), or TIMING_TRIES measurements failed only timing bounds; the last
/// measurement decides and every one is printed.
pub fn measure_until_settled(label: &str, measure: impl Fn(&str) -> Checks) {
    ledger::note(|_| {});
    let mut c = measure(label);
    let mut all_slow = c.platform_too_slow();
    for k in 2..=TIMING_TRIES {
        if !c.only_timing_failed() || host_too_slow() {
            break;
        }
        println!(
            "--- only timing bounds failed ({}); measuring again ({k} of {TIMING_TRIES})",
            c.failures().join("; ")
        );
        ledger::note(|l| l.remeasured += 1);
        c = measure(&format!("{label}-try{k}"));
        all_slow &= c.platform_too_slow();
    }
    if c.only_timing_failed() && all_slow {
        ledger::note(|l| l.timing_not_judged = true);
        println!(
            "--- TIMING NOT JUDGED: every one of {TIMING_TRIES} measurements missed only timing \
             bounds, and in each the scheduler's timers came >= {} us late at the median by the \
             kernel's trace: this host is too slow for the bounds (NOISY_TIMER_P50_NS). Missed: {}",
            NOISY_TIMER_P50_NS / 1000,
            c.failures().join("; ")
        );
        return;
    }
    c.finish();
}

/// The per-test ledger: what each VM test cost, one row per test in target/vm/summary.tsv
/// (docs/vm-harness.md, "The summary table"), which `make test-vm` prints at the end with
/// scripts/vm-summary.sh. A test's log says everything, but thirty logs of minutes each do not
/// show at a glance which test needed four boots or three measurements.
///
/// libtest runs every test in a thread of its own named after the test
/// (`adaptive::an_adaptive_task...`) and joins that thread before it starts the next test under
/// `--test-threads=1` (and before it exits in any case). So the ledger is a thread-local that
/// the harness fills as the test goes ([`note`]: boots from `Vm::run_status`, measurements from
/// `measure_until_settled`) and whose destructor, run when the test's thread exits, appends the
/// row. libtest catches the test's panic before the thread exits, so the destructor cannot see
/// it; a panic hook, installed once, marks the panicking thread's ledger failed instead. A
/// thread that booted no guest (the harness's own unit tests) writes no row, and neither does a
/// thread named `main` (the benchmarks that share this file run there, outside libtest).
pub mod ledger {
    use std::cell::RefCell;
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Once;
    use std::time::{Instant, SystemTime};

    /// The columns of summary.tsv, tab-separated.
    pub const HEADER: &str = "test\tboots\tcrashes\thangs\tremeasured\tverdict\twall_s\n";

    pub fn summary_path() -> PathBuf {
        super::repo().join("target/vm/summary.tsv")
    }

    /// The boots of one or more run.sh calls: every try, and the tries whose guest crashed or
    /// hung (each retried while tries remained).
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct Tries {
        pub boots: u32,
        pub crashes: u32,
        pub hangs: u32,
    }

    /// What one test's thread has cost so far.
    pub struct Ledger {
        test: String,
        /// summary.tsv; a unit test points it elsewhere.
        path: PathBuf,
        started: Instant,
        tries: Tries,
        /// Measurements beyond the first of every `measure_until_settled`.
        pub remeasured: u32,
        pub timing_not_judged: bool,
        failed: bool,
        /// The panic's message (the failed checks), for failures.txt.
        failure: Option<String>,
    }

    thread_local! {
        static LEDGER: RefCell<Option<Ledger>> = const { RefCell::new(None) };
    }

    /// Updates the current test's ledger, starting it (and its wall clock) at the test's first
    /// harness call. Nothing outside a libtest thread.
    pub fn note(update: impl FnOnce(&mut Ledger)) {
        let thread = std::thread::current();
        let Some(test) = thread.name().filter(|n| *n != "main") else {
            return;
        };
        install_panic_hook();
        // try_with: a harness call from another thread-local's destructor finds no ledger
        let _ = LEDGER.try_with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                update(l.get_or_insert_with(|| Ledger::new(&row_name(test), summary_path())));
            }
        });
    }

    /// The test's row name: its name, with ` @KERNEL` when the VMs boot another kernel than
    /// `default` (SCX_TT_VM_KERNEL), so one summary can hold the same test on several kernels.
    pub fn row_name(test: &str) -> String {
        match std::env::var("SCX_TT_VM_KERNEL") {
            Ok(k) if !k.is_empty() && k != "default" => format!("{test} @{k}"),
            _ => test.to_string(),
        }
    }

    fn install_panic_hook() {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                // A panic inside `note` finds the ledger borrowed; libtest reports it anyway.
                let _ = LEDGER.try_with(|l| {
                    if let Ok(mut l) = l.try_borrow_mut() {
                        if let Some(l) = l.as_mut() {
                            l.failed = true;
                            let p = info.payload();
                            let text = p
                                .downcast_ref::<String>()
                                .map(String::as_str)
                                .or_else(|| p.downcast_ref::<&str>().copied())
                                .unwrap_or("(a panic without a message)");
                            let at = info.location().map_or(String::new(), |l| {
                                format!(" at {}:{}", l.file(), l.line())
                            });
                            l.failure = Some(format!("{}{at}", digest(text)));
                        }
                    }
                });
                previous(info);
            }));
        });
    }

    impl Ledger {
        fn new(test: &str, path: PathBuf) -> Ledger {
            Ledger {
                test: test.replace(['\t', '\n'], " "),
                path,
                started: Instant::now(),
                tries: Tries::default(),
                remeasured: 0,
                timing_not_judged: false,
                failed: false,
                failure: None,
            }
        }

        pub fn add(&mut self, t: Tries) {
            self.tries.boots += t.boots;
            self.tries.crashes += t.crashes;
            self.tries.hangs += t.hangs;
        }

        fn verdict(&self) -> &'static str {
            match (self.failed, self.timing_not_judged) {
                (true, _) => "FAIL",
                (false, true) => "pass-timing-not-judged",
                (false, false) => "pass",
            }
        }

        fn row(&self) -> String {
            let t = self.tries;
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{:.1}\n",
                self.test,
                t.boots,
                t.crashes,
                t.hangs,
                self.remeasured,
                self.verdict(),
                self.started.elapsed().as_secs_f64()
            )
        }
    }

    impl Drop for Ledger {
        fn drop(&mut self) {
            if self.tries.boots == 0 {
                return;
            }
            if let Err(e) = append_row(&self.path, &self.row()) {
                eprintln!(
                    "vm: {}: no summary row for {}: {e}",
                    self.path.display(),
                    self.test
                );
            }
            if let Some(f) = &self.failure {
                let path = failures_path(&self.path);
                let entry = format!("--- {}\n{f}\n", self.test);
                if let Err(e) = append_entry(&path, &entry) {
                    eprintln!("vm: {}: {e}", path.display());
                }
            }
        }
    }

    /// Where a failed test's message goes: `failures.txt` beside the summary table, printed
    /// after it by scripts/vm-summary.sh. A CI log shows its tail: the table and then why each
    /// failed test failed, not only which.
    pub fn failures_path(summary: &Path) -> PathBuf {
        summary.with_file_name("failures.txt")
    }

    /// A panic message cut for failures.txt: its first 40 lines of at most 400 characters.
    pub fn digest(text: &str) -> String {
        let mut lines: Vec<String> = text
            .lines()
            .take(40)
            .map(|l| match l.char_indices().nth(400) {
                Some((i, _)) => format!("{} [...]", &l[..i]),
                None => l.to_string(),
            })
            .collect();
        if text.lines().count() > 40 {
            lines.push("[... more lines in the test's log]".into());
        }
        lines.join("\n")
    }

    /// Appends `entry` in one write (O_APPEND), which lands whole at the end of the file even
    /// when other tests append at once (the rows of [`append_row`], failures.txt).
    fn append_entry(path: &Path, entry: &str) -> std::io::Result<()> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?
            .write_all(entry.as_bytes())
    }

    /// Appends `row` to the table at `path`, writing the header first when the file is new.
    /// Tests finishing at once (the smoke tests run in parallel) must neither interleave their
    /// rows nor both write the header: the header is linked into place (`link` never replaces
    /// a file, so exactly one lands, before any row), and each row is one `write` in append
    /// mode (O_APPEND), which lands whole at the end.
    pub fn append_row(path: &Path, row: &str) -> std::io::Result<()> {
        static TMP: AtomicU32 = AtomicU32::new(0);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        if !path.exists() {
            let mut tmp = path.as_os_str().to_owned();
            tmp.push(format!(
                ".{}.{}",
                std::process::id(),
                TMP.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::write(&tmp, HEADER)?;
            let linked = std::fs::hard_link(&tmp, path);
            let _ = std::fs::remove_file(&tmp);
            match linked {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
        }
        append_entry(path, row)
    }

    /// What run.sh takes for a crashed guest on a boot's console.
    const CRASHED: [&str; 3] = ["Oops", "Kernel panic", "BUG: "];

    /// The tries of one run.sh call, from the consoles of its boots in order (try-1, try-2,
    /// ...): run.sh stops at the first completed boot, so when the run `completed` (it wrote
    /// scenario.rc) every boot before the last was retried, otherwise every boot failed. A
    /// failed boot whose console shows a kernel crash (run.sh's own pattern: `Oops`,
    /// `Kernel panic`, `BUG: `) counts as a crash, any other as a hang (no `=== tt-vm: done
    /// rc=` marker, or, rarely, the result files did not all arrive: run.sh calls both hung).
    pub fn tally_tries(consoles: &[&str], completed: bool) -> Tries {
        let failed = if completed {
            consoles.len().saturating_sub(1)
        } else {
            consoles.len()
        };
        let crashes = consoles[..failed]
            .iter()
            .filter(|c| CRASHED.iter().any(|p| c.contains(p)))
            .count();
        Tries {
            boots: consoles.len() as u32,
            crashes: crashes as u32,
            hangs: (failed - crashes) as u32,
        }
    }

    /// [`tally_tries`] over run directory `dir` after a run.sh call that started at `since`.
    /// run.sh empties the directory first, but not when it stops before that (no kernel, no
    /// initramfs): consoles older than the call are an earlier run's and are not counted.
    pub fn tally_run_dir(dir: &Path, since: SystemTime) -> Tries {
        // file times come from the kernel's coarse clock, up to a tick behind `since`
        let since = since - std::time::Duration::from_secs(1);
        let mut consoles: Vec<(u32, String)> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let k = name.strip_prefix("try-")?.strip_suffix(".console.log")?;
                let k = k.parse().ok()?;
                if e.metadata().and_then(|m| m.modified()).ok()? < since {
                    return None;
                }
                let text = String::from_utf8_lossy(&std::fs::read(e.path()).ok()?).into_owned();
                Some((k, text))
            })
            .collect();
        consoles.sort_by_key(|&(k, _)| k);
        let texts: Vec<&str> = consoles.iter().map(|(_, t)| t.as_str()).collect();
        tally_tries(&texts, dir.join("scenario.rc").exists())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        const DONE: &str = "=== tt-vm: boot\nscenario output\n=== tt-vm: done rc=0\n";
        const OOPS: &str =
            "=== tt-vm: boot\nOops: int3: 0000 [#1] SMP\nKernel panic - not syncing\n";
        const HUNG: &str = "=== tt-vm: boot\nscenario output\n";

        fn tries(boots: u32, crashes: u32, hangs: u32) -> Tries {
            Tries {
                boots,
                crashes,
                hangs,
            }
        }

        #[test]
        fn a_completed_run_retried_every_boot_but_its_last() {
            // a crash, a hang, then the completed boot
            assert_eq!(tally_tries(&[OOPS, HUNG, DONE], true), tries(3, 1, 1));
            assert_eq!(tally_tries(&[DONE], true), tries(1, 0, 0));
            // a boot with the done marker that was retried anyway lost result files: run.sh
            // calls it hung
            assert_eq!(tally_tries(&[DONE, DONE], true), tries(2, 0, 1));
            // the smoke test's crash and hang scenarios: every boot failed (run.sh exit 3)
            assert_eq!(
                tally_tries(&[OOPS, "BUG: kernel NULL pointer dereference"], false),
                tries(2, 2, 0)
            );
            assert_eq!(tally_tries(&[HUNG], false), tries(1, 0, 1));
            assert_eq!(tally_tries(&[], false), Tries::default());
        }

        #[test]
        fn a_run_dir_is_read_in_try_order() {
            // nine crashes and the completed try 10: sorted as text, try-9 would look like
            // the completed one
            let dir = crate::common::temp_dir("ledger", "tries");
            for k in 1..=9 {
                std::fs::write(dir.join(format!("try-{k}.console.log")), OOPS).expect("write");
            }
            std::fs::write(dir.join("try-10.console.log"), DONE).expect("write");
            std::fs::write(dir.join("console.log"), DONE).expect("write");
            std::fs::write(dir.join("scenario.rc"), "0\n").expect("write");
            let all = tries(10, 9, 0);
            assert_eq!(tally_run_dir(&dir, SystemTime::now()), all);
            // consoles from before the call are an earlier run's
            let later = SystemTime::now() + std::time::Duration::from_secs(60);
            assert_eq!(tally_run_dir(&dir, later), Tries::default());
            let _ = std::fs::remove_dir_all(&dir);
        }

        /// Runs `body` in a thread named `test` whose ledger writes to `path`, as libtest runs a
        /// test; true when the thread panicked.
        fn in_test_thread(test: &str, path: &Path, body: impl FnOnce() + Send + 'static) -> bool {
            let path = path.to_path_buf();
            std::thread::Builder::new()
                .name(test.to_string())
                .spawn(move || {
                    note(|l| l.path = path);
                    body();
                })
                .expect("spawn")
                .join()
                .is_err()
        }

        #[test]
        fn each_test_thread_leaves_one_row_with_its_verdict_when_it_ends() {
            let dir = crate::common::temp_dir("ledger", "rows");
            let path = dir.join("summary.tsv");
            let boots = |crashes| Tries {
                boots: 1 + crashes,
                crashes,
                hangs: 0,
            };
            assert!(!in_test_thread("vm::passes", &path, move || {
                note(|l| l.add(boots(1)));
                note(|l| l.remeasured += 2);
            }));
            assert!(in_test_thread("vm::fails", &path, move || {
                note(|l| l.add(boots(0)));
                panic!("an expected panic: the ledger must say FAIL");
            }));
            assert!(!in_test_thread("vm::too_slow", &path, move || {
                note(|l| l.add(boots(0)));
                note(|l| l.timing_not_judged = true);
            }));
            // booted nothing (a unit test of the harness): no row
            assert!(!in_test_thread("vm::no_boot", &path, || note(|l| l
                .remeasured +=
                1)));
            let text = std::fs::read_to_string(&path).expect("summary.tsv");
            let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
            let cut: Vec<Vec<&str>> = rows.iter().map(|r| r[..6].to_vec()).collect();
            assert_eq!(
                cut,
                [
                    vec!["test", "boots", "crashes", "hangs", "remeasured", "verdict"],
                    vec!["vm::passes", "2", "1", "0", "2", "pass"],
                    vec!["vm::fails", "1", "0", "0", "0", "FAIL"],
                    vec!["vm::too_slow", "1", "0", "0", "0", "pass-timing-not-judged"],
                ]
            );
            assert_eq!(rows[0][6], "wall_s");
            for r in &rows[1..] {
                assert!(
                    r[6].parse::<f64>().is_ok_and(|s| s < 60.0),
                    "wall_s {}",
                    r[6]
                );
            }
            // the failed test's message, and only its, beside the table
            let failures = std::fs::read_to_string(failures_path(&path)).expect("failures.txt");
            assert!(
                failures
                    .starts_with("--- vm::fails\nan expected panic: the ledger must say FAIL at ")
                    && failures.lines().filter(|l| l.starts_with("--- ")).count() == 1,
                "{failures}"
            );
            let _ = std::fs::remove_dir_all(&dir);
        }

        #[test]
        fn a_failure_s_digest_keeps_its_head_and_cuts_long_lines() {
            let long = "x".repeat(1000);
            let text = format!("failed checks:\n  {long}\n{}", "  more\n".repeat(60));
            let d = digest(&text);
            let lines: Vec<&str> = d.lines().collect();
            assert_eq!(lines[0], "failed checks:");
            assert_eq!(lines[1], format!("  {} [...]", &long[..398]));
            assert_eq!(lines.len(), 41, "40 lines and the note");
            assert_eq!(lines[40], "[... more lines in the test's log]");
            assert_eq!(digest("one line"), "one line");
        }

        #[test]
        fn rows_appended_at_once_stay_whole_under_one_header() {
            let dir = crate::common::temp_dir("ledger", "append");
            let path = dir.join("summary.tsv");
            let writers: Vec<_> = (0..8)
                .map(|k| {
                    let path = path.clone();
                    std::thread::spawn(move || {
                        let row = format!("t{k}\t{}\n", "x".repeat(2000));
                        for _ in 0..50 {
                            append_row(&path, &row).expect("append");
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().expect("writer");
            }
            let text = std::fs::read_to_string(&path).expect("summary.tsv");
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[0], HEADER.trim_end());
            assert_eq!(lines.len(), 1 + 8 * 50);
            for l in &lines[1..] {
                let (test, xs) = l.split_once('\t').expect("a tab");
                assert!(
                    test.len() == 2 && xs.len() == 2000 && !xs.contains('t'),
                    "{l:.40}"
                );
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_parse_last_value_wins() {
        let r = parse_results("a=1\nnot a result\nb = x y \na=2\n");
        assert_eq!(r.get("a").map(String::as_str), Some("2"));
        assert_eq!(r.get("b").map(String::as_str), Some("x y"));
        assert_eq!(r.len(), 2);
    }

    /// How many measurements `measure_until_settled` takes when try k fails as `fail(k)` says
    /// (`Some(true)`: a timing check, `Some(false)`: an exact one), and whether it passed.
    fn settle(fail: impl Fn(u32) -> Option<bool>) -> (u32, bool) {
        settle_on(fail, |_| None)
    }

    /// [`settle`] with the timer lateness the witness notes in try k.
    fn settle_on(
        fail: impl Fn(u32) -> Option<bool>,
        p50: impl Fn(u32) -> Option<u64>,
    ) -> (u32, bool) {
        let calls = std::cell::Cell::new(0);
        let passed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            measure_until_settled("t", |_| {
                calls.set(calls.get() + 1);
                let mut c = Checks::default();
                if let Some(ns) = p50(calls.get()) {
                    c.note_timer_late_p50(ns);
                }
                match fail(calls.get()) {
                    Some(true) => c.check_timing(false, format!("late, try {}", calls.get())),
                    Some(false) => c.check(false, "foreign time".into()),
                    None => {}
                }
                c
            })
        }))
        .is_ok();
        (calls.get(), passed)
    }

    #[test]
    fn timing_failures_are_measured_again_and_exact_ones_are_not() {
        // Two measurements that miss only a timing bound, then one that passes: three calls, pass.
        assert_eq!(settle(|k| (k < 3).then_some(true)), (3, true));
        // An exact failure is final at once.
        assert_eq!(settle(|_| Some(false)), (1, false));
        // Timing failures on every try fail after TIMING_TRIES measurements.
        assert_eq!(settle(|_| Some(true)), (TIMING_TRIES, false));
    }

    #[test]
    fn timing_is_not_judged_only_when_every_measurement_was_too_slow() {
        let slow = NOISY_TIMER_P50_NS;
        // every try missed timing on a too slow host: passes after TIMING_TRIES measurements
        assert_eq!(
            settle_on(|_| Some(true), |_| Some(slow)),
            (TIMING_TRIES, true)
        );
        // one try was fast enough to judge: its timing failure counts
        assert_eq!(
            settle_on(
                |_| Some(true),
                |k| Some(if k == 2 { slow - 1 } else { slow })
            ),
            (TIMING_TRIES, false)
        );
        // no witness figure: judged as before
        assert_eq!(settle_on(|_| Some(true), |_| None), (TIMING_TRIES, false));
        // an exact failure on a slow host still fails at once
        assert_eq!(settle_on(|_| Some(false), |_| Some(slow)), (1, false));
    }
}
