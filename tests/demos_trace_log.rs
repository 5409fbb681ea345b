//! DEmOS's schedule log from a slot trace of an imported plan (`crates/tt-core/src/demos/trace_log.rs`):
//! `plan import --demos` turns a configuration into a plan; the slot trace of that plan's table
//! (what the kernel path enforces without `--planner`, built here from the plan) must give the
//! same SC lines as `simulate --demos` (DEmOS's own semantics, checked against DEmOS's golden
//! schedules in tests/demos_golden.rs) — for the golden configurations whose SC work the plan
//! format can state exactly, the worked example and the VM test's configuration.

mod common;

use common::root;
use scx_tt::demos::trace_log::{sc_lines, sc_log};
use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{self, Config, CpuSet, ImportOptions, SimOptions, Source};
use scx_tt::trace::{SlotKind, SlotRecord};

/// The slot records of `frames` frames of the plan's static table (every CPU, every slot).
fn table_trace(plan: &scx_tt::plan::Plan, frames: u64) -> Vec<SlotRecord> {
    let mut out = Vec::new();
    for c in &plan.cpus {
        for s in 0..frames * plan.frame_slots {
            let fs = s % plan.frame_slots;
            let owner = c
                .table
                .iter()
                .find(|r| r.start <= fs && fs < r.end)
                .map(|r| plan.tasks[c.jobs[r.job].task].name.clone());
            out.push(SlotRecord {
                slot: s,
                cpu: c.cpu,
                kind: if owner.is_some() {
                    SlotKind::Tt
                } else {
                    SlotKind::Be
                },
                task: owner,
                freq: 1.0,
                idle_until: None,
                ran_ns: None,
                stolen_ns: None,
                late_ns: None,
            });
        }
    }
    out
}

/// (the SC lines from the imported plan's trace, those of `simulate --demos`) over `frames`
/// major frames.
fn both(config: &Config, all: CpuSet, frames: u64) -> (Vec<String>, Vec<String>) {
    let imported = demos::import(
        config,
        &ImportOptions {
            slot_us: None,
            all_cpus: all,
            config_dir: None,
        },
    )
    .unwrap_or_else(|e| panic!("import: {e}"));
    let trace = table_trace(&imported.plan, frames);
    let from_trace = sc_log(config, all, imported.slot_us, &trace);
    // window starts at the limit itself are logged by DEmOS: stop just before the next frame
    let sim = demos::simulate(
        config,
        &SimOptions {
            all_cpus: all,
            until_ms: frames * config.major_frame_ms() - 1,
            seed: demos::rng::Mt19937::DEFAULT_SEED,
        },
    )
    .unwrap_or_else(|e| panic!("simulate: {e}"));
    let text = |l: &[demos::LogLine]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    (text(&from_trace), text(&sc_lines(config, &sim.log)))
}

#[test]
fn the_imported_plans_trace_gives_demos_own_sc_schedule() {
    // golden configurations (tests/demos/) whose SC processes fit their windows, with BE or not
    let golden = [
        "01-one-sc-budget-below-window",
        "03-two-sc-processes",
        "07-be-after-all-sc",
    ];
    let mut compared = 0;
    for name in golden {
        let text = std::fs::read_to_string(root().join(format!("tests/demos/{name}.yaml")))
            .expect("fixture");
        let config = Config::from_yaml(&text, Source::Inline).expect("config");
        let (got, want) = both(&config, CpuSet::first_n(8), 4);
        assert!(!want.is_empty(), "{name}: no SC line to compare");
        assert_eq!(got, want, "{name}");
        compared += got.len();
    }
    for file in [
        "schedules/demos-example.yaml",
        "tests/vm/scenarios/demos/demos.yaml",
    ] {
        let config = Config::from_file(&root().join(file)).expect("config");
        let (got, want) = both(&config, CpuSet::parse("1-2").expect("cpus"), 3);
        assert!(want.len() >= 6, "{file}: {want:?}");
        assert_eq!(got, want, "{file}");
        compared += got.len();
    }
    println!("{compared} SC log lines from imported plans' traces equal simulate --demos's");
}

/// The comparison can fail: a trace where one SC process starts a slot late, or where a slot
/// of the table is given to another process, gives other lines.
#[test]
fn a_late_or_wrong_owner_changes_the_log() {
    let config =
        Config::from_file(&root().join("tests/vm/scenarios/demos/demos.yaml")).expect("config");
    let all = CpuSet::parse("1").expect("cpus");
    let imported = demos::import(
        &config,
        &ImportOptions {
            slot_us: None,
            all_cpus: all,
            config_dir: None,
        },
    )
    .expect("import");
    let trace = table_trace(&imported.plan, 2);
    let base = sc_log(&config, all, imported.slot_us, &trace);
    // the second process of SC1 starts at 30 ms; give its first slot to the first process
    let mut late = trace.clone();
    let r = late
        .iter_mut()
        .find(|r| r.slot == 3 && r.cpu == 1)
        .expect("slot 3");
    assert_eq!(r.task.as_deref(), Some("SC1.1"));
    r.task = Some("SC1.0".into());
    let got = sc_log(&config, all, imported.slot_us, &late);
    assert_ne!(got, base);
    assert!(
        got.iter()
            .any(|l| l.time_ms == 40 && l.cmd.ends_with("# sc1b")),
        "{got:?}"
    );
    // a slot of SC2 left idle in the middle does not start it twice, a gap does
    let mut gap = trace.clone();
    let r = gap
        .iter_mut()
        .find(|r| r.slot == 11 && r.cpu == 1)
        .expect("slot 11");
    assert_eq!(r.task.as_deref(), Some("SC2.0"));
    r.task = None;
    r.kind = SlotKind::Be;
    let got = sc_log(&config, all, imported.slot_us, &gap);
    assert_eq!(
        got.iter().filter(|l| l.cmd.ends_with("# sc2")).count(),
        base.iter().filter(|l| l.cmd.ends_with("# sc2")).count() + 1
    );
}
