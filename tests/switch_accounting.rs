//! Accounting across a table switch (docs/control.md, "Switch semantics" 5): slot records carry
//! the owner of the table in force, so planned time, delivery and the timeline follow the
//! switch with no notion of "the" table. Records are generated from the VM test's plans
//! (tests/vm/plans/switch_a.json, then switch_b.json from slot 24), as the BPF scheduler would
//! emit them when every owner and be task uses its whole slot.

use scx_tt::accounting::{
    render_summary, Accounting, ExitReason, RunFacts, SlotSample, TaskInfo, TaskState,
};
use scx_tt::plan::{self, Plan};
use scx_tt::sched::config::SchedConfig;
use std::collections::BTreeMap;

const SLOT: u64 = 10_000_000;
const SWITCH_SLOT: u64 = 24;
const END_SLOT: u64 = 32;

fn load(file: &str) -> (Plan, SchedConfig) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vm/scenarios/switch")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let plan = plan::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let cfg = SchedConfig::from_plan(&plan, 500, &[0, 1]).unwrap_or_else(|e| panic!("{e}"));
    (plan, cfg)
}

/// A full slot: the owner ran all of it, or be-c (task 2) ran all of a free slot.
fn sample(cfg: &SchedConfig, slot: u64) -> SlotSample {
    let owner = cfg.owner(0, slot);
    SlotSample {
        slot,
        cpu: 1,
        owner,
        owner_ns: if owner.is_some() { SLOT } else { 0 },
        be_ns: if owner.is_some() { 0 } else { SLOT },
        be_top: Some(2),
        ..Default::default()
    }
}

fn run() -> (String, scx_tt::accounting::Summary) {
    let (plan, a) = load("switch_a.json");
    let (_, b) = load("switch_b.json");
    let infos = TaskInfo::of_plan(&plan);
    let mut acc = Accounting::new(SLOT, infos, &[1], END_SLOT as usize);
    for slot in 0..END_SLOT {
        let cfg = if slot < SWITCH_SLOT { &a } else { &b };
        acc.add(&sample(cfg, slot));
    }
    let facts = RunFacts {
        duration_ns: END_SLOT * SLOT,
        exit: ExitReason::Duration,
        tids: vec![vec![10], vec![11], vec![12]],
        states: vec![TaskState::Running; 3],
        task_counters: Vec::new(),
        cpu_counters: BTreeMap::new(),
        prog_stats: Vec::new(),
    };
    let summary = acc.summary(&facts);
    let text = render_summary(&acc, &summary);
    (text, summary)
}

#[test]
fn planned_time_adds_the_slots_of_each_table_while_it_was_in_force() {
    let (_, s) = run();
    // A per frame: tt-a 3 slots, tt-b 2; B: tt-a 2, tt-b 3. Three frames of A, one of B.
    let planned: Vec<(String, u64)> = s
        .tasks
        .iter()
        .map(|t| (t.name.clone(), t.planned_ns / SLOT))
        .collect();
    assert_eq!(
        planned,
        vec![
            ("tt-a".into(), 3 * 3 + 2),
            ("tt-b".into(), 3 * 2 + 3),
            ("be-c".into(), 0)
        ]
    );
    for t in s.tasks.iter().filter(|t| t.planned_ns > 0) {
        assert_eq!(
            t.delivered_ns, t.planned_ns,
            "{}: every owned slot ran fully",
            t.name
        );
    }
}

#[test]
fn the_timeline_shows_the_old_pattern_then_the_new_one_from_the_switch_slot() {
    let (text, _) = run();
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("cpu   1 |"))
        .unwrap_or_else(|| panic!("no timeline row in\n{text}"));
    // T = tt-a, A = tt-b, b = be-c (see the legend); A: a a a b b . . .  B: b b b . a a . .
    let want = format!("|{}{}|", "TTTAAbbb".repeat(3), "AAAbTTbb");
    assert!(row.ends_with(&want), "{row}\nwant {want}\n{text}");
    assert!(text.contains("T=tt-a A=tt-b b=be-c"), "{text}");
}
