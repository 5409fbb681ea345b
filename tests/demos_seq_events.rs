//! The sequencer's DEmOS events (crates/tt-core/src/demos/sequencer.rs, "Events": what `-m`/`-M`/`-p` react
//! to in a sequenced kernel run) against `events_from_sim` (crates/tt-core/src/demos/power.rs) as the
//! independent reference: the event stream DEmOS's semantics imply for the millisecond
//! simulator's schedule log. With 1 ms slots and the test playing the processes
//! (tests/demos/seq_play.rs), every event at every slot before the time limit must be the
//! reference's, in the reference's order (window end, the processes it stops; window start,
//! SC start; SC process ends and starts; BE start; BE process ends and starts), on every
//! golden configuration, the worked example, the `per_process` fixture (frequency keys) and
//! generated configurations.

use scx_tt::demos::power::{events_from_sim, Event, Timed};
use scx_tt::demos::rng::Mt19937;
use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{self, Config, SimOptions, Source};
use std::path::Path;

#[path = "demos/cases.rs"]
mod cases;
#[path = "demos/seq_play.rs"]
mod seq_play;
use seq_play::{all, fixture, generated, sequence, simulate};

/// What was compared: events, BE starts, process ends.
#[derive(Default)]
struct Counts {
    events: usize,
    be_starts: usize,
    ends: usize,
}

/// The sequencer's events before slot `until` equal the reference's before `until` ms (the
/// simulator run to `until`: its events before the limit are complete), in order.
fn assert_same_events(name: &str, config: &Config, until: u64, seed: u32, n: &mut Counts) {
    let run = sequence(config, until, seed, 0);
    // the same schedule first (tests/demos_seq.rs), then its events
    assert_eq!(run.log, simulate(config, until, seed), "{name}");
    let got: Vec<(u64, Event)> = run.events.into_iter().filter(|e| e.0 < until).collect();
    let opts = SimOptions {
        all_cpus: all(),
        until_ms: until,
        seed,
    };
    let sim = demos::simulate(config, &opts).unwrap();
    let reference: Vec<(u64, Event)> = events_from_sim(config, &opts, &sim)
        .unwrap_or_else(|e| panic!("{name}: the reference: {e}"))
        .into_iter()
        .filter(|t| t.time_ms < until && t.event != Event::Init)
        .map(|Timed { time_ms, event }| (time_ms, event))
        .collect();
    if let Some(i) = (0..got.len().max(reference.len())).find(|&i| got.get(i) != reference.get(i)) {
        let around = |v: &[(u64, Event)]| -> String {
            v[i.saturating_sub(3)..(i + 4).min(v.len())]
                .iter()
                .map(|e| format!("  {e:?}\n"))
                .collect()
        };
        panic!(
            "{name} (until {until}, seed {seed}): event {i} differs\n--- sequencer\n{}--- \
             reference\n{}",
            around(&got),
            around(&reference)
        );
    }
    n.events += got.len();
    n.be_starts += got
        .iter()
        .filter(|e| matches!(e.1, Event::BeStart { .. }))
        .count();
    n.ends += got
        .iter()
        .filter(|e| matches!(e.1, Event::ProcessEnd { .. }))
        .count();
}

#[test]
fn golden_configurations_give_the_simulators_events_in_demos_order() {
    let mut n = Counts::default();
    for &(name, until, seed) in cases::CASES {
        let seed = seed.unwrap_or(Mt19937::DEFAULT_SEED);
        let c = fixture(name);
        for until in [until, 3 * until + 7] {
            assert_same_events(name, &c, until, seed, &mut n);
        }
    }
    println!("golden: {} events compared", n.events);
    assert!(n.events > 100 && n.be_starts > 10, "{} events", n.events);
}

#[test]
fn the_worked_example_and_per_process_frequencies_give_the_simulators_events() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = Counts::default();
    for (file, until) in [
        ("schedules/demos-example.yaml", 3000),
        ("tests/demos_power/per-process.yaml", 9000),
    ] {
        let c = Config::from_file(&root.join(file)).unwrap();
        assert_same_events(file, &c, until, Mt19937::DEFAULT_SEED, &mut n);
    }
    println!("worked example, per_process: {} events compared", n.events);
    assert!(n.events > 80, "{} events", n.events);
}

#[test]
fn generated_configurations_give_the_simulators_events() {
    let mut rng = Mt19937::new(20261128);
    let mut n = Counts::default();
    for case in 0..400 {
        let yaml = generated(&mut rng, case % 2 == 1);
        let c = Config::from_yaml(&yaml, Source::Inline).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let until = 3 * c.major_frame_ms() + case % 7;
        assert_same_events(&yaml, &c, until, case as u32, &mut n);
    }
    println!(
        "generated: {} events compared ({} BE starts, {} process ends)",
        n.events, n.be_starts, n.ends
    );
    assert!(n.be_starts > 500 && n.ends > 2000, "too few events");
}
