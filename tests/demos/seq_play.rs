//! Playing a sequenced run for tests (`#[path]`, shared by tests/demos_seq.rs and
//! tests/demos_seq_events.rs): the sequencer with 1 ms slots, the test playing the processes
//! (`TT_SIM_WORK_MS=N`: N ms of work per job, its completion reported for the slot it
//! finished in), the simulator it is compared with, and generated configurations.

use scx_tt::demos::power::{Event, ProcId};
use scx_tt::demos::rng::Mt19937;
use scx_tt::demos::sequencer::{SeqOptions, Sequencer, TaskRef};
use scx_tt::demos::{self, Config, CpuSet, SimOptions, Source};
use std::collections::VecDeque;
use std::path::Path;

pub fn all() -> CpuSet {
    CpuSet::first_n(8)
}

/// Every process its own task on the lowest CPU of the first slice it appears in.
pub fn tasks(config: &Config) -> (Vec<u32>, Vec<Vec<Option<TaskRef>>>) {
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
pub struct Run {
    pub log: String,
    /// (slot, owners) of every slot.
    pub owners: Vec<(u64, Vec<Option<u32>>)>,
    /// (completion slot, process) of every completion reported.
    pub completions: Vec<(u64, ProcId)>,
    /// (slot, event) of every event decided.
    pub events: Vec<(u64, Event)>,
}

/// Runs the sequencer with 1 ms slots over slots `0..=until`, playing the processes
/// (`TT_SIM_WORK_MS`) and reporting each completion `lead` slots after the slot it happened in.
/// Log lines at `until` are kept only when a window starts there (`demos-sched -t`).
pub fn sequence(config: &Config, until: u64, seed: u32, lead: u64) -> Run {
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
        events: Vec::new(),
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
        run.events.extend(d.events.into_iter().map(|e| (n, e)));
        run.owners.push((n, d.owners));
    }
    run
}

pub fn simulate(config: &Config, until: u64, seed: u32) -> String {
    let opts = SimOptions {
        all_cpus: all(),
        until_ms: until,
        seed,
    };
    demos::render_log(&demos::simulate(config, &opts).unwrap().log)
}

pub fn fixture(name: &str) -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/demos");
    let text = std::fs::read_to_string(path.join(format!("{name}.yaml"))).unwrap();
    Config::from_yaml(&text, Source::Inline).unwrap()
}

/// A random configuration: 1-3 windows of 1-3 slices on distinct CPUs, SC partitions of 0-3
/// processes, BE partitions of 0-2 (some shared between windows for carry-over), budgets
/// 1-12 ms, some with `TT_SIM_WORK_MS` 1-10, some with jitter.
pub fn generated(rng: &mut Mt19937, jitter: bool) -> String {
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
