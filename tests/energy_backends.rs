//! The OS backends against fake sysfs trees laid out like real kernels' (built in temporary
//! directories): every write, and the exact restore on normal exit, on error, on panic and on
//! SIGTERM (a child process re-running this test binary).

mod common;

use scx_tt::energy::cpufreq::{
    discover, plan_slot, CpufreqBackend, CpufreqError, FakeCpufreq, FreqController, Frequencies,
    Policy, SlotChange, SysfsCpufreq,
};
use scx_tt::energy::estimate::{EstimateOptions, IdleGovernor, Unlisted};
use scx_tt::energy::idle::{limit_for_period, read_states, IdleBackend, LatencyLimit, PmQosIdle};
use scx_tt::energy::meter::{wrapping_delta_uj, EnergyLabel, EnergyMeter, MeterError, RaplMeter};
use scx_tt::energy::model;
use scx_tt::energy::sysfs::{Journal, Root};
use scx_tt::trace::{SlotKind, SlotRecord};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;

/// A temporary directory removed on drop.
struct TempTree {
    dir: PathBuf,
}

impl TempTree {
    fn new(tag: &str) -> Self {
        Self {
            dir: common::fresh_temp_dir("energy", tag),
        }
    }

    fn root(&self) -> Root {
        Root::new(&self.dir)
    }

    fn put(&self, abs: &str, text: &str) {
        let p = self.root().path(abs);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, format!("{text}\n")).expect("write");
    }

    fn get(&self, abs: &str) -> String {
        self.root().read(abs).expect("read")
    }

    /// Every file under the tree with its contents.
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
            for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    // sysfs shows every value with a trailing newline, whatever was written.
                    let text = std::fs::read_to_string(&p).expect("read");
                    out.insert(p.clone(), text.trim_end().to_string());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.dir, &mut out);
        out
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const CPU: &str = "/sys/devices/system/cpu";

/// A Cascade Lake server as intel_pstate leaves it in passive mode after boot... except that the
/// status starts `active`, as on a stock kernel: 4 CPUs, one policy each, no frequency list.
fn xeon_tree(tag: &str) -> TempTree {
    let t = TempTree::new(tag);
    t.put(&format!("{CPU}/intel_pstate/status"), "active");
    for cpu in 0..4 {
        let p = format!("{CPU}/cpufreq/policy{cpu}");
        t.put(&format!("{p}/affected_cpus"), &cpu.to_string());
        t.put(&format!("{p}/related_cpus"), &cpu.to_string());
        t.put(&format!("{p}/cpuinfo_min_freq"), "1000000");
        t.put(&format!("{p}/cpuinfo_max_freq"), "2300000");
        t.put(&format!("{p}/cpuinfo_transition_latency"), "20000");
        t.put(&format!("{p}/scaling_min_freq"), "1200000");
        t.put(&format!("{p}/scaling_max_freq"), "2000000");
        t.put(&format!("{p}/scaling_driver"), "intel_cpufreq");
        t.put(&format!("{p}/scaling_governor"), "schedutil");
        t.put(
            &format!("{p}/scaling_available_governors"),
            "conservative ondemand userspace powersave performance schedutil",
        );
        t.put(&format!("{p}/scaling_setspeed"), "<unsupported>");
        t.put(&format!("{p}/scaling_cur_freq"), "1200000");
        let d = format!("{CPU}/cpu{cpu}");
        t.put(&format!("{d}/power/pm_qos_resume_latency_us"), "0");
        // intel_idle's skx_cstates.
        for (k, (name, lat, res)) in [
            ("POLL", 0, 0),
            ("C1", 2, 2),
            ("C1E", 10, 20),
            ("C6", 133, 600),
        ]
        .into_iter()
        .enumerate()
        {
            let s = format!("{d}/cpuidle/state{k}");
            t.put(&format!("{s}/name"), name);
            t.put(&format!("{s}/latency"), &lat.to_string());
            t.put(&format!("{s}/residency"), &res.to_string());
            t.put(&format!("{s}/disable"), "0");
        }
    }
    t.put("/sys/class/powercap/intel-rapl:0/name", "package-0");
    t.put("/sys/class/powercap/intel-rapl:0/energy_uj", "1000000");
    t.put(
        "/sys/class/powercap/intel-rapl:0/max_energy_range_uj",
        "262143328850",
    );
    t.put("/sys/class/powercap/intel-rapl:0:0/name", "core");
    t.put("/sys/class/powercap/intel-rapl:0:0/energy_uj", "500000");
    t.put(
        "/sys/class/powercap/intel-rapl:0:0/max_energy_range_uj",
        "262143328850",
    );
    t
}

/// A big.LITTLE board (cpufreq-dt): one policy per cluster, explicit frequency lists.
fn big_little_tree(tag: &str) -> TempTree {
    let t = TempTree::new(tag);
    for (first, freqs) in [
        (
            0,
            "408000 600000 816000 1008000 1200000 1416000 1608000 1800000",
        ),
        (4, "408000 816000 1200000 1608000 2016000 2400000"),
    ] {
        let p = format!("{CPU}/cpufreq/policy{first}");
        let cpus = (first..first + 4)
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        t.put(&format!("{p}/affected_cpus"), &cpus);
        t.put(&format!("{p}/related_cpus"), &cpus);
        t.put(&format!("{p}/scaling_available_frequencies"), freqs);
        t.put(&format!("{p}/cpuinfo_min_freq"), "408000");
        t.put(
            &format!("{p}/cpuinfo_max_freq"),
            freqs.rsplit(' ').next().expect("max"),
        );
        t.put(&format!("{p}/scaling_min_freq"), "408000");
        t.put(
            &format!("{p}/scaling_max_freq"),
            freqs.rsplit(' ').next().expect("max"),
        );
        t.put(&format!("{p}/scaling_driver"), "cpufreq-dt");
        t.put(&format!("{p}/scaling_governor"), "schedutil");
        t.put(
            &format!("{p}/scaling_available_governors"),
            "userspace schedutil performance",
        );
        t.put(&format!("{p}/scaling_setspeed"), "<unsupported>");
    }
    t
}

#[test]
fn discovers_range_policies_and_frequency_lists() {
    let x = xeon_tree("disc_x");
    let ps = discover(&x.root()).expect("discover");
    assert_eq!(ps.len(), 4);
    assert_eq!(ps[2].affected_cpus, vec![2]);
    assert_eq!(
        ps[2].freqs,
        Frequencies::Range {
            min: 1_000_000,
            max: 2_300_000
        }
    );
    assert_eq!(ps[2].driver, "intel_cpufreq");

    let b = big_little_tree("disc_b");
    let ps = discover(&b.root()).expect("discover");
    assert_eq!(ps.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0, 4]);
    assert_eq!(ps[1].affected_cpus, vec![4, 5, 6, 7]);
    assert_eq!(ps[1].max_khz(), 2_400_000);
    // 0.5 of 2.4 GHz = 1.2 GHz exactly; 0.51 needs the next entry, 1.608 GHz.
    assert_eq!(ps[1].khz_for(0.5), 1_200_000);
    assert_eq!(ps[1].khz_for(0.51), 1_608_000);
    // Range: ⌈0.5 · 2.3 GHz⌉, and clamped to the minimum.
    let x = discover(&xeon_tree("disc_x2").root()).expect("discover");
    assert_eq!(x[0].khz_for(0.5), 1_150_000);
    assert_eq!(x[0].khz_for(0.1), 1_000_000);
}

#[test]
fn no_cpufreq_is_a_clear_error() {
    let t = TempTree::new("nocpufreq");
    t.put(&format!("{CPU}/cpu0/power/pm_qos_resume_latency_us"), "0");
    let err = discover(&t.root()).expect_err("no policies");
    assert!(matches!(err, CpufreqError::NoCpufreq(_)));
    assert!(err.to_string().contains("run without DVFS"));
}

#[test]
fn take_control_writes_passive_limits_and_userspace_then_restores_exactly() {
    let t = xeon_tree("ctl");
    let before = t.snapshot();
    {
        let mut cf = SysfsCpufreq::take_control(t.root()).expect("take control");
        assert_eq!(t.get(&format!("{CPU}/intel_pstate/status")), "passive");
        for cpu in 0..4 {
            let p = format!("{CPU}/cpufreq/policy{cpu}");
            assert_eq!(t.get(&format!("{p}/scaling_governor")), "userspace");
            assert_eq!(t.get(&format!("{p}/scaling_min_freq")), "1000000");
            assert_eq!(t.get(&format!("{p}/scaling_max_freq")), "2300000");
        }
        cf.set_khz(3, 1_400_000).expect("set");
        assert_eq!(
            t.get(&format!("{CPU}/cpufreq/policy3/scaling_setspeed")),
            "1400000"
        );
        assert!(matches!(
            cf.set_khz(9, 1),
            Err(CpufreqError::UnknownPolicy(9))
        ));
    }
    // scaling_setspeed is journaled too (with what it showed before the governor changed) and
    // restored before the governor: a static fake gets its "<unsupported>" back; a kernel
    // refuses that write under userspace and shows it again once the governor is restored.
    assert_eq!(t.snapshot(), before);
}

#[test]
fn restore_is_idempotent_and_drop_after_restore_does_nothing() {
    let t = xeon_tree("idem");
    let before = t.snapshot();
    let mut cf = SysfsCpufreq::take_control(t.root()).expect("take control");
    assert_eq!(cf.restore(), 0);
    assert_eq!(t.snapshot(), before);
    // Someone else changes the governor after our restore: a second restore or the drop must
    // not write our stale originals over it.
    t.put(
        &format!("{CPU}/cpufreq/policy0/scaling_governor"),
        "performance",
    );
    assert_eq!(cf.restore(), 0);
    drop(cf);
    assert_eq!(
        t.get(&format!("{CPU}/cpufreq/policy0/scaling_governor")),
        "performance"
    );
}

#[test]
fn missing_userspace_governor_fails_and_restores_the_driver_mode() {
    let t = xeon_tree("nogov");
    for cpu in 0..4 {
        t.put(
            &format!("{CPU}/cpufreq/policy{cpu}/scaling_available_governors"),
            "performance powersave",
        );
    }
    let before = t.snapshot();
    let err = SysfsCpufreq::take_control(t.root()).expect_err("no userspace governor");
    assert!(matches!(
        err,
        CpufreqError::NoUserspaceGovernor { policy: 0, .. }
    ));
    assert!(err.to_string().contains("performance powersave"));
    // intel_pstate was switched to passive before the check; the error path put it back.
    assert_eq!(t.snapshot(), before);
}

#[test]
fn a_failed_write_midway_restores_what_was_already_changed() {
    let t = xeon_tree("midway");
    // policy2's governor attribute cannot be read or written (a directory): policies 0 and 1
    // and the driver mode are already changed when it fails.
    let gov = t
        .root()
        .path(format!("{CPU}/cpufreq/policy2/scaling_governor"));
    std::fs::remove_file(&gov).expect("rm");
    let before = t.snapshot();
    std::fs::create_dir(&gov).expect("mkdir");
    let err = SysfsCpufreq::take_control(t.root()).expect_err("policy2 unwritable");
    assert!(
        err.to_string().contains("policy2/scaling_governor"),
        "{err}"
    );
    std::fs::remove_dir(&gov).expect("rmdir");
    assert_eq!(t.snapshot(), before);
}

#[test]
fn journal_logs_and_returns_restore_failures_without_panicking() {
    let t = xeon_tree("jfail");
    let path = format!("{CPU}/cpu1/power/pm_qos_resume_latency_us");
    let mut j = Journal::new(t.root());
    j.write(&path, "133").expect("write");
    j.write(format!("{CPU}/cpu0/power/pm_qos_resume_latency_us"), "n/a")
        .expect("write");
    std::fs::remove_file(t.root().path(&path)).expect("rm");
    let failures = j.restore();
    assert_eq!(failures.len(), 1);
    assert!(failures[0]
        .path
        .ends_with("cpu1/power/pm_qos_resume_latency_us"));
    assert_eq!(failures[0].original, "0\n", "the exact bytes before");
    // The other file was still restored.
    assert_eq!(
        t.get(&format!("{CPU}/cpu0/power/pm_qos_resume_latency_us")),
        "0"
    );
    assert!(j.restore().is_empty());
}

fn range_policy(id: u32, cpus: &[u32]) -> Policy {
    Policy {
        id,
        affected_cpus: cpus.to_vec(),
        related_cpus: cpus.to_vec(),
        freqs: Frequencies::List(vec![1_000_000, 1_500_000, 2_000_000]),
        driver: "fake".into(),
        governors: vec!["userspace".into()],
    }
}

#[test]
fn shared_policy_takes_the_highest_frequency_any_cpu_needs() {
    let ps = [range_policy(0, &[0, 1]), range_policy(2, &[2])];
    // CPU 0 needs 0.5 (1.0 GHz), CPU 1 needs 0.7 (1.5 GHz): policy 0 gets 1.5 GHz.
    let c = plan_slot(&ps, &[None, None], &[(0, 0.5), (1, 0.7), (2, 0.3)]);
    assert_eq!(c.raise, vec![(0, 1_500_000), (2, 1_000_000)]);
    assert!(c.lower.is_empty());
    let c = plan_slot(
        &ps,
        &[Some(1_500_000), Some(1_000_000)],
        &[(0, 0.5), (2, 1.0)],
    );
    assert_eq!(
        c,
        SlotChange {
            raise: vec![(2, 2_000_000)],
            lower: vec![(0, 1_000_000)]
        }
    );
}

#[test]
fn raises_happen_before_the_boundary_and_lowers_after_it() {
    let fake = FakeCpufreq {
        policies: vec![range_policy(0, &[0]), range_policy(1, &[1])],
        calls: Vec::new(),
    };
    let mut fc = FreqController::new(fake);
    // Slot 0: both start unknown, so both are raised before the boundary.
    fc.before_boundary(&[(0, 1.0), (1, 0.5)]).expect("b0");
    assert_eq!(fc.backend().calls, vec![(0, 2_000_000), (1, 1_000_000)]);
    fc.after_boundary().expect("a0");
    assert_eq!(fc.backend().calls.len(), 2);
    // Slot 1: CPU 0 goes down (must wait for the boundary), CPU 1 goes up (must not).
    fc.before_boundary(&[(0, 0.5), (1, 1.0)]).expect("b1");
    assert_eq!(fc.backend().calls[2..], [(1, 2_000_000)]);
    assert_eq!(fc.current_khz(0), Some(2_000_000));
    fc.after_boundary().expect("a1");
    assert_eq!(fc.backend().calls[3..], [(0, 1_000_000)]);
    // Slot 2: nothing changes, nothing is written.
    fc.before_boundary(&[(0, 0.5), (1, 1.0)]).expect("b2");
    fc.after_boundary().expect("a2");
    assert_eq!(fc.backend().calls.len(), 4);
}

#[test]
fn controller_drives_the_real_backend_on_a_big_little_tree() {
    let t = big_little_tree("ctl_bl");
    let before = t.snapshot();
    {
        let cf = SysfsCpufreq::take_control(t.root()).expect("take control");
        let mut fc = FreqController::new(cf);
        // LITTLE CPUs 1 and 3 want 0.3 and 0.6 of 1.8 GHz (540, 1080 MHz): 1.2 GHz.
        fc.before_boundary(&[(1, 0.3), (3, 0.6), (6, 1.0)])
            .expect("slot");
        assert_eq!(
            t.get(&format!("{CPU}/cpufreq/policy0/scaling_setspeed")),
            "1200000"
        );
        assert_eq!(
            t.get(&format!("{CPU}/cpufreq/policy4/scaling_setspeed")),
            "2400000"
        );
    }
    assert_eq!(t.snapshot(), before);
}

#[test]
fn idle_limits_follow_the_idle_period_and_are_restored() {
    let t = xeon_tree("idle");
    let states = read_states(&t.root(), 1).expect("states");
    assert_eq!(states.len(), 4);
    assert_eq!(states[3].name, "C6");
    assert_eq!((states[3].latency_us, states[3].residency_us), (133, 600));
    // 3 ms idle: C6 pays off, allow its 133 µs exit latency. 100 µs: C1E (20 µs residency).
    assert_eq!(limit_for_period(&states, 3000), LatencyLimit::Us(133));
    assert_eq!(limit_for_period(&states, 100), LatencyLimit::Us(10));
    assert_eq!(limit_for_period(&states, 1), LatencyLimit::Poll);
    assert!(read_states(&t.root(), 99)
        .expect("no cpuidle dir")
        .is_empty());

    let before = t.snapshot();
    let path = |cpu: u32| format!("{CPU}/cpu{cpu}/power/pm_qos_resume_latency_us");
    {
        let mut q = PmQosIdle::new(t.root(), &[1, 2]).expect("pm_qos");
        q.set_limit(1, LatencyLimit::Us(133)).expect("set");
        q.set_limit(2, LatencyLimit::Poll).expect("set");
        assert_eq!(t.get(&path(1)), "133");
        assert_eq!(t.get(&path(2)), "n/a");
        q.set_limit(1, LatencyLimit::None).expect("set");
        assert_eq!(t.get(&path(1)), "0");
    }
    assert_eq!(t.snapshot(), before);
}

#[test]
fn missing_pm_qos_file_is_a_clear_error() {
    let t = xeon_tree("noqos");
    let err = PmQosIdle::new(t.root(), &[1, 7]).expect_err("cpu7 missing");
    assert!(
        err.to_string()
            .contains("cpu7/power/pm_qos_resume_latency_us"),
        "{err}"
    );
}

#[test]
fn rapl_counts_package_zones_only_and_handles_wrap_around() {
    let t = xeon_tree("rapl");
    let mut r = RaplMeter::open(&t.root()).expect("open").expect("has rapl");
    assert_eq!(r.zones().len(), 1, "the core subzone is inside the package");
    assert_eq!(r.zones()[0].name, "package-0");
    t.put("/sys/class/powercap/intel-rapl:0/energy_uj", "3500000");
    assert_eq!(r.poll().expect("poll"), 2_500_000);
    // Wrap: 262143328850 − 262143328800 = 50 before the wrap, then 50 after it.
    t.put("/sys/class/powercap/intel-rapl:0/energy_uj", "262143328800");
    let at = r.poll().expect("poll");
    t.put("/sys/class/powercap/intel-rapl:0/energy_uj", "50");
    assert_eq!(r.poll().expect("poll") - at, 100);
    assert_eq!(wrapping_delta_uj(10, 5, 20), 15);
}

#[test]
fn meter_measures_with_rapl_and_labels_estimates_without_it() {
    let o = EstimateOptions {
        slot_us: 1000,
        idle: IdleGovernor::Deepest,
        unlisted: Unlisted::Excluded,
    };
    let xeon =
        model::from_path(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models/xeon-gold-5218.json"))
            .expect("model");
    let t = xeon_tree("meter");
    let mut m = EnergyMeter::open(&t.root(), Some(xeon.clone()), o).expect("open");
    t.put("/sys/class/powercap/intel-rapl:0/energy_uj", "3000000");
    let r = m.read().expect("read");
    assert!((r.joules - 2.0).abs() < 1e-9);
    assert_eq!(
        r.label,
        EnergyLabel::Measured {
            zones: vec!["package-0".into()]
        }
    );
    assert_eq!(r.to_string(), "2.000 J (measured: RAPL package-0)");

    // The test VM: no powercap zones at all.
    let vm = TempTree::new("meter_vm");
    vm.put(&format!("{CPU}/cpu0/power/pm_qos_resume_latency_us"), "0");
    let mut m = EnergyMeter::open(&vm.root(), Some(xeon), o).expect("estimate");
    for slot in 0..1000 {
        let r: SlotRecord = serde_json::from_value(
            serde_json::json!({"slot": slot, "cpu": 1, "kind": SlotKind::Tt, "freq": 1.0}),
        )
        .expect("slot record");
        m.record(&r).expect("record");
    }
    // 1 s busy at 2.3 GHz (6.25 W) + uncore 25 W · 1 s.
    let r = m.read().expect("read");
    assert!((r.joules - 31.25).abs() < 0.01, "{}", r.joules);
    assert_eq!(r.to_string(), "31.250 J (estimate: model xeon-gold-5218)");
    assert!(matches!(
        EnergyMeter::open(&vm.root(), None, o),
        Err(MeterError::NoSource(_))
    ));
}

/// Child process for the SIGTERM test (run only when the parent sets the variable): takes over
/// cpufreq and pm_qos under the given root, says "ready", and returns when SIGTERM arrives.
#[test]
#[ignore = "child process of sigterm_restores_the_tree"]
fn energy_guard_child() {
    let Ok(dir) = std::env::var("SCX_TT_GUARD_ROOT") else {
        return;
    };
    let root = Root::new(dir);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)).expect("signal handler");
    let cf = match std::env::var("SCX_TT_GUARD_RUN_DIR") {
        Ok(run_dir) => SysfsCpufreq::take_control_of(
            Journal::persistent(root.clone(), Path::new(&run_dir), "cpufreq").expect("journal"),
            None,
        )
        .expect("take control"),
        Err(_) => SysfsCpufreq::take_control(root.clone()).expect("take control"),
    };
    let mut fc = FreqController::new(cf);
    fc.before_boundary(&[(0, 0.5), (1, 1.0)]).expect("set");
    let mut q = PmQosIdle::new(root, &[0, 1]).expect("pm_qos");
    q.set_limit(0, LatencyLimit::Us(133)).expect("limit");
    say("ready");
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    say("restoring");
}

/// Append a line to the file named by `SCX_TT_GUARD_LOG` (the harness captures a test's stdout).
fn say(line: &str) {
    use std::io::Write;
    let Ok(path) = std::env::var("SCX_TT_GUARD_LOG") else {
        return;
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("guard log");
    writeln!(f, "{line}").expect("write guard log");
}

/// Wait up to 60 s for `line` in the guard log.
fn wait_for(log: &Path, line: &str) -> bool {
    for _ in 0..6000 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l == line) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// Runs `energy_guard_child` in control of `t` (journaled under `run_dir` when given, else in
/// memory), logging to `log`; returns once it said "ready".
fn spawn_ready_child(t: &TempTree, log: &Path, run_dir: Option<&Path>) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "energy_guard_child",
        "--exact",
        "--ignored",
        "--test-threads=1",
    ])
    .env("SCX_TT_GUARD_ROOT", &t.dir)
    .env("SCX_TT_GUARD_LOG", log)
    .stdout(Stdio::null());
    if let Some(d) = run_dir {
        cmd.env("SCX_TT_GUARD_RUN_DIR", d);
    }
    let mut child = cmd.spawn().expect("spawn child");
    if !wait_for(log, "ready") {
        let _ = child.kill();
        panic!("child never became ready");
    }
    child
}

#[test]
fn sigterm_restores_the_tree() {
    let t = xeon_tree("sigterm");
    let before = t.snapshot();
    let before_exact = t.exact();
    let log_dir = TempTree::new("sigterm_log");
    let log = log_dir.dir.join("guard.log");
    let mut child = spawn_ready_child(&t, &log, None);
    assert_eq!(
        t.get(&format!("{CPU}/cpufreq/policy0/scaling_governor")),
        "userspace"
    );
    assert_eq!(
        t.get(&format!("{CPU}/cpufreq/policy0/scaling_setspeed")),
        "1150000"
    );
    assert_eq!(
        t.get(&format!("{CPU}/cpu0/power/pm_qos_resume_latency_us")),
        "133"
    );
    assert_eq!(t.get(&format!("{CPU}/intel_pstate/status")), "passive");
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert!(wait_for(&log, "restoring"), "child did not see SIGTERM");
    let status = child.wait().expect("wait");
    assert!(status.success(), "child exit {status:?}");
    assert_eq!(t.snapshot(), before, "setspeed too: it is journaled");
    assert_eq!(t.exact(), before_exact, "byte for byte");
}

/// Every file under the tree with its exact bytes.
impl TempTree {
    fn exact(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).expect("read"));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.dir, &mut out);
        out
    }
}

#[test]
fn sigkill_leaves_a_journal_that_scx_tt_restore_puts_back_byte_for_byte() {
    let t = xeon_tree("sigkill");
    let before = t.exact();
    let aux = TempTree::new("sigkill_aux");
    let log = aux.dir.join("guard.log");
    let run_dir = aux.dir.join("run");
    let mut child = spawn_ready_child(&t, &log, Some(&run_dir));
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert_eq!(
        t.get(&format!("{CPU}/cpufreq/policy0/scaling_governor")),
        "userspace",
        "SIGKILL restores nothing by itself"
    );
    let journal = run_dir.join("cpufreq.journal.json");
    assert!(journal.exists());
    let out = common::scx_tt()
        .args(["restore", "--run-dir"])
        .arg(&run_dir)
        .output()
        .expect("scx_tt restore");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // the pm_qos file is not in the cpufreq journal (the child's PmQosIdle journal was in
    // memory): put it back by hand before comparing, and check the rest is exact
    let qos = format!("{CPU}/cpu0/power/pm_qos_resume_latency_us");
    assert_eq!(t.get(&qos), "133");
    std::fs::write(t.root().path(&qos), "0\n").expect("qos back");
    assert_eq!(t.exact(), before, "byte for byte after scx_tt restore");
    assert!(
        stdout.contains("userspace") && stdout.contains("schedutil") && stdout.contains("restored"),
        "{stdout}"
    );
    assert!(!journal.exists(), "the journal is removed once restored");
    let again = common::scx_tt()
        .args(["restore", "--run-dir"])
        .arg(&run_dir)
        .output()
        .expect("scx_tt restore");
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to restore"));
}

#[test]
fn panic_while_in_control_restores_the_tree() {
    let t = xeon_tree("panic");
    let before = t.snapshot();
    let root = t.root();
    let res = std::panic::catch_unwind(move || {
        let _cf = SysfsCpufreq::take_control(root.clone()).expect("take control");
        let mut q = PmQosIdle::new(root, &[3]).expect("pm_qos");
        q.set_limit(3, LatencyLimit::Poll).expect("limit");
        panic!("planner bug");
    });
    assert!(res.is_err());
    assert_eq!(t.snapshot(), before);
}

#[test]
fn cpu_lists_parse_in_both_kernel_formats() {
    use scx_tt::energy::cpufreq::parse_cpus;
    assert_eq!(parse_cpus("0 1 2 3"), Some(vec![0, 1, 2, 3]));
    assert_eq!(parse_cpus("0-3,8"), Some(vec![0, 1, 2, 3, 8]));
    assert_eq!(parse_cpus(""), Some(vec![]));
    assert_eq!(parse_cpus("0-x"), None);
}
