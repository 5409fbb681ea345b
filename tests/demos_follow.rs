//! The DEmOS events of a kernel run of an imported plan (`crates/tt-core/src/demos/follow.rs`): the events
//! derived from the slot grid and the plan's table must be DEmOS's own (the simulator's hook,
//! `simulate_events`, itself checked against DEmOS's golden schedules) for configurations whose
//! SC work the plan states exactly, without the BE process events the plan cannot state; the
//! `-m`/`-M` lines come at each window start; a plan that is not the configuration's import is
//! refused naming the field.

mod common;

use common::root;
use scx_tt::demos::follow::{check_import, frame_events, messages, Follower};
use scx_tt::demos::power::Event;
use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{self, Config, CpuSet, ImportOptions, SimOptions, Source};

fn imported(config: &Config, all: CpuSet) -> scx_tt::plan::Plan {
    demos::import(
        config,
        &ImportOptions {
            slot_us: None,
            all_cpus: all,
            config_dir: None,
        },
    )
    .unwrap()
    .plan
}

/// "ms event" of the run's events over `frames` frames (the follower fed every slot).
fn followed(config: &Config, plan: &scx_tt::plan::Plan, frames: u64) -> Vec<String> {
    let mut f = Follower::new(frame_events(config, plan), plan.frame_slots);
    let mut out = Vec::new();
    for slot in 0..frames * plan.frame_slots {
        for (at, e) in f.until(slot) {
            out.push(format!("{} {e:?}", at * plan.slot_us / 1000));
        }
    }
    out
}

/// The simulator's events without `Init` and the BE processes' starts and ends, over the same
/// time (the window end at the limit belongs to the next frame's first slot there).
fn simulated(config: &Config, all: CpuSet, until_ms: u64) -> Vec<String> {
    let opts = SimOptions {
        all_cpus: all,
        until_ms,
        seed: 5489,
    };
    let r = demos::simulate_events(config, &opts).unwrap();
    let sc: Vec<usize> = config
        .windows
        .iter()
        .flat_map(|w| w.slices())
        .filter_map(|s| s.sc_partition.as_deref())
        .map(|n| config.partition_index()[n])
        .collect();
    r.events
        .iter()
        .map(|(_, t)| t)
        .filter(|t| t.time_ms < until_ms)
        .filter(|t| match &t.event {
            Event::Init => false,
            Event::ProcessStart { proc, .. } | Event::ProcessEnd { proc, .. } => {
                sc.contains(&proc.partition)
            }
            _ => true,
        })
        .map(|t| format!("{} {:?}", t.time_ms, t.event))
        .collect()
}

#[test]
fn the_runs_events_are_demos_own_where_the_plan_states_the_sc_work() {
    let cases = [
        ("tests/vm/scenarios/demos/demos.yaml", 6),
        ("schedules/demos-example.yaml", 4),
        ("tests/demos/01-one-sc-budget-below-window.yaml", 5),
        ("tests/demos/03-two-sc-processes.yaml", 5),
        ("tests/demos/07-be-after-all-sc.yaml", 5),
    ];
    for (path, frames) in cases {
        let config = Config::from_file(&root().join(path)).unwrap();
        let all = CpuSet::first_n(4);
        let plan = imported(&config, all);
        let run = followed(&config, &plan, frames);
        let sim = simulated(&config, all, frames * config.major_frame_ms());
        assert!(run.len() > 10, "{path}: {} events", run.len());
        assert_eq!(run, sim, "{path}");
        assert_eq!(check_import(&config, &plan), Ok(()), "{path}");
    }
}

#[test]
fn the_follower_returns_each_event_once_at_its_slot() {
    let config = Config::from_file(&root().join("tests/vm/scenarios/demos/demos.yaml")).unwrap();
    let plan = imported(&config, CpuSet::from_cpus([1]));
    // 10 ms slots, frame 15 slots: windows at 0 and 10
    let mut f = Follower::new(frame_events(&config, &plan), plan.frame_slots);
    assert_eq!(f.next_slot(), Some(0));
    let first: Vec<u64> = f.until(0).iter().map(|e| e.0).collect();
    assert_eq!(first, [0, 0, 0]); // window start, SC start, SC1.0 starts
    assert!(f.until(0).is_empty());
    assert_eq!(f.next_slot(), Some(3));
    // skipping ahead (observations come in bursts) returns everything in between, in order
    let burst = f.until(31);
    let starts: Vec<u64> = burst
        .iter()
        .filter(|(_, e)| matches!(e, Event::WindowStart { .. }))
        .map(|e| e.0)
        .collect();
    assert_eq!(starts, [10, 15, 25, 30]);
    assert!(burst.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn messages_follow_demos_major_frame_then_window() {
    let ws = |w| Event::WindowStart { window: w };
    assert_eq!(messages(&ws(0), Some("win"), Some("mf")), ["mf", "win"]);
    assert_eq!(messages(&ws(1), Some("win"), Some("mf")), ["win"]);
    assert_eq!(messages(&ws(0), None, Some("mf")), ["mf"]);
    // an empty message is no message (DEmOS tests `empty()`)
    assert!(messages(&ws(0), Some(""), Some("")).is_empty());
    assert!(messages(&Event::ScStart { window: 0 }, Some("w"), Some("m")).is_empty());
}

#[test]
fn a_plan_that_is_not_the_import_is_refused_naming_the_field() {
    let config = Config::from_file(&root().join("tests/vm/scenarios/demos/demos.yaml")).unwrap();
    let plan = imported(&config, CpuSet::from_cpus([1]));
    // another configuration's plan
    let other = Config::from_yaml(
        "{windows: [{length: 100, cpu: 1, sc_processes: [{cmd: x, budget: 50}]},
                    {length: 50, cpu: 1, sc_processes: [{cmd: y, budget: 10}]}]}",
        Source::Inline,
    )
    .unwrap();
    let e = check_import(&other, &plan).unwrap_err();
    assert!(e.contains("tasks: the plan has SC1.0"), "{e}");
    // a different slot: the frame differs
    let mut p = plan.clone();
    p.slot_us = 5000;
    let e = check_import(&config, &p).unwrap_err();
    assert!(
        e.contains("frame_slots: the plan has 15, the import has 30"),
        "{e}"
    );
    // a moved table range
    let mut p = plan.clone();
    p.cpus[0].table[0].end -= 1;
    let e = check_import(&config, &p).unwrap_err();
    assert!(e.contains("table of CPU 1"), "{e}");
}
