//! The slot sequencer (src/demos/sequencer.rs) against the millisecond simulator
//! (src/demos/sim.rs) as the independent reference: with 1 ms slots and the same process
//! behaviour (the test plays the processes: `TT_SIM_WORK_MS=N` does N ms of work per job, then
//! its completion is reported for the slot it finished in), the same schedule log line for line
//! on every golden configuration, the worked example and generated configurations; and the lag
//! of a completion observed `lead` slots late.

use scx_tt::demos::power::ProcId;
use scx_tt::demos::rng::Mt19937;
use scx_tt::demos::sequencer::{SeqOptions, Sequencer, TaskRef};
use scx_tt::demos::{self, Config, CpuSet, SimOptions, Source};
use std::collections::VecDeque;
use std::path::Path;

#[path = "demos/cases.rs"]
mod cases;
use cases::CASES;

fn all() -> CpuSet {
    CpuSet::first_n(8)
}

/// Every process its own task on the lowest CPU of the first slice it appears in.
fn tasks(config: &Config) -> (Vec<u32>, Vec<Vec<Option<TaskRef>>>) {
    let index = config.partition_index();
    let mut home = vec![None; config.partitions.len()];
    for w in &config.windows {
        for s in w.slices() {
            for p in [&s.sc_partition, &s.be_partition].into_iter().flatten() {
                home[index[p.as_str()]].get_or_insert(s.cpus(all()).lowest().unwrap());
            }
        }
    }
    let mut n = 0;
    let tasks = config
        .partitions
        .iter()
        .enumerate()
        .map(|(p, part)| {
            part.processes
                .iter()
                .map(|_| {
                    n += 1;
                    home[p].map(|cpu| TaskRef { task: n - 1, cpu })
                })
                .collect()
        })
        .collect();
    (all().iter().collect(), tasks)
}

/// What the test observed of a sequenced run.
struct Run {
    log: String,
    /// (slot, owners) of every slot.
    owners: Vec<(u64, Vec<Option<u32>>)>,
    /// (completion slot, process) of every completion reported.
    completions: Vec<(u64, ProcId)>,
}

/// Runs the sequencer with 1 ms slots over slots `0..=until`, playing the processes
/// (`TT_SIM_WORK_MS`) and reporting each completion `lead` slots after the slot it happened in.
/// Log lines at `until` are kept only when a window starts there (`demos-sched -t`).
fn sequence(config: &Config, until: u64, seed: u32, lead: u64) -> Run {
    let (managed, tasks) = tasks(config);
    let opts = SeqOptions {
        all_cpus: all(),
        slot_us: 1000,
        seed,
    };
    let mut seq = Sequencer::new(config, &opts, &managed, &tasks).unwrap();
    let models = demos::sim::process_models(config);
    let mut progress: Vec<Vec<u64>> = models.iter().map(|m| vec![0; m.len()]).collect();
    let mut pending: VecDeque<(u64, ProcId)> = VecDeque::new();
    let mut window_starts = vec![0];
    while *window_starts.last().unwrap() <= until {
        for w in &config.windows {
            let last = *window_starts.last().unwrap();
            window_starts.push(last + w.length);
        }
    }
    let mut run = Run {
        log: String::new(),
        owners: Vec::new(),
        completions: Vec::new(),
    };
    for n in 0..=until {
        while pending.front().is_some_and(|&(s, _)| s + lead < n) {
            let (s, proc) = pending.pop_front().unwrap();
            seq.complete(proc, s);
        }
        assert_eq!(seq.now(), n);
        let d = seq.decide();
        assert_eq!(d.slot, n);
        for l in &d.log {
            if n < until || window_starts.contains(&n) {
                run.log.push_str(&format!("{l}\n"));
            }
        }
        for p in &d.running {
            let work = models[p.partition][p.process].work_ms;
            let done = &mut progress[p.partition][p.process];
            *done += 1;
            if work.is_some_and(|w| *done >= w) {
                *done = 0;
                pending.push_back((n, *p));
                run.completions.push((n, *p));
            }
        }
        run.owners.push((n, d.owners));
    }
    run
}

fn simulate(config: &Config, until: u64, seed: u32) -> String {
    let opts = SimOptions {
        all_cpus: all(),
        until_ms: until,
        seed,
    };
    demos::render_log(&demos::simulate(config, &opts).unwrap().log)
}

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

fn fixture(name: &str) -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/demos");
    let text = std::fs::read_to_string(path.join(format!("{name}.yaml"))).unwrap();
    Config::from_yaml(&text, Source::Inline).unwrap()
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

/// A random configuration: 1-3 windows of 1-3 slices on distinct CPUs, SC partitions of 0-3
/// processes, BE partitions of 0-2 (some shared between windows for carry-over), budgets
/// 1-12 ms, some with `TT_SIM_WORK_MS` 1-10, some with jitter.
fn generated(rng: &mut Mt19937, jitter: bool) -> String {
    let mut r = |lo: i64, hi: i64| rng.uniform(lo, hi) as u64;
    let mut parts = String::new();
    let mut windows = String::new();
    let nbe = r(1, 2);
    let proc = |name: &str, r: &mut dyn FnMut(i64, i64) -> u64| -> String {
        let cmd = if r(0, 2) > 0 {
            format!("TT_SIM_WORK_MS={} {name}", r(1, 10))
        } else {
            name.to_string()
        };
        let j = if jitter && r(0, 3) == 0 { r(0, 4) } else { 0 };
        format!("{{cmd: '{cmd}', budget: {}, jitter: {j}}}", r(1, 12) + j)
    };
    for b in 0..nbe {
        let procs: Vec<String> = (0..r(1, 2))
            .map(|k| proc(&format!("be{b}_{k}"), &mut r))
            .collect();
        parts.push_str(&format!(
            "  - {{name: BE{b}, processes: [{}]}}\n",
            procs.join(", ")
        ));
    }
    let mut sc = 0;
    for _ in 0..r(1, 3) {
        let mut slices = Vec::new();
        for cpu in 0..r(1, 3) {
            let mut s = format!("{{cpu: {cpu}");
            if r(0, 3) > 0 {
                let procs: Vec<String> = (0..r(1, 3))
                    .map(|k| proc(&format!("sc{sc}_{k}"), &mut r))
                    .collect();
                parts.push_str(&format!(
                    "  - {{name: SC{sc}, processes: [{}]}}\n",
                    procs.join(", ")
                ));
                s.push_str(&format!(", sc_partition: SC{sc}"));
                sc += 1;
            }
            // a BE partition runs on one CPU across windows (its home)
            if cpu < nbe && r(0, 2) > 0 {
                s.push_str(&format!(", be_partition: BE{cpu}"));
            }
            slices.push(s + "}");
        }
        windows.push_str(&format!(
            "  - {{length: {}, slices: [{}]}}\n",
            r(2, 25),
            slices.join(", ")
        ));
    }
    format!("partitions:\n{parts}windows:\n{windows}")
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
