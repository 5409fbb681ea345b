//! VM tests, issue 3 item 6 a), b), e): scx_tt enforces a plan while a busy loop outside the
//! plan runs all the time, first with a quiet housekeeping CPU, then with stress-ng and
//! cyclictest loading it. Asserts on scx_tt's summary JSON (BPF-side accounting) and prints
//! every figure, the per-slot timeline, the lateness histograms and cyclictest's latencies on
//! the housekeeping CPU (the outside workload next to ours).
//!
//! Each boot first runs scx_tt 3 s unmeasured (TCG translates new guest code paths on first use).
//! Two configurations (docs/vm-harness.md):
//!   - `-smp 2`, demo_one_cpu.json (this folder): the demo plan's tasks on one managed CPU
//!     (CPU 1; spin-c shortened to fit), housekeeping CPU 0. Timing bounds hold here because
//!     the guest has no more vCPUs than the 2-core hosts have cores:
//!       - every tt task gets >= 90 % of its planned slot time and at most 2 % of its run
//!         time falls outside its slots (the issue's bounds);
//!       - the housekeeping load lowers each tt task's delivery by at most 5 points;
//!   - `-smp 3`, schedules/demo.json itself (managed CPUs 1-2, housekeeping 0), as `make demo`
//!     runs it. 3 busy vCPUs on 2 host cores make slot ticks milliseconds late (the host
//!     deschedules vCPU threads), so scx_tt runs with a 2 ms guard band there and the bounds
//!     are at least 90 % delivered and at most 5 % outside (the issue's 2 % printed as
//!     met/missed per task).
//!
//! Both assert, exactly: be work never ran while the slot's tt task was runnable, and tasks
//! outside the plan never ran on a managed CPU (0 ns each); each managed CPU's slot timer ticked
//! 50-110 % of duration/slot times (a tick later than a whole slot skips slots under TCG) and
//! its lateness histogram counts every tick; scx_tt exited 0 by duration and left sched_ext
//! disabled. Run by `make test-vm`.

use crate::harness::{Checks, Summary, Vm, VmOutput, EVICT_NS};
use crate::witness;
use serde::Deserialize;
use std::collections::BTreeMap;

const DURATION_S: u64 = 10;
const MIN_DELIVERED_PCT: f64 = 90.0;
/// Bound on the share of run time outside the task's slots: the issue's 2 %. Outside time is
/// what an owner runs past the end of its run before it is stopped. The guard-band event
/// (B.2f in src/bpf/tt_sched.bpf.c) stops it guard_ns (calibrated at start by default: 0.5-1 ms
/// for 10 ms slots, docs/run-output.md "Start-up") before the boundary,
/// so only a timer later than the guard band leaks into the next slot; measured 0.01-0.97 % at
/// `-smp 2` even with a busy host (docs/vm-harness.md). Before the guard-band event, outside
/// time was the whole boundary-tick lateness, 1.0-3.3 %.
const MAX_OUTSIDE_PCT: f64 = 2.0;
const MAX_LOAD_DROP_POINTS: f64 = 5.0;

#[derive(Deserialize)]
struct Cyclictest {
    thread: BTreeMap<String, CyclicThread>,
}

#[derive(Deserialize)]
struct CyclicThread {
    cycles: u64,
    min: u64,
    avg: f64,
    max: u64,
    cpu: i64,
}

/// Timing bounds of a configuration: delivered share of the planned slot time, share of run
/// time outside the task's slots.
#[derive(Clone, Copy)]
struct Bounds {
    min_delivered_pct: f64,
    max_outside_pct: f64,
}

/// The issue's bounds, asserted at `-smp 2`.
const ISSUE_BOUNDS: Bounds = Bounds {
    min_delivered_pct: MIN_DELIVERED_PCT,
    max_outside_pct: MAX_OUTSIDE_PCT,
};

/// `-smp 3` (3 busy vCPUs on 2 host cores) with a 2 ms guard band: the host deschedules busy
/// vCPU threads for milliseconds, and half of the default 500 us guard-band events came after
/// their boundary. With 2 ms: outside 0.3-3.3 %, delivered 94.3-96.3 % at host load 5-6
/// (docs/vm-harness.md). 5 % still fails without the guard-band stop (2.8-8.4 % measured).
const SMP3_BOUNDS: Bounds = Bounds {
    min_delivered_pct: MIN_DELIVERED_PCT,
    max_outside_pct: 5.0,
};
const SMP3_GUARD_US: u64 = 2000;

/// What kthreads and the slot clock thread took on the managed CPUs in run `run`, by the
/// witness (a failed check when it cannot be read).
fn taken(c: &mut Checks, out: &VmOutput, run: &str, s: &Summary) -> witness::Taken {
    witness::taken(out, run, s).unwrap_or_else(|e| {
        c.check(false, format!("{run}: witness: {e}"));
        witness::Taken::default()
    })
}

/// Checks of one run of a valid plan to its end; `timing` adds the delivered/outside bounds,
/// the delivered one less the share of the planned time that `taken` says kthreads and the slot
/// clock thread took on the managed CPUs (on the rt kernels 5-12 %, on the cloud kernel < 1 %).
fn check_run(
    c: &mut Checks,
    name: &str,
    s: &Summary,
    timing: Option<Bounds>,
    taken: witness::Taken,
) {
    let planned = s.planned_tt_ns();
    c.check(
        s.exit == "duration",
        format!("{name}: exit reason {} (want duration)", s.exit),
    );
    let slots = DURATION_S * 1_000_000 / s.slot_us;
    for cpu in s.managed() {
        // The slot timer keeps ticking; under TCG a tick later than a whole slot skips slots.
        let ticks_ok = cpu.ticks * 2 >= slots && cpu.ticks * 10 <= slots * 11;
        c.check(
            ticks_ok,
            format!(
                "{name}: cpu {} ticked {} times for ~{slots} slots",
                cpu.cpu, cpu.ticks
            ),
        );
        let counted: u64 = cpu.late_hist.iter().map(|b| b.count).sum();
        c.check(
            counted == cpu.ticks,
            format!(
                "{name}: cpu {} lateness histogram counts {counted} of {} ticks",
                cpu.cpu, cpu.ticks
            ),
        );
        c.check(
            cpu.be_while_tt_ready_ns == 0,
            format!(
                "{name}: cpu {} be ran {} ns while the slot's tt task was runnable",
                cpu.cpu, cpu.be_while_tt_ready_ns
            ),
        );
        // Every plan here changes owners within a frame: the guard-band event must fire at
        // those run ends (B.2f of src/bpf/tt_sched.bpf.c) and find the busy owner running.
        c.check(
            cpu.guard_stops > 0 && cpu.guard_stops + cpu.guard_late <= cpu.guard_events,
            format!(
                "{name}: cpu {} guard band: {} events, {} stopped the ending owner, {} after the boundary",
                cpu.cpu, cpu.guard_events, cpu.guard_stops, cpu.guard_late
            ),
        );
        cpu.check_foreign(c, 0, "");
    }
    for t in s.tasks.iter().filter(|t| t.class == "tt") {
        c.check(
            t.state == "running",
            format!("{name}: {} state {}", t.name, t.state),
        );
        let Some(b) = timing else {
            c.check(
                t.delivered_ns > 0,
                format!("{name}: {} ran in its slots", t.name),
            );
            continue;
        };
        let min = taken.bound(b.min_delivered_pct, planned);
        c.check_timing(
            t.planned_ns > 0 && t.delivered_pct() >= min,
            format!(
                "{name}: {} delivered {:.1} % of its planned slot time (>= {min:.1} %: {})",
                t.name,
                t.delivered_pct(),
                taken.explain(b.min_delivered_pct, planned)
            ),
        );
        c.check_timing(
            t.run_ns > 0 && t.outside_pct() <= b.max_outside_pct,
            format!(
                "{name}: {} ran {:.2} % of its time outside its slots (<= {} %; the issue's {MAX_OUTSIDE_PCT} %: {})",
                t.name,
                t.outside_pct(),
                b.max_outside_pct,
                if t.outside_pct() <= MAX_OUTSIDE_PCT { "met" } else { "missed" }
            ),
        );
    }
}

/// Exit code and sched_ext state after each scx_tt run of the scenario.
fn check_exits(c: &mut Checks, out: &VmOutput, runs: &[&str]) {
    for run in runs {
        out.check_clean_exit(c, run);
    }
    let alive = out.result("foreign_alive");
    c.check(
        alive == Ok("yes"),
        format!("the busy loop outside the plan kept running: {alive:?}"),
    );
}

fn print_run(out: &VmOutput, run: &str, title: &str, s: &Summary) {
    out.print_file(&format!("{run}.out"));
    s.print(title);
    println!("--- {run}: slot-tick lateness");
    s.managed().for_each(|cpu| cpu.print_hist());
}

/// When only timing bounds failed (a host stall can do that under TCG), the scenario is
/// measured again (`Vm::check`).
#[test]
#[ignore = "boots a VM: make test-vm"]
fn demo_tasks_get_their_slots_on_one_cpu_even_with_a_loaded_housekeeping_cpu() {
    let vm = Vm::new("delivery")
        .label("delivery-demo_one_cpu")
        .smp(2)
        .timeout_s(300)
        .arg("duration_s", DURATION_S)
        .arg("plan", "/tt/scenarios/delivery/demo_one_cpu.json");
    vm.check(|out, c| {
        check_exits(c, out, &["warmup", "quiet", "loaded"]);
        let quiet = out.summary("quiet.json").unwrap_or_else(|e| panic!("{e}"));
        let loaded = out.summary("loaded.json").unwrap_or_else(|e| panic!("{e}"));
        print_run(out, "quiet", "quiet housekeeping CPU", &quiet);
        print_run(
            out,
            "loaded",
            "stress-ng + cyclictest on the housekeeping CPU",
            &loaded,
        );

        // a) and e)
        let (tq, tl) = (
            taken(c, out, "quiet", &quiet),
            taken(c, out, "loaded", &loaded),
        );
        check_run(c, "quiet", &quiet, Some(ISSUE_BOUNDS), tq);
        check_run(c, "loaded", &loaded, Some(ISSUE_BOUNDS), tl);
        // the same runs judged by the kernel's own switch and timer trace: the scheduler's
        // share of the outside time (what an owner ran past its boundary once the timer had
        // fired) within the issue's 2 %
        let issue = witness::Bounds {
            outside_share: MAX_OUTSIDE_PCT / 100.0,
            ..witness::Bounds::default()
        };
        witness::check(c, out, "quiet", &issue);
        witness::check(c, out, "loaded", &issue);

        // b) housekeeping load costs at most 5 points of tt delivery.
        for q in quiet.tasks.iter().filter(|t| t.class == "tt") {
            let Some(l) = loaded.tasks.iter().find(|t| t.name == q.name) else {
                c.check(false, format!("loaded run lacks task {}", q.name));
                continue;
            };
            let drop = q.delivered_pct() - l.delivered_pct();
            c.check_timing(
                drop <= MAX_LOAD_DROP_POINTS,
                format!(
                    "{}: delivery {:.1} % quiet, {:.1} % loaded: drop {drop:.1} points (<= {MAX_LOAD_DROP_POINTS})",
                    q.name,
                    q.delivered_pct(),
                    l.delivered_pct()
                ),
            );
        }
        check_cyclictest(c, out);
    });
}

/// The outside workload next to ours: cyclictest on the housekeeping CPU.
fn check_cyclictest(c: &mut Checks, out: &VmOutput) {
    match out.json::<Cyclictest>("cyclictest.json") {
        Ok(cy) => {
            for (id, t) in &cy.thread {
                println!(
                    "--- cyclictest thread {id} on cpu {} (SCHED_FIFO 90, 1 ms, next to stress-ng): {} cycles, \
                     latency us min {} avg {:.1} max {}",
                    t.cpu, t.cycles, t.min, t.avg, t.max
                );
                c.check(
                    t.cycles > 0,
                    format!("cyclictest thread {id} ran {} cycles", t.cycles),
                );
            }
        }
        Err(e) => c.check(false, format!("cyclictest figures: {e}")),
    }
}

/// The helper-thread slot clock (src/bpf/tt_sched.bpf.c B.5, issue 32: the clock of PREEMPT_RT
/// kernels, whose verifier refuses bpf_timer), forced with `--slot-clock rt` on this kernel:
/// the quiet run of the test above with the same bounds, judged by the same witness, plus
/// (exact) that no BPF timer fired and that CPU 1's clock thread ran there and nowhere else on
/// a managed CPU (its time there is neither foreign nor the owner's).
#[test]
#[ignore = "boots a VM: make test-vm"]
fn the_helper_thread_slot_clock_enforces_the_plan_as_the_bpf_timer_does() {
    let vm = Vm::new("delivery")
        .label("delivery-rt_clock")
        .smp(2)
        .timeout_s(300)
        .arg("duration_s", DURATION_S)
        .arg("plan", "/tt/scenarios/delivery/demo_one_cpu.json")
        .arg("loaded", 0)
        .arg("slot_clock", "rt");
    vm.check(|out, c| {
        check_exits(c, out, &["warmup", "quiet"]);
        let err = out.file("quiet.err").unwrap_or_default();
        c.check(
            err.contains("slot clock: rt (SCHED_FIFO 90 helper threads on CPUs [1])"),
            "quiet: scx_tt says it runs the helper-thread clock".into(),
        );
        let quiet = out.summary("quiet.json").unwrap_or_else(|e| panic!("{e}"));
        print_run(
            out,
            "quiet",
            "--slot-clock rt, quiet housekeeping CPU",
            &quiet,
        );
        let tq = taken(c, out, "quiet", &quiet);
        check_run(c, "quiet", &quiet, Some(ISSUE_BOUNDS), tq);
        let b = witness::Bounds {
            outside_share: MAX_OUTSIDE_PCT / 100.0,
            rt_clock: true,
            ..witness::Bounds::default()
        };
        witness::check(c, out, "quiet", &b);
    });
}

/// schedules/demo.json itself at `-smp 3`.
#[test]
#[ignore = "boots a VM: make test-vm"]
fn demo_plan_on_three_cpus_keeps_others_off_managed_cpus() {
    let vm = Vm::new("delivery")
        .label("delivery-demo")
        .smp(3)
        .timeout_s(300)
        .arg("duration_s", DURATION_S)
        .arg("plan", "/schedules/demo.json")
        .arg("loaded", 0)
        .arg("guard_us", SMP3_GUARD_US);
    vm.check(check_demo);
}

/// The checks of [`demo_plan_on_three_cpus_keeps_others_off_managed_cpus`].
fn check_demo(out: &VmOutput, c: &mut Checks) {
    {
        check_exits(c, out, &["warmup", "quiet"]);
        let quiet = out.summary("quiet.json").unwrap_or_else(|e| panic!("{e}"));
        print_run(
            out,
            "quiet",
            &format!("schedules/demo.json, -smp 3, --guard-us {SMP3_GUARD_US}"),
            &quiet,
        );
        let tq = taken(c, out, "quiet", &quiet);
        check_run(c, "demo", &quiet, Some(SMP3_BOUNDS), tq);
        witness::check(c, out, "quiet", &witness::Bounds::default());
    }
}

/// Checks an earlier boot's run directory of the demo test again: `SCX_TT_DELIVERY_DIR=
/// target/vm/runs/delivery-demo cargo test --release --test vm delivery::run_dir -- --ignored
/// --nocapture` (make test-vm skips it).
#[test]
#[ignore = "reads SCX_TT_DELIVERY_DIR"]
fn run_dir() {
    let dir = std::env::var("SCX_TT_DELIVERY_DIR").expect("SCX_TT_DELIVERY_DIR");
    let out = crate::harness::open_run(std::path::Path::new(&dir)).expect("a run directory");
    let mut c = Checks::default();
    check_demo(&out, &mut c);
    c.finish();
}

/// The summary of the agreed interface (docs/run-output.md), 10 s of 10 ms slots on CPU 1;
/// `delivered_ns` of task a, `foreign_ns` and `guard_stops` of 200 guard-band events (10 late)
/// are parameters.
fn sample_summary_guard(delivered_ns: u64, foreign_ns: u64, guard_stops: u64) -> Summary {
    let json = format!(
        r#"{{ "t0_ns": 1000000000, "slot_us": 10000, "duration_ns": 10000000000, "exit": "duration",
  "tasks": [ {{ "name": "a", "class": "tt", "cpu": 1, "tids": [123], "state": "running",
               "planned_ns": 5000000000, "delivered_ns": {delivered_ns}, "outside_ns": 1000000,
               "run_ns": 5000000000 }},
             {{ "name": "z", "class": "be", "cpu": null, "tids": [124], "state": "running",
               "planned_ns": 0, "delivered_ns": 0, "outside_ns": 0, "run_ns": 4000000000 }} ],
  "cpus": [ {{ "cpu": 1, "managed": true, "ticks": 1000,
              "late_ns": {{ "min": 1000, "p50": 50000, "p99": 900000, "max": 3000000 }},
              "late_hist": [ {{ "le_ns": 100000, "count": 700 }}, {{ "le_ns": null, "count": 300 }} ],
              "stolen_ns": 2000000, "kthread_ns": 2000000, "foreign_ns": {foreign_ns},
              "be_while_tt_ready_ns": 0, "bpf_tick_ns_avg": 850.5,
              "guard_events": 200, "guard_late": 10, "guard_stops": {guard_stops} }} ] }}"#
    );
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"))
}

/// `check_run` with the issue's bounds on `sample_summary_guard(delivered_ns, foreign_ns,
/// guard_stops)`.
fn check_sample(delivered_ns: u64, foreign_ns: u64, guard_stops: u64) -> Checks {
    let mut c = Checks::default();
    let s = sample_summary_guard(delivered_ns, foreign_ns, guard_stops);
    check_run(
        &mut c,
        "sample",
        &s,
        Some(ISSUE_BOUNDS),
        witness::Taken::default(),
    );
    c
}

#[test]
fn checks_pass_on_a_good_summary() {
    let c = check_sample(4_900_000_000, 0, 180);
    assert_eq!(c.failures(), Vec::<String>::new());
}

/// The delivered bound less what kthreads and the clock thread took: 88 % of 5 s passes when
/// they took 300 ms of it (6 %: bound 84 %), fails when they took 50 ms (1 %: bound 89 %).
#[test]
fn the_delivered_bound_is_lowered_by_what_kthreads_and_the_clock_thread_took() {
    let s = sample_summary_guard(4_400_000_000, 0, 180);
    let run = |kthread_ns, clock_ns| {
        let mut c = Checks::default();
        let taken = witness::Taken {
            kthread_ns,
            clock_ns,
        };
        check_run(&mut c, "sample", &s, Some(ISSUE_BOUNDS), taken);
        c.failures()
    };
    assert_eq!(run(200_000_000, 100_000_000), Vec::<String>::new());
    let f = run(40_000_000, 10_000_000);
    assert!(
        f.len() == 1 && f[0].contains("delivered 88.0 %") && f[0].contains(">= 89.0 %"),
        "{f:?}"
    );
}

#[test]
fn checks_catch_short_delivery_and_foreign_time() {
    // 4.4 s of 5 s planned is 88 % < 90 %; 1 us of foreign time on a managed CPU.
    let f = check_sample(4_400_000_000, 1_000, 180).failures();
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(
        f[0].contains("foreign 1000 ns, of which 0 ns of 0 tasks"),
        "{f:?}"
    );
    assert!(f[1].contains("delivered 88.0 %"), "{f:?}");
}

#[test]
fn short_delivery_alone_is_a_timing_failure_foreign_time_is_not() {
    let only_timing = check_sample(4_400_000_000, 0, 180);
    assert!(
        only_timing.only_timing_failed(),
        "{:?}",
        only_timing.failures()
    );
    let exact = check_sample(4_900_000_000, 1, 180);
    assert!(!exact.only_timing_failed(), "{:?}", exact.failures());
    assert_eq!(exact.failures().len(), 1);
}

#[test]
fn a_guard_band_that_never_stopped_an_owner_is_an_exact_failure() {
    let c = check_sample(4_900_000_000, 0, 0);
    let f = c.failures();
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("0 stopped the ending owner"), "{f:?}");
    assert!(!c.only_timing_failed());
}

/// Foreign time is judged net of the tasks BPF evicted (exact), and the evicted ones' time per
/// eviction against `EVICT_NS` (timing).
#[test]
fn foreign_time_of_evicted_tasks_is_judged_apart() {
    let cpu = |foreign_ns: u64, evictions: u64, evicted_ns: u64| {
        let s = sample_summary_guard(4_900_000_000, foreign_ns, 180);
        let mut v = serde_json::json!({});
        v["evictions"] = evictions.into();
        v["evicted_ns"] = evicted_ns.into();
        let mut c = s.cpus.into_iter().next().expect("cpu 1");
        c.bpf_counters = serde_json::from_value(v).expect("counters");
        let mut checks = Checks::default();
        c.check_foreign(&mut checks, 0, "");
        (checks.failures(), checks.only_timing_failed())
    };
    // 2 evictions of 150 us: nothing else foreign, well inside the bound
    let (f, _) = cpu(300_000, 2, 300_000);
    assert!(f.is_empty(), "{f:?}");
    // 1 ns more than the evicted time: foreign time the scheduler let run (exact)
    let (f, timing) = cpu(300_001, 2, 300_000);
    assert!(
        f.len() == 1 && f[0].ends_with(": 1 ns (want 0)") && !timing,
        "{f:?}"
    );
    // one eviction that took longer than EVICT_NS: a timing failure only
    let (f, timing) = cpu(EVICT_NS + 1, 1, EVICT_NS + 1);
    assert!(f.len() == 1 && timing, "{f:?}");
    assert!(f[0].contains("evicted tasks ran on"), "{f:?}");
}
