//! DEmOS's golden schedule cases (its test/0300-schedule.t) as fixtures in this folder:
//! (fixture, demos-sched -t in ms, DEMOS_RAND_SEED). Shared by tests/demos_golden.rs and
//! tests/demos_seq.rs (`#[path]`).

pub const CASES: &[(&str, u64, Option<u32>)] = &[
    ("01-one-sc-budget-below-window", 20, None),
    ("02-one-sc-budget-above-window", 20, None),
    ("03-two-sc-processes", 20, None),
    ("04-one-be-budget-below-window", 20, None),
    ("05-one-be-budget-above-window", 20, None),
    ("06-two-be-processes", 20, None),
    ("07-be-after-all-sc", 20, None),
    ("08-be-budget-continues", 20, None),
    ("09-maximum-jitter", 10, Some(2)),
];
