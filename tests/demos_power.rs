//! DEmOS power policies (issue 18, item 4) on fake cpufreq sysfs trees laid out like the
//! kernel's: the simulator's event sequence of a configuration drives `scx_tt::demos::power`'s
//! driver through the `userspace` governor of `energy::cpufreq`, and the test checks, against a
//! reference written here from the seed's and DEmOS's definitions:
//! - the event sequence itself (hand-derived from the documented schedule),
//! - the frequency of each CPU after each event,
//! - the files each event wrote in the fake tree (and nothing else changed),
//! - that governors, limits, the P-state driver mode and `scaling_setspeed` are restored
//!   byte for byte at the end.

mod common;

use scx_tt::demos::power::{events_from_sim, Event, PowerDriver, PowerPolicy, Timed, Write};
use scx_tt::demos::{self, Config, CpuSet, SimOptions, Source};
use scx_tt::demos::{ConfigFile as _, SysfsPowerDriver as _};
use scx_tt::energy::sysfs::{Journal, Root};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const CPU: &str = "/sys/devices/system/cpu";

/// A temporary directory standing for `/`, removed on drop.
struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn new(tag: &str) -> Tree {
        Tree {
            dir: common::fresh_temp_dir("demos-power", tag),
        }
    }

    fn root(&self) -> Root {
        Root::new(&self.dir)
    }

    fn put(&self, abs: &str, text: &str) {
        let p = self.root().path(abs);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{text}\n")).unwrap();
    }

    /// Every file (as a kernel path) with its exact bytes.
    fn snapshot(&self) -> BTreeMap<String, String> {
        fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(base, &p, out);
                } else {
                    let k = format!("/{}", p.strip_prefix(base).unwrap().display());
                    out.insert(k, std::fs::read_to_string(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.dir, &self.dir, &mut out);
        out
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const A53: [u32; 4] = [600_000, 896_000, 1_104_000, 1_200_000];
const A72: [u32; 4] = [600_000, 1_056_000, 1_296_000, 1_596_000];

/// The i.MX8QuadMax (DEmOS's board, seed §5.1) under cpufreq-dt: policy0 = the A53 cluster
/// (CPUs 0-3), policy4 = the A72 cluster (CPUs 4-5), with `schedutil` and a lowered
/// `scaling_max_freq` on policy4 (to see it restored).
fn imx8_tree(tag: &str) -> Tree {
    let t = Tree::new(tag);
    for (id, cpus, freqs, scaling_max) in [(0, "0 1 2 3", A53, A53[3]), (4, "4 5", A72, A72[2])] {
        let p = format!("{CPU}/cpufreq/policy{id}");
        let list: Vec<String> = freqs.iter().map(|f| f.to_string()).collect();
        t.put(&format!("{p}/affected_cpus"), cpus);
        t.put(&format!("{p}/related_cpus"), cpus);
        t.put(
            &format!("{p}/scaling_available_frequencies"),
            &list.join(" "),
        );
        t.put(&format!("{p}/cpuinfo_min_freq"), &freqs[0].to_string());
        t.put(&format!("{p}/cpuinfo_max_freq"), &freqs[3].to_string());
        t.put(&format!("{p}/scaling_min_freq"), &freqs[0].to_string());
        t.put(&format!("{p}/scaling_max_freq"), &scaling_max.to_string());
        t.put(&format!("{p}/scaling_driver"), "cpufreq-dt");
        t.put(&format!("{p}/scaling_governor"), "schedutil");
        t.put(
            &format!("{p}/scaling_available_governors"),
            "conservative userspace powersave ondemand performance schedutil",
        );
        t.put(&format!("{p}/scaling_setspeed"), "<unsupported>");
    }
    t
}

/// An Intel server under intel_pstate (status `active`, as booted): 4 CPUs, one policy each,
/// no frequency list (1.0-2.3 GHz).
fn xeon_tree(tag: &str) -> Tree {
    let t = Tree::new(tag);
    t.put(&format!("{CPU}/intel_pstate/status"), "active");
    for cpu in 0..4 {
        let p = format!("{CPU}/cpufreq/policy{cpu}");
        t.put(&format!("{p}/affected_cpus"), &cpu.to_string());
        t.put(&format!("{p}/related_cpus"), &cpu.to_string());
        t.put(&format!("{p}/cpuinfo_min_freq"), "1000000");
        t.put(&format!("{p}/cpuinfo_max_freq"), "2300000");
        t.put(&format!("{p}/scaling_min_freq"), "1200000");
        t.put(&format!("{p}/scaling_max_freq"), "2000000");
        t.put(&format!("{p}/scaling_driver"), "intel_cpufreq");
        t.put(&format!("{p}/scaling_governor"), "powersave");
        t.put(
            &format!("{p}/scaling_available_governors"),
            "conservative ondemand userspace powersave performance schedutil",
        );
        t.put(&format!("{p}/scaling_setspeed"), "<unsupported>");
    }
    t
}

fn setspeed(id: u32) -> String {
    format!("{CPU}/cpufreq/policy{id}/scaling_setspeed")
}

fn load(path: &str) -> Config {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    Config::from_file(&p).unwrap_or_else(|e| panic!("{path}: {e:#}"))
}

fn sim_events(config: &Config, all: CpuSet, until_ms: u64) -> Vec<Timed> {
    let opts = SimOptions {
        all_cpus: all,
        until_ms,
        seed: 5489,
    };
    let r = demos::simulate(config, &opts).unwrap();
    events_from_sim(config, &opts, &r).unwrap()
}

/// `"T label"` for an event: `init`, `ws0`/`sc0`/`be0`/`we0` (window 0 start, SC start, BE
/// start, end), `+S:cmd` / `-S:cmd` (a process of slice S starts / ends).
fn label(config: &Config, t: &Timed) -> String {
    let cmd = |p: &scx_tt::demos::power::ProcId| {
        config.partitions[p.partition].processes[p.process]
            .cmd
            .clone()
    };
    let e = match &t.event {
        Event::Init => "init".to_string(),
        Event::WindowStart { window } => format!("ws{window}"),
        Event::ScStart { window } => format!("sc{window}"),
        Event::BeStart { window } => format!("be{window}"),
        Event::WindowEnd { window } => format!("we{window}"),
        Event::ProcessStart { slice, proc, .. } => format!("+{slice}:{}", cmd(proc)),
        Event::ProcessEnd { slice, proc, .. } => format!("-{slice}:{}", cmd(proc)),
    };
    format!("{} {e}", t.time_ms)
}

/// One applied event: its label, the writes the driver made, the files that changed in the
/// tree (path → new text), and the engine's frequency of CPUs `0..ncpus` after it.
struct Step {
    label: String,
    writes: Vec<Write>,
    changed: BTreeMap<String, String>,
    cpu_khz: Vec<Option<u32>>,
}

fn run(
    tree: &Tree,
    config: &Config,
    events: &[Timed],
    policy: PowerPolicy,
    all: CpuSet,
    ncpus: u32,
) -> Vec<Step> {
    let original = tree.snapshot();
    let driver = PowerDriver::take_control(Journal::new(tree.root()), None, policy, config, all)
        .unwrap()
        .expect("an active policy takes control");
    let mut steps = Vec::new();
    let mut driver = driver;
    let mut before = tree.snapshot();
    // take-over: every policy under `userspace`, its limits the hardware's
    for (k, v) in &before {
        if k.ends_with("/scaling_governor") {
            assert_eq!(v.trim(), "userspace", "{k}");
        }
    }
    for t in events {
        let writes = driver.apply(&t.event).unwrap();
        let after = tree.snapshot();
        let changed = after
            .iter()
            .filter(|(k, v)| before.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.trim().to_string()))
            .collect();
        steps.push(Step {
            label: label(config, t),
            writes,
            changed,
            cpu_khz: (0..ncpus).map(|c| driver.engine().cpu_khz(c)).collect(),
        });
        before = after;
    }
    assert_eq!(driver.finish(), 0, "every file restored");
    let restored = tree.snapshot();
    assert_eq!(restored, original, "the tree is back byte for byte");
    steps
}

/// The example's events over one major frame (hand-derived from docs/demos.md's schedule:
/// SC2 ends last at 175, so BE1 starts then; window 2's SC3 ends at 240).
const EXAMPLE_EVENTS: &[&str] = &[
    "0 init",
    "0 ws0",
    "0 sc0",
    "0 +0:./sc1-control",
    "0 +1:./sc2-vision",
    "100 -0:./sc1-control",
    "100 +0:./sc1-log",
    "150 -0:./sc1-log",
    "175 -1:./sc2-vision",
    "175 be0",
    "175 +0:./be1-batch",
    "200 we0",
    "200 -0:./be1-batch",
    "200 ws1",
    "200 sc1",
    "200 +0:./sc3-monitor",
    "240 -0:./sc3-monitor",
    "240 be1",
    "240 +0:./be1-batch",
    "265 -0:./be1-batch",
    "300 we1",
    "300 ws0",
    "300 sc0",
    "300 +0:./sc1-control",
    "300 +1:./sc2-vision",
];

/// The reference: the frequency of every domain after each event, from the definitions
/// (seed §4.8: minbe = SC at the highest P-state, BE at the lowest, highest at set-up; DEmOS's
/// `low`/`high`: lowest/highest at set-up, nothing else). `domains`: (id, min, max).
fn reference(policy: PowerPolicy, labels: &[&str], domains: &[(u32, u32, u32)]) -> Vec<Vec<u32>> {
    let mut cur: Vec<u32> = vec![0; domains.len()];
    let mut out = Vec::new();
    for l in labels {
        let what = l.split(' ').nth(1).unwrap();
        let set = match (policy, what) {
            (PowerPolicy::MinBe | PowerPolicy::High, "init") => Some(true),
            (PowerPolicy::Low, "init") => Some(false),
            (PowerPolicy::MinBe, w) if w.starts_with("sc") => Some(true),
            (PowerPolicy::MinBe, w) if w.starts_with("be") => Some(false),
            _ => None,
        };
        if let Some(max) = set {
            for (i, d) in domains.iter().enumerate() {
                cur[i] = if max { d.2 } else { d.1 };
            }
        }
        out.push(cur.clone());
    }
    out
}

fn check_against_reference(
    tree: &Tree,
    policy: PowerPolicy,
    domains: &[(u32, u32, u32)],
    cpu_domain: &[u32],
) -> Vec<Step> {
    let config = load("schedules/demos-example.yaml");
    let all = CpuSet::first_n(cpu_domain.len() as u32);
    let events = sim_events(&config, all, 300);
    let labels: Vec<String> = events.iter().map(|t| label(&config, t)).collect();
    assert_eq!(labels, EXAMPLE_EVENTS);
    let steps = run(tree, &config, &events, policy, all, cpu_domain.len() as u32);
    let want = reference(policy, EXAMPLE_EVENTS, domains);
    let mut prev: Vec<u32> = vec![0; domains.len()];
    for (step, want) in steps.iter().zip(&want) {
        // each CPU at its domain's frequency
        let cpus: Vec<Option<u32>> = cpu_domain
            .iter()
            .map(|d| Some(want[domains.iter().position(|x| x.0 == *d).unwrap()]))
            .collect();
        assert_eq!(step.cpu_khz, cpus, "{} ({policy})", step.label);
        // exactly the changed domains are written, and only their scaling_setspeed changes
        let changed: BTreeMap<String, String> = domains
            .iter()
            .zip(want.iter().zip(&prev))
            .filter(|(_, (w, p))| w != p)
            .map(|(d, (w, _))| (setspeed(d.0), w.to_string()))
            .collect();
        assert_eq!(step.changed, changed, "{} ({policy})", step.label);
        let writes: Vec<Write> = domains
            .iter()
            .zip(want.iter().zip(&prev))
            .filter(|(_, (w, p))| w != p)
            .map(|(d, (w, _))| Write {
                domain: d.0,
                khz: *w,
            })
            .collect();
        assert_eq!(step.writes, writes, "{} ({policy})", step.label);
        prev = want.clone();
    }
    steps
}

/// Times and kHz of the writes to one domain.
fn writes_of(steps: &[Step], domain: u32) -> Vec<(String, u32)> {
    steps
        .iter()
        .flat_map(|s| {
            s.writes
                .iter()
                .filter(|w| w.domain == domain)
                .map(|w| (s.label.clone(), w.khz))
        })
        .collect()
}

const IMX8: &[(u32, u32, u32)] = &[(0, 600_000, 1_200_000), (4, 600_000, 1_596_000)];
const IMX8_CPUS: &[u32] = &[0, 0, 0, 0, 4, 4];

#[test]
fn minbe_runs_sc_at_the_highest_and_be_at_the_lowest_frequency() {
    let tree = imx8_tree("minbe");
    let steps = check_against_reference(&tree, PowerPolicy::MinBe, IMX8, IMX8_CPUS);
    // spelled out: highest at set-up, lowest when BE starts, highest again at each window
    assert_eq!(
        writes_of(&steps, 0),
        [
            ("0 init".into(), 1_200_000),
            ("175 be0".into(), 600_000),
            ("200 sc1".into(), 1_200_000),
            ("240 be1".into(), 600_000),
            ("300 sc0".into(), 1_200_000),
        ]
    );
    assert_eq!(
        writes_of(&steps, 4),
        [
            ("0 init".into(), 1_596_000),
            ("175 be0".into(), 600_000),
            ("200 sc1".into(), 1_596_000),
            ("240 be1".into(), 600_000),
            ("300 sc0".into(), 1_596_000),
        ]
    );
}

#[test]
fn low_and_high_set_every_cpu_once() {
    for (policy, a53, a72) in [
        (PowerPolicy::Low, 600_000, 600_000),
        (PowerPolicy::High, 1_200_000, 1_596_000),
    ] {
        let tree = imx8_tree(policy.name());
        let steps = check_against_reference(&tree, policy, IMX8, IMX8_CPUS);
        assert_eq!(writes_of(&steps, 0), [("0 init".into(), a53)]);
        assert_eq!(writes_of(&steps, 4), [("0 init".into(), a72)]);
        assert!(steps[1..].iter().all(|s| s.changed.is_empty()));
    }
}

#[test]
fn policies_on_an_intel_range_driver_restore_its_active_mode() {
    let domains: Vec<(u32, u32, u32)> = (0..4).map(|i| (i, 1_000_000, 2_300_000)).collect();
    for policy in [PowerPolicy::MinBe, PowerPolicy::Low, PowerPolicy::High] {
        let tree = xeon_tree(policy.name());
        let steps = check_against_reference(&tree, policy, &domains, &[0, 1, 2, 3]);
        // CPU 3 runs no slice but DEmOS drives every cpufreq policy
        let want = if policy == PowerPolicy::Low {
            1_000_000
        } else {
            2_300_000
        };
        assert_eq!(writes_of(&steps, 3)[0], ("0 init".into(), want));
        // (run() checked that intel_pstate/status is `active` again)
    }
}

#[test]
fn per_process_sets_each_processs_frequency_on_its_cluster() {
    let config = load("tests/demos_power/per-process.yaml");
    let all = CpuSet::first_n(6);
    let events = sim_events(&config, all, 4500);
    let tree = imx8_tree("per_process");
    let steps = run(&tree, &config, &events, PowerPolicy::PerProcess, all, 6);
    // window 0: control (1200) on CPU 0 until 500, then batch1 (600) on CPU 4 to 1500;
    // window 1 (BE only): batch2 (1296), batch3 (none: unchanged), batch1 (600) cut at 3000;
    // window 0 again: control (1200, unchanged), at 3500 batch1 resumes (700 ms left), then
    // batch2 (1296) at 4200
    assert_eq!(writes_of(&steps, 0), [("0 +0:./control".into(), 1_200_000)]);
    assert_eq!(
        writes_of(&steps, 4),
        [
            ("500 +1:./batch1".into(), 600_000),
            ("1500 +0:./batch2".into(), 1_296_000),
            ("2700 +0:./batch1".into(), 600_000),
            ("4200 +1:./batch2".into(), 1_296_000),
        ]
    );
    let at = |l: &str| steps.iter().find(|s| s.label == l).unwrap();
    assert_eq!(
        at("2500 +0:./batch3").cpu_khz,
        [1_200_000, 1_200_000, 1_200_000, 1_200_000, 1_296_000, 1_296_000].map(Some)
    );
    assert_eq!(
        at("3500 +1:./batch1").changed,
        BTreeMap::new(),
        "600 MHz already"
    );
    assert_eq!(
        at("4200 +1:./batch2").changed,
        BTreeMap::from([(setspeed(4), "1296000".to_string())])
    );
}

#[test]
fn per_slice_sets_each_windows_slice_frequencies_at_its_start() {
    let config = load("tests/demos_power/per-slice.yaml");
    let all = CpuSet::first_n(6);
    let events = sim_events(&config, all, 3000);
    let tree = imx8_tree("per_slice");
    let steps = run(&tree, &config, &events, PowerPolicy::PerSlice, all, 6);
    assert_eq!(
        writes_of(&steps, 0),
        [
            ("0 ws0".into(), 1_200_000),
            ("1500 ws1".into(), 896_000),
            ("3000 ws0".into(), 1_200_000)
        ]
    );
    assert_eq!(
        writes_of(&steps, 4),
        [
            ("0 ws0".into(), 600_000),
            ("1500 ws1".into(), 1_296_000),
            ("3000 ws0".into(), 600_000)
        ]
    );
}

#[test]
fn conflicting_process_frequencies_stop_the_run_and_the_tree_is_restored() {
    let config = load("tests/demos_power/conflict.yaml");
    let all = CpuSet::first_n(6);
    let events = sim_events(&config, all, 100);
    let tree = imx8_tree("conflict");
    let original = tree.snapshot();
    let mut driver = PowerDriver::take_control(
        Journal::new(tree.root()),
        None,
        PowerPolicy::PerProcess,
        &config,
        all,
    )
    .unwrap()
    .unwrap();
    let err = events
        .iter()
        .find_map(|t| driver.apply(&t.event).err())
        .expect("a conflict");
    assert!(
        err.0
            .contains("require different frequencies on the CPU(s) 0-3")
            && err.0.contains("'896 MHz', '1200 MHz'"),
        "{err}"
    );
    drop(driver);
    assert_eq!(tree.snapshot(), original);
}

#[test]
fn a_frequency_the_cluster_lacks_is_refused_before_taking_control() {
    let yaml =
        "{windows: [{length: 10, cpu: 4, sc_processes: [{cmd: a, budget: 5, frequency: 1200}]}]}";
    let config = Config::from_yaml(yaml, Source::Inline).unwrap();
    let tree = imx8_tree("refused");
    let original = tree.snapshot();
    let err = PowerDriver::take_control(
        Journal::new(tree.root()),
        None,
        PowerPolicy::PerProcess,
        &config,
        CpuSet::first_n(6),
    )
    .unwrap_err();
    assert_eq!(
        err.0,
        "windows[0].sc_processes[0].frequency: 1200 MHz is not a frequency of cpufreq policy4 \
         (available: 600, 1056, 1296, 1596 MHz)"
    );
    assert_eq!(tree.snapshot(), original, "restored on error");
    // `none` leaves cpufreq alone
    let none = PowerDriver::take_control(
        Journal::new(tree.root()),
        None,
        PowerPolicy::parse("none").unwrap(),
        &config,
        CpuSet::first_n(6),
    )
    .unwrap();
    assert!(none.is_none());
    assert_eq!(tree.snapshot(), original);
}

#[test]
fn an_unknown_policy_names_the_value_and_the_valid_ones() {
    let e = PowerPolicy::parse("maxbe").unwrap_err().to_string();
    assert_eq!(
        e,
        "power policy \"maxbe\": unknown power policy 'maxbe'; valid policies: none, minbe, \
         low, high, per_process, per_slice (aliases: imx8_per_process, imx8_per_slice)"
    );
}

/// The event rebuild checks itself against the simulator's log (every line where its slice's
/// previous run ended): it fits every golden schedule of DEmOS's test suite, one process start
/// per log line.
#[test]
fn events_fit_every_golden_schedule() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/demos");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let config = Config::from_yaml(&text, Source::Inline).unwrap();
        let seed = if p.to_string_lossy().contains("jitter") {
            2
        } else {
            5489
        };
        for until in [10, 20, 57] {
            let opts = SimOptions {
                all_cpus: CpuSet::first_n(4),
                until_ms: until,
                seed,
            };
            let r = demos::simulate(&config, &opts).unwrap();
            let evs = events_from_sim(&config, &opts, &r)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let starts = evs
                .iter()
                .filter(|t| matches!(t.event, Event::ProcessStart { .. }))
                .count();
            assert_eq!(starts, r.log.len(), "{}", p.display());
            // and minbe on them never fails
            let mut engine = scx_tt::demos::power::PowerEngine::new(
                PowerPolicy::MinBe,
                Vec::new(),
                &config,
                opts.all_cpus,
            )
            .unwrap();
            for t in &evs {
                engine.on_event(&t.event).unwrap();
            }
        }
        n += 1;
    }
    assert!(n >= 9, "{n} golden configs");
}

/// The simulator's own events (`simulate_events`, a hook in the simulator) against the
/// independent rebuild from its log (`events_from_sim`): the same events at the same times, on
/// every golden schedule, the worked example and the power fixtures, over several time limits.
/// Within one instant both follow DEmOS's order; the rebuild sorts by (window events, SC, BE),
/// the hook follows the scheduler, so the instants are compared as sorted lists.
#[test]
fn the_simulator_hook_emits_the_events_the_log_implies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/demos");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("yaml"))
        .collect();
    files.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demos-example.yaml"));
    files.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/demos_power/per-process.yaml"));
    let mut compared = 0;
    for p in &files {
        let config = Config::from_file(p).unwrap();
        let seed = if p.to_string_lossy().contains("jitter") {
            2
        } else {
            5489
        };
        for until in [10, 20, 57, 300, 1000] {
            let opts = SimOptions {
                all_cpus: CpuSet::first_n(8),
                until_ms: until,
                seed,
            };
            let r = demos::simulate_events(&config, &opts).unwrap();
            let rebuilt = events_from_sim(&config, &opts, &r).unwrap();
            let key = |t: &Timed| (t.time_ms, format!("{:?}", t.event));
            let group = |v: &[Timed]| -> BTreeMap<u64, Vec<String>> {
                let mut m: BTreeMap<u64, Vec<String>> = BTreeMap::new();
                for t in v {
                    m.entry(t.time_ms).or_default().push(key(t).1);
                }
                m.values_mut().for_each(|v| v.sort());
                m
            };
            let hook: Vec<Timed> = r.events.iter().map(|(_, t)| t.clone()).collect();
            assert_eq!(
                group(&hook),
                group(&rebuilt),
                "{} until {until}",
                p.display()
            );
            // times never go back, and each event's log position is the lines before it
            assert!(hook.windows(2).all(|w| w[0].time_ms <= w[1].time_ms));
            assert!(r
                .events
                .iter()
                .all(|(at, t)| r.log[..*at].iter().all(|l| l.time_ms <= t.time_ms)));
            compared += hook.len();
        }
    }
    assert!(compared > 500, "{compared} events compared");
}

/// `simulate --demos -m -M -p minbe --cpufreq-root`: the messages and the driver's writes on
/// stdout between the schedule log's lines, against the worked example's schedule derived by
/// hand (docs/demos.md): set-up at the highest frequencies; BE1 starts at 175 ms (after SC2's
/// 175 ms) and 240 ms (after SC3's 40 ms) at the lowest; window 1 and the next frame's SC at the
/// highest again; only changes are written. The tree is back byte for byte afterwards.
#[test]
fn simulate_prints_messages_and_applies_minbe_to_a_fake_tree() {
    let tree = imx8_tree("cli");
    let before = tree.snapshot();
    let out = common::scx_tt()
        .args(["simulate", "--demos"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demos-example.yaml"))
        .args(["--frames", "1", "--demos-cpus", "0-5", "-m", "W", "-M", "F"])
        .args(["-p", "minbe", "--cpufreq-root"])
        .arg(&tree.dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let hi = |t: u32, why: &str| {
        vec![
            format!("{t:6}: cpufreq policy0 1200000 kHz ({why})"),
            format!("{t:6}: cpufreq policy4 1596000 kHz ({why})"),
        ]
    };
    let lo = |t: u32, why: &str| {
        vec![
            format!("{t:6}: cpufreq policy0 600000 kHz ({why})"),
            format!("{t:6}: cpufreq policy4 600000 kHz ({why})"),
        ]
    };
    let log = |t: u32, cpus: u32, cmd: &str, budget: u32| {
        vec![format!("{t:6}: cpus={cpus} cmd='./{cmd}' budget={budget}")]
    };
    let want: Vec<String> = [
        hi(0, "set-up"),
        vec!["F".into(), "W".into()],
        log(0, 1, "sc1-control", 100),
        log(0, 2, "sc2-vision", 175),
        log(100, 1, "sc1-log", 50),
        lo(175, "BE start, window #0"),
        log(175, 1, "be1-batch", 25),
        vec!["W".into()],
        hi(200, "SC start, window #1"),
        log(200, 1, "sc3-monitor", 40),
        lo(240, "BE start, window #1"),
        log(240, 1, "be1-batch", 25),
        vec!["F".into(), "W".into()],
        hi(300, "SC start, window #0"),
        log(300, 1, "sc1-control", 100),
        log(300, 2, "sc2-vision", 175),
    ]
    .concat();
    let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(got, want, "{stderr}");
    assert_eq!(
        tree.snapshot(),
        before,
        "the tree is restored byte for byte"
    );
    // a policy DEmOS does not have: refused, nothing written
    let out = common::scx_tt()
        .args(["simulate", "--demos"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demos-example.yaml"))
        .args(["-p", "maxbe", "--cpufreq-root"])
        .arg(&tree.dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown power policy 'maxbe'"));
    assert_eq!(tree.snapshot(), before);
}

/// The kernel run's `--demos` refusals come before anything changes (no root or sched_ext
/// needed to see them): a plan that is not the configuration's import, a cpufreq policy
/// without the `userspace` governor, an unknown policy; the tree is untouched.
#[test]
fn the_kernel_run_refuses_before_changing_anything() {
    let tree = imx8_tree("run");
    let before = tree.snapshot();
    let dir = Tree::new("runplan");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let vm_cfg = repo.join("tests/vm/scenarios/demos/demos.yaml");
    let import = |cfg: &Path, out: &Path| {
        let st = common::scx_tt()
            .args(["plan", "import", "--demos"])
            .arg(cfg)
            .args(["--all-cpus", "1", "--out"])
            .arg(out)
            .output()
            .unwrap();
        assert!(st.status.success());
    };
    let plan = dir.dir.join("plan.json");
    import(&vm_cfg, &plan);
    let other = dir.dir.join("other.json");
    import(
        &repo.join("tests/demos/01-one-sc-budget-below-window.yaml"),
        &other,
    );
    let run = |plan: &Path, extra: &[&str]| {
        let o = common::scx_tt()
            .arg("--table")
            .arg(plan)
            .arg("--demos")
            .arg(&vm_cfg)
            .args(extra)
            .arg("--sysfs-root")
            .arg(&tree.dir)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (rc, err) = run(&other, &["-m", "W"]);
    assert_eq!(rc, Some(2), "{err}");
    assert!(err.contains("the plan is not its import"), "{err}");
    let (rc, err) = run(&plan, &["-p", "maxbe"]);
    assert_eq!(rc, Some(2), "{err}");
    assert!(err.contains("unknown power policy 'maxbe'"), "{err}");
    // the i.MX8 tree offers userspace: take it away from policy4
    let govs = format!("{CPU}/cpufreq/policy4/scaling_available_governors");
    tree.put(&govs, "ondemand performance schedutil");
    let before_nouser = tree.snapshot();
    let (rc, err) = run(&plan, &["-p", "minbe"]);
    assert_eq!(rc, Some(2), "{err}");
    assert!(
        err.contains("cpufreq policy4 has no userspace governor"),
        "{err}"
    );
    assert_eq!(tree.snapshot(), before_nouser);
    assert_ne!(before_nouser, before);
}
