//! The planner's kernel-path adapter (`scx_tt::planner::kernel_path`, planner mode): decisions
//! against the static table, the lead and late slots, firm admissions, policy swaps, and
//! (module `periodic`) periodic admissions and removals. Fixtures are at the top; both parts
//! build planners through `planner()`.

use scx_tt::abi::{DPM_IDLE, NO_TASK, PERF_ONE};
use scx_tt::energy::perf::cpuperf_target;
use scx_tt::plan::{self, gen, Plan};
use scx_tt::planner::cpu::{Capacity, UNIT};
use scx_tt::planner::kernel_path::{
    initial_perf, perf_of_ppm, Advance, DpmWrite, FirmJob, FirmOutcome, KernelPathConfig,
    KernelPlanner, PeriodicOutcome, PeriodicTask, PlannerModeError,
};
use scx_tt::planner::runtime::Rejection;
use scx_tt::planner::{Freqs, Planner, PlannerConfig, Policy, Run};
use scx_tt::sched::config::SchedConfig;

const DEMO: &str = include_str!("../schedules/demo.json");
const GENERATED: &str = include_str!("../schedules/generated.json");

/// One managed CPU, tt tasks a (period 50, wcet 10) and b (period 100, wcet 20), a be task;
/// 10 ms slots, frame 100: the VM test's plan shape.
const ONE_CPU: &str = r#"{ "version": 1, "slot_us": 10000,
  "cpus": { "managed": [1], "housekeeping": [0] },
  "tasks": [
    { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 50, "wcet": 10 },
    { "name": "b", "pid": 11, "class": "tt", "cpu": 1, "period": 100, "wcet": 20 },
    { "name": "c", "pid": 12, "class": "be" }
  ] }"#;

/// The owner of a table entry, its job-start flag stripped (`NO_TASK` for a free slot).
fn owner(entry: u32) -> u32 {
    scx_tt::abi::entry_task(entry).unwrap_or(NO_TASK)
}

fn freqs() -> Freqs {
    Freqs::xeon_default()
}

fn load(text: &str) -> Plan {
    plan::from_str(text).unwrap_or_else(|e| panic!("{e}"))
}

fn static_table(plan: &Plan) -> Vec<u32> {
    let online: Vec<u32> = (0..4).collect();
    SchedConfig::from_plan(plan, 0, &online)
        .expect("config")
        .entries()
}

/// The kernel-path planner of `plan` under `policy`, `lead` slots ahead, the maps holding
/// `table` (a refusal is returned).
fn planner(
    plan: &Plan,
    policy: Policy,
    lead: u64,
    table: Vec<u32>,
) -> Result<KernelPlanner, PlannerModeError> {
    let cfg = KernelPathConfig {
        policy,
        lead,
        frame_slots: plan.frame_slots,
        slot_ns: plan.slot_us * 1000,
        freqs: freqs(),
    };
    KernelPlanner::new(&plan.planner_inputs(), plan.tasks.len(), cfg, table)
}

fn online(plan: &Plan, lead: u64) -> KernelPlanner {
    planner(plan, Policy::Bss, lead, static_table(plan)).expect("planner mode")
}

/// Every decision of `frames` frames, as table entries (CPU-major like the table), from a
/// planner whose table starts empty so that every decided entry is written.
fn decided(plan: &Plan, frames: u64) -> Vec<Vec<u32>> {
    let n = plan.managed.len();
    let frame = plan.frame_slots as usize;
    let mut table = vec![u32::MAX - 1; n * frame];
    let mut p = planner(plan, Policy::Bss, 1, table.clone()).expect("planner mode");
    let mut out = vec![vec![NO_TASK; n * frame]; frames as usize];
    // lead 1: advance(Some(s)) decides slot s + 1, advance(None) slot 0
    let mut cur = None;
    for _ in 0..frames * plan.frame_slots {
        let before = p.now();
        let adv = p.advance(cur).expect("in order");
        assert_eq!((adv.stepped, adv.late), (1, 0));
        let f = (before / plan.frame_slots) as usize;
        for w in &adv.writes {
            if let Some(task) = w.task {
                table[w.cpu * frame + w.frame_slot as usize] = task;
            }
        }
        let fs = (before % plan.frame_slots) as usize;
        for cpu in 0..n {
            out[f][cpu * frame + fs] = table[cpu * frame + fs];
        }
        cur = Some(cur.map_or(0, |c| c + 1));
    }
    out
}

fn assert_decisions_are_the_static_table(plan: &Plan, what: &str) {
    let table = static_table(plan);
    assert!(
        table.iter().any(|&t| t != NO_TASK),
        "{what}: a table with work"
    );
    for (f, frame) in decided(plan, 3).iter().enumerate() {
        let differ: Vec<usize> = (0..table.len()).filter(|&i| frame[i] != table[i]).collect();
        assert!(
            differ.is_empty(),
            "{what}: frame {f}: {} entries differ from the static table, first at (cpu index, \
             slot) {:?}: planner {} static {}",
            differ.len(),
            differ
                .first()
                .map(|&i| (i / plan.frame_slots as usize, i % plan.frame_slots as usize)),
            differ.first().map_or(0, |&i| frame[i]),
            differ.first().map_or(0, |&i| table[i]),
        );
    }
    // and with the static table loaded, the planner writes nothing
    let mut p = online(plan, 2);
    let mut writes = p.advance(None).expect("step").writes.len();
    for s in 0..3 * plan.frame_slots {
        writes += p.advance(Some(s)).expect("step").writes.len();
    }
    assert_eq!(writes, 0, "{what}");
}

#[test]
fn without_admissions_bss_decides_the_static_table_demo_plan() {
    assert_decisions_are_the_static_table(&load(DEMO), "schedules/demo.json");
    assert_decisions_are_the_static_table(&load(ONE_CPU), "one cpu");
}

#[test]
fn without_admissions_bss_decides_the_static_table_generated_plans() {
    assert_decisions_are_the_static_table(&load(GENERATED), "schedules/generated.json");
    let mut checked = 0;
    for seed in 1..=20 {
        let g = gen::generate(&gen::GenParams {
            tasks: 6,
            util: 1.4,
            cpus: 2,
            wcet: (1, 6),
            period: (10, 60),
            seed,
            slot_us: 1000,
            frame_slots: Some(120),
            cmd: vec!["/bin/true".into()],
        });
        let Ok(g) = g else { continue };
        assert_decisions_are_the_static_table(&g.plan, &format!("generated seed {seed}"));
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} of 20 seeds gave a plan");
}

#[test]
fn the_planner_stays_lead_slots_ahead_and_counts_slots_it_decided_late() {
    let plan = load(ONE_CPU);
    let mut p = online(&plan, 3);
    let a = p.advance(None).expect("step");
    assert_eq!(
        (a.stepped, a.late, p.now()),
        (3, 0, 3),
        "slots 0, 1, 2 before slot 0"
    );
    let a = p.advance(Some(0)).expect("step");
    assert_eq!(
        (a.stepped, a.late, p.now()),
        (1, 0, 4),
        "slot 3 during slot 0"
    );
    let a = p.advance(Some(0)).expect("step");
    assert_eq!((a.stepped, a.late), (0, 0), "nothing new in the same slot");
    // the thread slept through slots 1..=9: slots 4..=9 had started, 10..=12 had not
    let a = p.advance(Some(9)).expect("step");
    assert_eq!((a.stepped, a.late, p.now()), (9, 6, 13));
    assert_eq!(p.late_slots(), 6);
}

#[test]
fn late_slots_are_never_written() {
    let plan = load(ONE_CPU);
    let mut p = planner(&plan, Policy::Bss, 2, vec![u32::MAX - 1; 100]).expect("ok");
    p.advance(None).expect("step");
    let a = p.advance(Some(40)).expect("step");
    assert_eq!(a.late, 41 - 2);
    let slots: Vec<u64> = a.writes.iter().map(|w| w.frame_slot).collect();
    assert_eq!(slots, vec![41, 42], "only the slots not started yet");
}

/// Slots of `task` in the written table entries of slots `from..to` (frame 100, one CPU).
fn owned(p: &mut KernelPlanner, plan: &Plan, cur: &mut u64, to: u64, task: u32) -> Vec<u64> {
    let mut table = static_table(plan);
    let mut slots = Vec::new();
    while p.now() < to {
        let before = p.now();
        for w in p.advance(Some(*cur)).expect("step").writes {
            if let Some(task) = w.task {
                table[w.frame_slot as usize] = task;
            }
        }
        if before < to && owner(table[(before % 100) as usize]) == task {
            slots.push(before);
        }
        *cur += 1;
    }
    slots
}

#[test]
fn an_accepted_firm_job_gets_its_slots_on_its_cpu_before_its_deadline() {
    let plan = load(ONE_CPU);
    let mut p = online(&plan, 2);
    p.advance(None).expect("step");
    let mut cur = 0;
    for _ in 0..120 {
        p.advance(Some(cur)).expect("step");
        cur += 1;
    }
    // slot 120 started, the thread has not stepped yet: decided up to 121
    assert_eq!((cur, p.now()), (120, 122));
    let job = FirmJob {
        task: 0,
        cpu: 0,
        wcet: 20,
        deadline_slots: 60,
    };
    let FirmOutcome::Accepted {
        cpu,
        deadline_slot,
        first_slot,
    } = p.admit_firm(&job, cur)
    else {
        panic!("expected an acceptance");
    };
    assert_eq!((cpu, deadline_slot, first_slot), (0, 180, 122));
    let static_a = (first_slot..deadline_slot)
        .filter(|&s| static_table(&plan)[(s % 100) as usize] == 0)
        .count();
    let got = owned(&mut p, &plan, &mut cur, deadline_slot, 0);
    let in_window = got.iter().filter(|&&s| s >= first_slot).count();
    assert!(
        in_window >= static_a + 20,
        "task a owns {in_window} slots in [{first_slot}, {deadline_slot}), its periodic share \
         there is {static_a}: {got:?}"
    );
    // ... and never earlier than first_slot differently from the static table
    assert!(got.iter().all(|&s| s >= 120));
}

#[test]
fn a_rejection_reports_the_free_slots_before_the_deadline() {
    let plan = load(ONE_CPU);
    let mut p = online(&plan, 2);
    p.advance(None).expect("step");
    // advance until the planner's next slot is the frame start 100: kernel slot 97
    let mut cur = 0;
    while p.now() < 100 {
        p.advance(Some(cur)).expect("step");
        cur += 1;
    }
    assert_eq!(p.now(), 100);
    // frame-relative [0, 30): a's job [0, 50) and b's [0, 100) can run after 30: 30 free
    let job = FirmJob {
        task: 1,
        cpu: 0,
        wcet: 31,
        deadline_slots: 30,
    };
    // deadlines count from slot 100 here (the caller passes the slot in progress)
    assert_eq!(
        p.admit_firm(&job, 100),
        FirmOutcome::Rejected(Capacity {
            needed: 31,
            available: 30,
            deadline: 130
        })
    );
    // [0, 60): a's first job (10) must be done by 50: 50 free
    let FirmOutcome::Rejected(cap) = p.admit_firm(
        &FirmJob {
            wcet: 51,
            deadline_slots: 60,
            ..job.clone()
        },
        100,
    ) else {
        panic!("expected a rejection");
    };
    assert_eq!((cap.needed, cap.available, cap.deadline), (51, 50, 160));
    // exactly the free capacity fits; then nothing is left before 130
    assert!(matches!(
        p.admit_firm(
            &FirmJob {
                wcet: 30,
                ..job.clone()
            },
            100
        ),
        FirmOutcome::Accepted {
            deadline_slot: 130,
            first_slot: 100,
            ..
        }
    ));
    assert_eq!(
        p.admit_firm(&FirmJob { wcet: 1, ..job }, 100),
        FirmOutcome::Rejected(Capacity {
            needed: 1,
            available: 0,
            deadline: 130
        })
    );
}

#[test]
fn a_deadline_already_decided_is_rejected_with_nothing_available() {
    let plan = load(ONE_CPU);
    let mut p = online(&plan, 4);
    p.advance(None).expect("step");
    p.advance(Some(0)).expect("step");
    // slots up to 4 are written: a deadline at 5 leaves nothing
    let out = p.admit_firm(
        &FirmJob {
            task: 0,
            cpu: 0,
            wcet: 1,
            deadline_slots: 5,
        },
        0,
    );
    assert!(
        matches!(out, FirmOutcome::Rejected(c) if c.available == 0),
        "{out:?}"
    );
}

#[test]
fn bad_modes_are_refused_naming_the_flag_the_value_and_the_rule() {
    let plan = load(ONE_CPU);
    let err = |policy, lead, table: Vec<u32>| {
        planner(&plan, policy, lead, table)
            .err()
            .expect("refused")
            .to_string()
    };
    for policy in Policy::ALL {
        assert!(
            planner(&plan, policy, 2, static_table(&plan)).is_ok(),
            "{policy}"
        );
    }
    assert_eq!(
        err(Policy::Bss, 0, static_table(&plan)),
        "--planner-lead-slots 0: must be in 1..=8"
    );
    assert_eq!(
        err(Policy::Bss, 9, static_table(&plan)),
        "--planner-lead-slots 9: must be in 1..=8"
    );
    assert!(err(Policy::Bss, 2, vec![0; 3]).contains("3 entries, expected 100"));
    let small = load(
        r#"{ "version": 1, "slot_us": 10000, "cpus": { "managed": [1], "housekeeping": [0] },
          "tasks": [ { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 4, "wcet": 1 } ] }"#,
    );
    let e = planner(&small, Policy::Bss, 3, static_table(&small))
        .err()
        .expect("refused");
    assert!(
        e.to_string()
            .starts_with("--planner-lead-slots 3: must be at most the frame of 4 slots minus 2"),
        "{e}"
    );
    assert!(planner(&small, Policy::Bss, 2, static_table(&small)).is_ok());
}

#[test]
fn only_tt_tasks_with_a_cpu_take_firm_jobs() {
    let plan = load(ONE_CPU);
    assert_eq!(plan.tt_cpu_index(0), Some(0));
    assert_eq!(plan.tt_cpu_index(1), Some(0));
    assert_eq!(plan.tt_cpu_index(2), None, "be");
    assert_eq!(plan.tt_cpu_index(3), None, "no such task");
}

/// One managed CPU, tt tasks a (period 50, wcet 10) and b (period 100, wcet 20), no be task:
/// the VM test's plan (tests/vm/scenarios/planner/planner.json); idle slots run at the minimum under dvfs.
const NO_BE: &str = r#"{ "version": 1, "slot_us": 10000,
  "cpus": { "managed": [1], "housekeeping": [0] },
  "tasks": [
    { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 50, "wcet": 10 },
    { "name": "b", "pid": 11, "class": "tt", "cpu": 1, "period": 100, "wcet": 20 }
  ] }"#;

/// The maps as the kernel holds them: owners and cpuperf targets, updated from writes.
struct Maps {
    frame: usize,
    table: Vec<u32>,
    perf: Vec<u32>,
    perf_writes: usize,
}

impl Maps {
    fn new(plan: &Plan) -> Maps {
        let table = static_table(plan);
        Maps {
            frame: plan.frame_slots as usize,
            perf: initial_perf(table.len()),
            table,
            perf_writes: 0,
        }
    }

    /// Applies `adv`'s writes; each one must change what the map holds.
    fn apply(&mut self, adv: &Advance) {
        for w in &adv.writes {
            let i = w.cpu * self.frame + w.frame_slot as usize;
            assert!(w.task.is_some() || w.perf.is_some(), "an empty write {w:?}");
            if let Some(task) = w.task {
                assert_ne!(self.table[i], task, "owner written without a change: {w:?}");
                self.table[i] = task;
            }
            if let Some(perf) = w.perf {
                assert_ne!(self.perf[i], perf, "perf written without a change: {w:?}");
                assert!((1..=PERF_ONE).contains(&perf), "{w:?}");
                self.perf[i] = perf;
                self.perf_writes += 1;
            }
        }
    }

    /// (owner, cpuperf target) of managed CPU `cpu` in slot `slot`.
    fn at(&self, cpu: usize, slot: u64) -> (u32, u32) {
        let i = cpu * self.frame + (slot % self.frame as u64) as usize;
        (owner(self.table[i]), self.perf[i])
    }
}

/// Steps `p` (lead 1) through slot `to - 1`, one slot per call as the planner thread does on
/// time; returns (slot, cpu) -> (owner, perf) as the maps hold them once that slot is written.
fn run_to(p: &mut KernelPlanner, maps: &mut Maps, cpus: usize, to: u64) -> Vec<Vec<(u32, u32)>> {
    let mut out = Vec::new();
    while p.now() < to {
        let t = p.now();
        let adv = p.advance(t.checked_sub(1)).expect("in order");
        assert_eq!((adv.stepped, adv.late), (1, 0));
        maps.apply(&adv);
        out.push((0..cpus).map(|c| maps.at(c, t)).collect());
    }
    out
}

fn sim_dvfs(plan: &Plan, frames: u64) -> Vec<scx_tt::trace::SlotRecord> {
    use scx_tt::sim::{simulate, ExecModel, SimConfig};
    let cfg = SimConfig {
        policy: Policy::Dvfs,
        freqs: freqs(),
        frames,
        exec: ExecModel::Factor(1.0),
        keep_records: true,
    };
    let power = scx_tt::sim::power::PlaceholderPower::default();
    simulate(plan, &[], &cfg, &power, &mut |_| {})
        .expect("simulates")
        .records
}

#[test]
fn without_admissions_dvfs_writes_the_frequencies_and_owners_simulate_decides() {
    for (name, text) in [("no_be", NO_BE), ("one_cpu", ONE_CPU), ("demo", DEMO)] {
        let plan = load(text);
        let n = plan.managed.len();
        let frames = 3;
        let records = sim_dvfs(&plan, frames);
        assert_eq!(records.len() as u64, frames * plan.frame_slots * n as u64);
        let mut p = planner(&plan, Policy::Dvfs, 1, static_table(&plan)).expect("planner mode");
        let mut maps = Maps::new(&plan);
        let written = run_to(&mut p, &mut maps, n, frames * plan.frame_slots);
        let (mut below_max, mut owner_moved) = (0, 0);
        for r in &records {
            let cpu = plan
                .managed
                .iter()
                .position(|&c| c == r.cpu)
                .expect("managed");
            let (entry, perf) = written[r.slot as usize][cpu];
            let owner = owner(entry);
            let want_owner = r.task.as_ref().map_or(NO_TASK, |t| {
                plan.tasks.iter().position(|x| &x.name == t).expect("task") as u32
            });
            let want_owner = if r.kind == scx_tt::trace::SlotKind::Be {
                NO_TASK
            } else {
                want_owner
            };
            assert_eq!(
                (owner, perf),
                (want_owner, cpuperf_target(r.freq)),
                "{name}: slot {} cpu {}: simulate decided {:?} at {}",
                r.slot,
                r.cpu,
                r.task,
                r.freq
            );
            below_max += usize::from(perf < PERF_ONE);
            let static_owner = static_table(&plan)
                [cpu * plan.frame_slots as usize + (r.slot % plan.frame_slots) as usize];
            owner_moved += usize::from(owner != static_owner);
        }
        println!(
            "{name}: {} slots, {below_max} below full speed, {owner_moved} owners moved by \
             stretching, {} perf writes",
            records.len(),
            maps.perf_writes
        );
        assert!(below_max > 0, "{name}: dvfs lowers some frequency");
        // written only on change: frames repeat, so later frames write (almost) nothing new
        assert!(
            maps.perf_writes < records.len() / 2,
            "{name}: {} perf writes for {} slots",
            maps.perf_writes,
            records.len()
        );
    }
}

#[test]
fn under_bss_nothing_is_written_to_the_perf_map() {
    let plan = load(DEMO);
    let mut p = online(&plan, 1);
    let mut maps = Maps::new(&plan);
    let n = plan.managed.len();
    let written = run_to(&mut p, &mut maps, n, 3 * plan.frame_slots);
    assert_eq!(maps.perf_writes, 0);
    assert!(written.iter().flatten().all(|&(_, perf)| perf == PERF_ONE));
}

#[test]
fn a_firm_admission_raises_the_frequency_of_the_following_slots() {
    let plan = load(NO_BE);
    let mk = || planner(&plan, Policy::Dvfs, 1, static_table(&plan)).expect("planner mode");
    let (mut with, mut without) = (mk(), mk());
    let (mut m_with, mut m_without) = (Maps::new(&plan), Maps::new(&plan));
    run_to(&mut with, &mut m_with, 1, 100);
    run_to(&mut without, &mut m_without, 1, 100);
    // at the frame start: 20 slots of tt-a due in 60 (tt-a's first job, 10 slots, is due by
    // 50: 50 slots are free before 160)
    let job = FirmJob {
        task: 0,
        cpu: 0,
        wcet: 20,
        deadline_slots: 60,
    };
    assert!(matches!(
        with.admit_firm(&job, 100),
        FirmOutcome::Accepted {
            first_slot: 100,
            ..
        }
    ));
    let a = run_to(&mut with, &mut m_with, 1, 160);
    let b = run_to(&mut without, &mut m_without, 1, 160);
    let cycles = |w: &[Vec<(u32, u32)>]| w.iter().map(|s| u64::from(s[0].1)).sum::<u64>();
    let top = |w: &[Vec<(u32, u32)>]| w.iter().map(|s| s[0].1).max().unwrap_or(0);
    println!(
        "slots 100..160: with the job {} cpuperf·slots, highest target {}; without {}, highest {}",
        cycles(&a),
        top(&a),
        cycles(&b),
        top(&b)
    );
    // without it the CPU runs tt-a's job, then tt-b's, stretched at the minimum (1.0 of 2.3
    // GHz: 446); the job's 20 slots of work leave less slack to stretch into
    assert!(
        b.iter().all(|s| s[0].1 == 446),
        "without: all at the minimum"
    );
    assert!(
        top(&a) > top(&b),
        "some slot after the admission runs faster"
    );
    assert!(
        a.iter().zip(&b).all(|(x, y)| x[0].1 >= y[0].1),
        "no slot runs slower"
    );
    // the work due by 160 (tt-a's 10 + the job's 20) fits in what was written
    assert!(cycles(&a) >= (10 + 20) * u64::from(PERF_ONE));
}

#[test]
fn a_policy_swap_takes_effect_at_the_next_undecided_slot_and_keeps_the_written_ones() {
    let plan = load(NO_BE);
    let mut p = planner(&plan, Policy::Dvfs, 2, static_table(&plan)).expect("planner mode");
    let mut maps = Maps::new(&plan);
    let mut reference = Planner::new(
        &plan.planner_inputs(),
        plan.frame_slots,
        PlannerConfig {
            policy: Policy::Dvfs,
            freqs: freqs(),
            slot_ns: plan.slot_us * 1000,
        },
    );
    let mut cur = None;
    let mut decided = Vec::new();
    let step_to = |p: &mut KernelPlanner, maps: &mut Maps, cur: &mut Option<u64>, to: u64| {
        while cur.is_none_or(|c| c < to) {
            maps.apply(&p.advance(*cur).expect("in order"));
            *cur = Some(cur.map_or(0, |c| c + 1));
        }
    };
    step_to(&mut p, &mut maps, &mut cur, 37);
    // the last advance saw slot 36 in progress: slots up to 38 are written
    let before: Vec<(u32, u32)> = (37..=38).map(|s| maps.at(0, s)).collect();
    let from = p.set_policy(Policy::Bss).expect("bss");
    assert_eq!(from, 39, "the next undecided slot");
    assert_eq!(p.policy(), Policy::Bss);
    step_to(&mut p, &mut maps, &mut cur, 38);
    assert_eq!(
        (37..=38).map(|s| maps.at(0, s)).collect::<Vec<_>>(),
        before,
        "the slots written before the swap keep their entries"
    );
    // the reference planner swapped at the same slot decides the same from there on
    for t in 0..from {
        decided.push(reference.step(t, &[]).expect("step")[0]);
    }
    reference.set_policy(Policy::Bss);
    for t in from..200 {
        let d = reference.step(t, &[]).expect("step")[0];
        step_to(&mut p, &mut maps, &mut cur, t - 1);
        let (owner, perf) = maps.at(0, t);
        assert_eq!(perf, PERF_ONE, "slot {t}: bss runs at full speed");
        let want = match d.run {
            Run::Job { task, .. } => task as u32,
            _ => NO_TASK,
        };
        assert_eq!(owner, want, "slot {t}");
    }
    assert!(
        decided.iter().any(|d| d.freq_ppm < UNIT as u32),
        "dvfs before the swap"
    );
}

#[test]
fn dvfs_frequencies_come_from_the_power_models_pstates_or_the_default() {
    let model = scx_tt::energy::model::from_str(include_str!("../models/xeon-gold-5218.json"))
        .expect("bundled model");
    let cluster = &model.clusters[0];
    let f = model.dvfs_freqs(1).expect("valid P-states");
    assert_eq!(f.ppm().len(), cluster.pstates.len());
    assert_eq!(f.ppm().last(), Some(&(UNIT as u32)));
    let lowest = f64::from(cluster.min_mhz()) / f64::from(cluster.max_mhz());
    assert_eq!(f.min_ppm(), (lowest * UNIT as f64) as u32);
    // the cpuperf targets of the default frequencies: 1.0 of 2.3 GHz is 446, 2.3 is 1024
    let d = freqs();
    assert_eq!(perf_of_ppm(d.min_ppm()), 446);
    assert_eq!(perf_of_ppm(UNIT as u32), PERF_ONE);
    assert!(d
        .ppm()
        .windows(2)
        .all(|w| perf_of_ppm(w[0]) < perf_of_ppm(w[1])));
}

/// Periodic admissions of tasks declared `"start": "admitted"`, and removals.
mod periodic {
    use super::*;
    use scx_tt::plan::Start;

    /// `ONE_CPU` of tests.rs plus three admitted tasks on CPU 1: v (period 50, wcet 10) fits next
    /// to a and b (40 of 100 slots), w (period 100, wcet 80) never does, x (period 100, wcet 50)
    /// only without v. `{v}` is v's start.
    const PLAN: &str = r#"{ "version": 1, "slot_us": 10000,
  "cpus": { "managed": [1], "housekeeping": [0] },
  "tasks": [
    { "name": "a", "pid": 10, "class": "tt", "cpu": 1, "period": 50, "wcet": 10 },
    { "name": "b", "pid": 11, "class": "tt", "cpu": 1, "period": 100, "wcet": 20 },
    { "name": "c", "pid": 12, "class": "be" },
    { "name": "v", "pid": 13, "class": "tt", "cpu": 1, "period": 50, "wcet": 10, "start": "{v}" },
    { "name": "w", "pid": 14, "class": "tt", "cpu": 1, "period": 100, "wcet": 80, "start": "admitted" },
    { "name": "x", "pid": 15, "class": "tt", "cpu": 1, "period": 100, "wcet": 50, "start": "admitted" }
  ] }"#;
    const A: u32 = 0;
    const B: u32 = 1;
    const V: usize = 3;
    const W: usize = 4;
    const X: usize = 5;
    const FRAME: u64 = 100;

    fn load(v_start: &str) -> Plan {
        plan::from_str(&PLAN.replace("{v}", v_start)).unwrap_or_else(|e| panic!("{e}"))
    }

    fn online(plan: &Plan, lead: u64) -> KernelPlanner {
        super::online(plan, lead)
    }

    fn periodic(plan: &Plan, task: usize) -> PeriodicTask {
        let Start::Admitted { period, wcet } = plan.tasks[task].start else {
            panic!("{} is not declared admitted", plan.tasks[task].name);
        };
        PeriodicTask::implicit(task, 0, period, wcet)
    }

    /// Runs the kernel-side loop with lead 2 over `slots` slots: before slot `s` starts (the
    /// thread has decided up to `s + 1`), `act(s, planner)` may admit or remove. Returns the
    /// owner of every slot as the table held it when the slot ran.
    fn run(plan: &Plan, slots: u64, mut act: impl FnMut(u64, &mut KernelPlanner)) -> Vec<u32> {
        let mut p = online(plan, 2);
        let online: Vec<u32> = (0..4).collect();
        let mut table = SchedConfig::from_plan(plan, 0, &online)
            .expect("config")
            .entries();
        let apply = |adv: Advance, table: &mut Vec<u32>| {
            for w in adv.writes {
                if let Some(task) = w.task {
                    table[w.frame_slot as usize] = task;
                }
            }
        };
        apply(p.advance(None).expect("step"), &mut table);
        let mut owners = Vec::new();
        for s in 0..slots {
            act(s, &mut p);
            apply(p.advance(Some(s)).expect("step"), &mut table);
            assert_eq!(p.late_slots(), 0);
            owners.push(owner(table[(s % FRAME) as usize]));
        }
        owners
    }

    fn count(owners: &[u32], from: u64, to: u64, task: u32) -> usize {
        owners[from as usize..to as usize]
            .iter()
            .filter(|&&t| t == task)
            .count()
    }

    #[test]
    fn an_admitted_task_owns_nothing_before_its_first_frame_and_then_what_a_table_task_would() {
        let plan = load("admitted");
        let mut reply = None;
        let owners = run(&plan, 6 * FRAME, |s, p| {
            if s == 130 {
                reply = Some(p.admit_periodic(&periodic(&plan, V)));
            }
        });
        let Some(PeriodicOutcome::Accepted { cpu, from_slot }) = reply else {
            panic!("expected an acceptance, got {reply:?}");
        };
        // admitted during frame k = 1: frame 2 is being built with the old template, v joins from
        // frame k + 3 (docs/planner.md "Frames and horizon")
        assert_eq!(cpu, 0);
        assert_eq!(from_slot, (130 / FRAME + 3) * FRAME);
        assert_eq!(
            count(&owners, 0, from_slot, V as u32),
            0,
            "nothing before F"
        );
        // From F on, the decisions equal those of a planner that had v in its table from slot 0.
        let reference = run(&load("table"), 6 * FRAME, |_, _| {});
        assert_eq!(
            &owners[from_slot as usize..],
            &reference[from_slot as usize..],
            "from F = {from_slot} on"
        );
        for f in from_slot / FRAME..6 {
            let (lo, hi) = (f * FRAME, (f + 1) * FRAME);
            for (task, share) in [(V as u32, 20), (A, 20), (B, 20)] {
                assert_eq!(count(&owners, lo, hi, task), share, "frame {f} task {task}");
            }
            for k in 0..2 {
                let (plo, phi) = (lo + k * 50, lo + (k + 1) * 50);
                assert_eq!(
                    count(&owners, plo, phi, V as u32),
                    10,
                    "period [{plo}, {phi})"
                );
            }
        }
    }

    #[test]
    fn a_rejection_names_the_edf_miss_and_changes_no_entry() {
        let plan = load("admitted");
        let mut reply = None;
        let owners = run(&plan, 4 * FRAME, |s, p| {
            if s == 130 {
                let before = p.now();
                reply = Some(p.admit_periodic(&periodic(&plan, W)));
                assert_eq!(p.now(), before);
            }
        });
        let Some(PeriodicOutcome::Rejected(r @ Rejection::Infeasible { cpu: 0, miss })) = &reply
        else {
            panic!("expected an EDF miss on CPU index 0, got {reply:?}");
        };
        assert_eq!(miss.wcet, 80);
        assert!(miss.remaining > 0);
        assert!(
            r.to_string().contains("frame infeasible on CPU index 0"),
            "{r}"
        );
        let untouched = run(&plan, 4 * FRAME, |_, _| {});
        assert_eq!(owners, untouched, "a rejection changes no entry");
    }

    #[test]
    fn a_removed_task_owns_nothing_from_now_and_its_capacity_admits_another_at_once() {
        let plan = load("table");
        let mut removed = None;
        let mut before_removal = None;
        let mut after_removal = None;
        let owners = run(&plan, 6 * FRAME, |s, p| {
            if s == 140 {
                // x needs 50 of the 40 free slots per frame while v runs
                before_removal = Some(p.admit_periodic(&periodic(&plan, X)));
                removed = Some(p.remove(V));
                after_removal = Some(p.admit_periodic(&periodic(&plan, X)));
            }
        });
        assert!(
            matches!(before_removal, Some(PeriodicOutcome::Rejected(_))),
            "{before_removal:?}"
        );
        let Some((true, from)) = removed else {
            panic!("{removed:?}");
        };
        assert_eq!(from, 142, "slots 140 and 141 were decided (lead 2)");
        let Some(PeriodicOutcome::Accepted { from_slot, .. }) = after_removal else {
            panic!("x fits once v is gone: {after_removal:?}");
        };
        assert_eq!(from_slot, (140 / FRAME + 3) * FRAME);
        assert_eq!(
            count(&owners, from, 6 * FRAME, V as u32),
            0,
            "v after {from}"
        );
        assert!(count(&owners, 100, from, V as u32) > 0, "v ran before");
        assert_eq!(count(&owners, 0, from_slot, X as u32), 0);
        for f in from_slot / FRAME..6 {
            let (lo, hi) = (f * FRAME, (f + 1) * FRAME);
            for (task, share) in [(X as u32, 50), (A, 20), (B, 20)] {
                assert_eq!(count(&owners, lo, hi, task), share, "frame {f} task {task}");
            }
        }
        // Removing again finds nothing.
        let mut p = online(&plan, 2);
        assert!(p.remove(V).0);
        assert!(!p.remove(V).0);
    }

    /// Independent oracle: implicit-deadline periodic tasks released together are EDF-feasible on
    /// one CPU iff their utilization is at most 1 (Liu and Layland). a and b use 40 of 100 slots,
    /// so a task of `wcet` every `period` slots fits iff 40 + (100 / period) · wcet <= 100.
    #[test]
    fn acceptance_equals_the_utilization_bound_for_every_period_and_wcet() {
        let plan = load("admitted");
        let mut cases = 0;
        for period in (1..=FRAME).filter(|p| FRAME.is_multiple_of(*p)) {
            for wcet in 1..=period {
                let mut p = online(&plan, 2);
                p.advance(None).expect("step");
                for s in 0..30 {
                    p.advance(Some(s)).expect("step");
                }
                let task = PeriodicTask::implicit(V, 0, period, wcet);
                let fits = 40 + FRAME / period * wcet <= FRAME;
                let got = p.admit_periodic(&task);
                assert_eq!(
                    matches!(got, PeriodicOutcome::Accepted { from_slot: 300, .. }),
                    fits,
                    "{wcet} every {period}: {got:?}"
                );
                cases += 1;
            }
        }
        assert_eq!(cases, 217);
    }
}

/// DPM in the kernel path (src/bpf/tt_sched.bpf.c K): an idle period's entries are written as
/// `DPM_IDLE` when its first slot is decided, up to its end, and the end is published after
/// them; an admission inside the period lowers the published end to the first slot it needs,
/// with a kick, and its slots are written as the job's. Checked against a plain `Planner` under
/// dpm stepped beside it (the decisions, idle periods included) and against the writes'
/// own order: every period's entries come before its end is published.
#[test]
fn dpm_publishes_idle_periods_after_their_entries_and_an_admission_cuts_them_short() {
    let plan = load(ONE_CPU);
    let mut p =
        planner(&plan, Policy::Dpm, 2, static_table(&plan)).expect("dpm is a kernel policy");
    let frame = plan.frame_slots;
    let mut table = static_table(&plan);
    let mut published: Option<(u64, bool)> = None;
    let mut periods = Vec::new();
    for cur in 0..40u64 {
        let adv = p.advance(Some(cur)).expect("in order");
        for w in &adv.writes {
            if let Some(t) = w.task {
                table[w.frame_slot as usize] = t;
            }
        }
        for d in &adv.dpm {
            assert_eq!(d.cpu, 0);
            // every entry from the slot this advance decided (cur + lead) to the published
            // end is DPM_IDLE
            for s in cur + 2..d.until {
                assert_eq!(
                    table[(s % frame) as usize],
                    DPM_IDLE,
                    "slot {s} below the published end {} at cur {cur}",
                    d.until
                );
            }
            published = Some((d.until, d.kick));
            periods.push((cur, d.until, d.kick));
        }
    }
    // a 10 slots, then b 20 slots, then idle until a's second job must start (slot 90)
    let (until, kick) = published.expect("an idle period was published");
    assert_eq!((until, kick), (90, false), "{periods:?}");
    for s in 30..90 {
        assert_eq!(table[s as usize], DPM_IDLE, "slot {s}");
    }
    // an admission inside the period: due 20 slots after slot 40, 5 slots
    let job = FirmJob {
        task: 0,
        cpu: 0,
        wcet: 5,
        deadline_slots: 20,
    };
    let first = match p.admit_firm(&job, 40) {
        FirmOutcome::Accepted { first_slot, .. } => first_slot,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        first, 42,
        "the planner's next undecided slot (39 + lead 2 + 1)"
    );
    let adv = p.advance(Some(40)).expect("in order");
    assert_eq!(
        adv.dpm,
        vec![DpmWrite {
            cpu: 0,
            from: 42,
            until: 42,
            kick: true
        }],
        "the period ends where the job starts, and the CPU is kicked"
    );
    assert!(
        adv.writes
            .iter()
            .any(|w| w.frame_slot == 42 && w.task.map(owner) == Some(0)),
        "{:?}",
        adv.writes
    );
    // after the job's 5 slots the CPU is idle again to slot 90: a new period, no kick
    let mut after = Vec::new();
    for cur in 41..50u64 {
        after.extend(p.advance(Some(cur)).expect("in order").dpm);
    }
    assert_eq!(
        after,
        vec![DpmWrite {
            cpu: 0,
            from: 47,
            until: 90,
            kick: false
        }],
        "{after:?}"
    );
}
