//! The slot sequencer (crates/tt-core/src/demos/sequencer.rs) against the millisecond simulator
//! (crates/tt-core/src/demos/sim.rs) as the independent reference: with 1 ms slots and the same process
//! behaviour (the test plays the processes: `TT_SIM_WORK_MS=N` does N ms of work per job, then
//! its completion is reported for the slot it finished in), the same schedule log line for line
//! on every golden configuration, the worked example and generated configurations; and the lag
//! of a completion observed `lead` slots late.

use scx_tt::demos::rng::Mt19937;
use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{Config, Source};
use std::path::Path;

#[path = "demos/cases.rs"]
mod cases;
#[path = "demos/seq_play.rs"]
mod seq_play;
use cases::CASES;
use seq_play::{fixture, generated, sequence, simulate};

fn assert_same(name: &str, got: &str, expected: &str) {
    for (i, (a, b)) in got.lines().zip(expected.lines()).enumerate() {
        assert_eq!(
            a,
            b,
            "{name}: line {} differs\n--- sequencer\n{got}--- simulator\n{expected}",
            i + 1
        );
    }
    assert_eq!(
        got.lines().count(),
        expected.lines().count(),
        "{name}\n--- sequencer\n{got}--- simulator\n{expected}"
    );
}

#[test]
fn every_golden_schedule_is_sequenced_as_the_simulator_and_demos_log_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/demos");
    for &(name, until, seed) in CASES {
        let seed = seed.unwrap_or(Mt19937::DEFAULT_SEED);
        let c = fixture(name);
        let got = sequence(&c, until, seed, 0).log;
        assert_same(name, &got, &simulate(&c, until, seed));
        let golden = std::fs::read_to_string(path.join(format!("{name}.log"))).unwrap();
        assert_same(name, &got, &golden);
    }
}

#[test]
fn the_worked_example_is_sequenced_as_the_simulator_logs_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demos-example.yaml");
    let c = Config::from_file(&path).unwrap();
    let got = sequence(&c, 3000, 1, 0).log;
    assert!(got.lines().count() > 40, "{got}");
    assert_same("demos-example", &got, &simulate(&c, 3000, 1));
}

#[test]
fn generated_configurations_are_sequenced_as_the_simulator_logs_them() {
    let mut rng = Mt19937::new(20261127);
    let mut completions = 0;
    let mut be = 0;
    for case in 0..400 {
        let yaml = generated(&mut rng, case % 2 == 1);
        let c = Config::from_yaml(&yaml, Source::Inline).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let until = 3 * c.major_frame_ms() + case % 7;
        let seed = case as u32;
        let run = sequence(&c, until, seed, 0);
        assert_same(&yaml, &run.log, &simulate(&c, until, seed));
        completions += run.completions.len();
        be += run
            .log
            .lines()
            .filter(|l| l.contains(" be") || l.contains("'be"))
            .count();
    }
    // the cases exercise completions and BE runs
    assert!(completions > 1000, "{completions} completions");
    assert!(be > 1000, "{be} BE starts");
}

/// A completion reported `lead` slots late starts the next process `lead` slots late: the
/// table is written ahead. With lead 0 the start is the slot after the completion.
#[test]
fn a_late_completion_starts_the_next_process_lead_slots_later() {
    let c = Config::from_yaml(
        "{windows: [{length: 20, cpu: 0,
           sc_processes: [{cmd: 'TT_SIM_WORK_MS=3 a', budget: 8}, {cmd: b, budget: 4}],
           be_processes: [{cmd: c, budget: 30}]}]}",
        Source::Inline,
    )
    .unwrap();
    for lead in 0..4 {
        let run = sequence(&c, 19, 1, lead);
        // a completes in slot 2; b starts at 3 + lead, c after b's 4 slots
        let b = 3 + lead;
        let expected = format!(
            "     0: cpus=0 cmd='TT_SIM_WORK_MS=3 a' budget=8\n{b:6}: cpus=0 cmd='b' budget=4\n{:6}: cpus=0 cmd='c' budget=30\n",
            b + 4
        );
        assert_eq!(run.log, expected, "lead {lead}");
        // a (task 0) owns CPU 0 until b starts: its slots after the completion are the lag
        for (n, owners) in &run.owners {
            let want = if *n < b {
                0
            } else if *n < b + 4 {
                1
            } else {
                2
            };
            assert_eq!(owners[0], Some(want), "lead {lead} slot {n}");
            assert!(owners[1..].iter().all(|o| o.is_none()), "slot {n}");
        }
    }
}
