//! A DEmOS configuration → a scx_tt plan (`scx_tt plan import --demos`; docs/demos.md).
//!
//! - **Slot**: by default the gcd of every window length and every process's largest budget
//!   (`budget + jitter − jitter/2`), in ms, as µs; when that exceeds the plan's largest slot
//!   (1 s) the largest divisor of it that fits. `--slot-us N` must divide every one of them.
//! - **Frame**: the major frame (sum of the window lengths) in slots. Cap: the plan's frame cap,
//!   [`FRAME_CAP_SLOTS`] (1,000,000 slots), and managed CPUs × frame ≤
//!   [`MAX_CPU_FRAME_SLOTS`]; a finer slot is refused with both numbers in the message.
//! - **CPUs**: managed = every CPU of every slice (`all` = `ImportOptions::all_cpus`);
//!   housekeeping = the lowest CPU not managed.
//! - **SC processes** → `tt` tasks with explicit `jobs` and an explicit `table`: in each window
//!   where the partition is a slice's SC partition, its processes own consecutive slots from the
//!   window start, each its largest budget, clipped at the window end (DEmOS's nominal
//!   schedule), one job per window, window `[window start, window end)`.
//! - **BE processes** → `be` tasks on the partition's CPU.
//!
//! Not representable (each a warning; the plan is the closest faithful one):
//! - a `tt` task owns one CPU: a partition runs on the lowest CPU of the first slice it appears
//!   in (its *home*), the other CPUs of a multi-CPU slice are managed but left free (`be`
//!   work); an appearance in a slice without the home CPU is dropped;
//! - the SC sequence is static: a process that completes early leaves the rest of its slots to
//!   `be` work instead of starting the next process early;
//! - BE budgets, BE sequencing, carry-over and "BE only after all SC" are not in the plan
//!   format: `be` tasks run in any free slot of their CPU;
//! - jitter reserves the largest budget; `init` is not in the plan (a run with `--demos` gives
//!   the process its init phase before slot 0: `init_tasks`); a process whose budget
//!   never fits its window owns no slot and is left out.

use super::config::{Config, ConfigError, Process, Window};
use super::cpuset::CpuSet;
use super::sim::check_runnable;
use crate::plan::limits::MAX_CPU_FRAME_SLOTS;
use crate::plan::raw::{RawCpuTable, RawCpus, RawJob, RawPlan, RawRange, RawTask};
use crate::plan::timing::FRAME_CAP_SLOTS;
use crate::plan::Plan;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// The plan's slot range (µs).
pub const SLOT_US_MIN: u64 = 100;
pub const SLOT_US_MAX: u64 = 1_000_000;

#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// The slot (µs); default: the gcd of the lengths and budgets.
    pub slot_us: Option<u64>,
    /// What `cpu: all` means.
    pub all_cpus: CpuSet,
    /// With `set_cwd`: the directory the commands run in (the configuration file's).
    pub config_dir: Option<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct Imported {
    /// The plan as written (`plan.json`).
    pub raw: RawPlan,
    /// The same plan, validated by `Plan::try_from`.
    pub plan: Plan,
    pub warnings: Vec<String>,
    pub slot_us: u64,
    pub frame_slots: u64,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn err(path: &str, message: String) -> ConfigError {
    ConfigError {
        path: path.to_string(),
        message,
    }
}

/// Every time (ms) the slot must divide, with its YAML path.
fn times(config: &Config) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = config
        .windows
        .iter()
        .map(|w| (w.length, format!("{}.length", w.path)))
        .collect();
    for p in &config.partitions {
        for q in &p.processes {
            v.push((
                q.max_budget(),
                format!(
                    "{} (budget {} ms, jitter {} ms)",
                    q.path, q.budget, q.jitter
                ),
            ));
        }
    }
    v
}

/// The default slot: gcd of `times` in µs, or its largest divisor ≤ 1 s.
fn default_slot_us(times: &[(u64, String)]) -> u64 {
    let g_us = times.iter().fold(0, |g, (t, _)| gcd(g, *t)) * 1000;
    (1..=g_us)
        .filter(|k| g_us % k == 0)
        .map(|k| g_us / k)
        .find(|&s| s <= SLOT_US_MAX)
        .unwrap_or(1000)
}

fn quote_sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

pub fn import(config: &Config, opts: &ImportOptions) -> Result<Imported, ConfigError> {
    check_runnable(config)?;
    let times = times(config);
    let slot_us = choose_slot_us(opts, &times)?;
    let frame = frame_slots(config, opts, &times, slot_us)?;
    let mut im = Importer {
        config,
        opts,
        index: config.partition_index(),
        slot_us,
        warnings: Vec::new(),
    };
    let place = im.place()?;
    let (hk, managed_list) = housekeeping(place.managed, frame, slot_us)?;
    im.warn_sc_and_be(&place);
    let mut sc = im.sc_schedule(&place);
    let tasks = im.tasks(&place, &mut sc.jobs)?;
    let table = im.table(sc.ranges);
    let raw = RawPlan {
        version: Some(1),
        slot_us: Some(slot_us),
        frame_slots: Some(frame),
        cpus: Some(RawCpus {
            managed: Some(managed_list),
            housekeeping: Some(vec![hk]),
        }),
        tasks: Some(tasks),
        table: Some(table),
        server: None,
    };
    let plan = validated(&raw)?;
    Ok(Imported {
        raw,
        plan,
        warnings: im.warnings,
        slot_us,
        frame_slots: frame,
    })
}

/// The slot (µs): `--slot-us`, checked against the plan's range and `times`, or the default.
fn choose_slot_us(opts: &ImportOptions, times: &[(u64, String)]) -> Result<u64, ConfigError> {
    let Some(s) = opts.slot_us else {
        return Ok(default_slot_us(times));
    };
    if !(SLOT_US_MIN..=SLOT_US_MAX).contains(&s) {
        return Err(err(
            "--slot-us",
            format!("{s} must be in {SLOT_US_MIN}..={SLOT_US_MAX} (the plan's slot_us range)"),
        ));
    }
    if let Some((t, path)) = times.iter().find(|(t, _)| (t * 1000) % s != 0) {
        return Err(err(
            "--slot-us",
            format!("{s} us does not divide {path} = {t} ms: DEmOS times must be whole slots"),
        ));
    }
    Ok(s)
}

/// The major frame in slots of `slot_us`, refused above the plan's frame cap.
fn frame_slots(
    config: &Config,
    opts: &ImportOptions,
    times: &[(u64, String)],
    slot_us: u64,
) -> Result<u64, ConfigError> {
    let mf_ms = config.major_frame_ms();
    let frame = mf_ms * 1000 / slot_us;
    let gcd_ms = times.iter().fold(0, |g, (t, _)| gcd(g, *t));
    if frame > FRAME_CAP_SLOTS {
        return Err(err(
            "windows",
            format!(
                "the major frame of {mf_ms} ms is {frame} slots of {slot_us} us, above the plan's \
                 cap of {FRAME_CAP_SLOTS} slots: the slot ({}) is too fine for this frame; the gcd \
                 of the window lengths and budgets is {gcd_ms} ms",
                if opts.slot_us.is_some() {
                    "--slot-us"
                } else {
                    "the gcd"
                }
            ),
        ));
    }
    Ok(frame)
}

/// The housekeeping CPU (the lowest CPU not managed) and the managed CPUs in order, refused
/// when no CPU is left or managed CPUs × frame exceed the plan's limit.
fn housekeeping(managed: CpuSet, frame: u64, slot_us: u64) -> Result<(u32, Vec<u32>), ConfigError> {
    let Some(hk) = (0..256u32).find(|c| !managed.contains(*c)) else {
        return Err(err(
            "windows",
            "every CPU is managed: no housekeeping CPU left".into(),
        ));
    };
    let managed_list: Vec<u32> = managed.iter().collect();
    if managed_list.len() as u64 * frame > MAX_CPU_FRAME_SLOTS {
        return Err(err(
            "windows",
            format!(
                "{} managed CPUs × {frame} slots exceed the plan's limit of {MAX_CPU_FRAME_SLOTS} \
                 CPU slots: the slot of {slot_us} us is too fine",
                managed_list.len()
            ),
        ));
    }
    Ok((hk, managed_list))
}

/// `raw` validated by `Plan::try_from`; an invalid plan is an error naming every problem.
fn validated(raw: &RawPlan) -> Result<Plan, ConfigError> {
    Plan::try_from(raw.clone()).map_err(|errs| {
        err(
            "",
            format!(
                "the imported plan is invalid (a bug or a limit of the plan format): {}",
                errs.iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        )
    })
}

/// Where the partitions run: the managed CPUs, each partition's home CPU and its roles.
struct Placement {
    managed: CpuSet,
    home: Vec<Option<u32>>,
    is_sc: Vec<bool>,
    is_be: Vec<bool>,
}

/// The SC jobs of each partition's processes and the table ranges of each CPU
/// (start, end, partition, process).
struct ScSchedule {
    jobs: Vec<Vec<Vec<RawJob>>>,
    ranges: BTreeMap<u32, Vec<(u64, u64, usize, usize)>>,
}

/// An import under way: the configuration, the options, the slot and the warnings so far.
struct Importer<'a> {
    config: &'a Config,
    opts: &'a ImportOptions,
    index: HashMap<&'a str, usize>,
    slot_us: u64,
    warnings: Vec<String>,
}

impl Importer<'_> {
    /// `ms` in slots.
    fn per_ms(&self, ms: u64) -> u64 {
        ms * 1000 / self.slot_us
    }

    /// The task name of process `k` of partition `i`: `PARTITION.k`.
    fn name(&self, i: usize, k: usize) -> String {
        format!("{}.{k}", self.config.partitions[i].name)
    }

    /// A task's command: `/bin/sh -c` the process's command, in the configuration's directory
    /// with `set_cwd`.
    fn cmd(&self, c: &str) -> Vec<String> {
        let cwd = if self.config.set_cwd {
            self.opts.config_dir.as_ref()
        } else {
            None
        };
        let line = match cwd {
            Some(d) => format!("cd {} && {c}", quote_sh(&d.display().to_string())),
            None => c.to_string(),
        };
        vec!["/bin/sh".into(), "-c".into(), line]
    }

    /// Adds `warning` unless it was given already.
    fn warn_once(&mut self, warning: String) {
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// CPUs and each partition's home CPU (lowest CPU of its first slice).
    fn place(&mut self) -> Result<Placement, ConfigError> {
        let config = self.config;
        let n = config.partitions.len();
        let mut place = Placement {
            managed: CpuSet::EMPTY,
            home: vec![None; n],
            is_sc: vec![false; n],
            is_be: vec![false; n],
        };
        for w in &config.windows {
            for s in w.slices() {
                let cpus = s.cpus(self.opts.all_cpus);
                let Some(low) = cpus.lowest() else {
                    return Err(err(
                        &format!("{}.cpu", s.path),
                        format!(
                            "'{}' selects no CPU (all = '{}')",
                            s.cpu, self.opts.all_cpus
                        ),
                    ));
                };
                place.managed = place.managed.or(cpus);
                for (p, sc) in [(&s.sc_partition, true), (&s.be_partition, false)] {
                    if let Some(p) = p {
                        let i = self.index[p.as_str()];
                        place.home[i].get_or_insert(low);
                        if sc {
                            place.is_sc[i] = true;
                        } else {
                            place.is_be[i] = true;
                        }
                        if cpus.count() > 1 && place.home[i] == Some(low) {
                            self.warn_once(format!(
                                "{}.cpu: slice CPUs '{cpus}': partition '{p}' runs on CPU {low} \
                                 only (a tt task owns one CPU); the others are managed but free",
                                s.path
                            ));
                        }
                    }
                }
            }
        }
        Ok(place)
    }

    /// A warning for each partition that is both SC and BE (imported as SC).
    fn warn_sc_and_be(&mut self, place: &Placement) {
        for (i, p) in self.config.partitions.iter().enumerate() {
            if place.is_sc[i] && place.is_be[i] {
                self.warnings.push(format!(
                    "{}: partition '{}' is both SC and BE: imported as SC only",
                    p.path, p.name
                ));
            }
        }
    }

    /// SC jobs and table ranges; an appearance of a partition in a slice without its home CPU
    /// is dropped (a warning).
    fn sc_schedule(&mut self, place: &Placement) -> ScSchedule {
        let config = self.config;
        let mut sc = ScSchedule {
            jobs: config
                .partitions
                .iter()
                .map(|p| vec![Vec::new(); p.processes.len()])
                .collect(),
            ranges: BTreeMap::new(),
        };
        let mut start_ms = 0;
        for w in &config.windows {
            let end_ms = start_ms + w.length;
            for s in w.slices() {
                let cpus = s.cpus(self.opts.all_cpus);
                for (p, is_sc) in [(&s.sc_partition, true), (&s.be_partition, false)] {
                    let Some(p) = p else { continue };
                    let i = self.index[p.as_str()];
                    let h = place.home[i].expect("set above");
                    if !cpus.contains(h) {
                        self.warnings.push(format!(
                            "{}: partition '{p}' runs on CPU {h} elsewhere, not in this slice's \
                             CPUs '{cpus}': this appearance is dropped",
                            s.path
                        ));
                        continue;
                    }
                    if is_sc {
                        self.sc_window(&mut sc, w, (start_ms, end_ms), i, h);
                    }
                }
            }
            start_ms = end_ms;
        }
        sc
    }

    /// SC partition `i` in window `w` (`[start_ms, end_ms)`) on CPU `h`: its processes own
    /// consecutive slots from the window start, each its largest budget, clipped at the end.
    fn sc_window(
        &mut self,
        sc: &mut ScSchedule,
        w: &Window,
        (start_ms, end_ms): (u64, u64),
        i: usize,
        h: u32,
    ) {
        let config = self.config;
        let mut t = start_ms;
        for (k, q) in config.partitions[i].processes.iter().enumerate() {
            let until = (t + q.max_budget()).min(end_ms);
            if t + q.max_budget() > end_ms {
                self.warnings.push(format!(
                    "{}: in {} ({} ms), SC process '{}' gets {} of its {} ms: the \
                     partition does not fit the window",
                    q.path,
                    w.path,
                    w.length,
                    q.cmd,
                    until - t,
                    q.max_budget()
                ));
            }
            if until > t {
                sc.jobs[i][k].push(RawJob {
                    release: Some(self.per_ms(start_ms)),
                    deadline: Some(self.per_ms(end_ms)),
                    wcet: Some(self.per_ms(until - t)),
                });
                sc.ranges
                    .entry(h)
                    .or_default()
                    .push((self.per_ms(t), self.per_ms(until), i, k));
            }
            t = until;
        }
    }

    /// The tasks: each process of a placed partition, SC as `tt`, BE as `be`; an error when
    /// there is none.
    fn tasks(
        &mut self,
        place: &Placement,
        jobs: &mut [Vec<Vec<RawJob>>],
    ) -> Result<Vec<RawTask>, ConfigError> {
        let config = self.config;
        let mut tasks = Vec::new();
        for (i, p) in config.partitions.iter().enumerate() {
            let Some(h) = place.home[i] else { continue };
            for (k, q) in p.processes.iter().enumerate() {
                self.warn_not_in_plan(q);
                if let Some(task) = self.task(place.is_sc[i], i, k, h, &mut jobs[i][k]) {
                    tasks.push(task);
                }
            }
            if !place.is_sc[i] && !p.processes.is_empty() {
                self.warnings.push(format!(
                    "{}: BE partition '{}': budgets, sequencing and carry-over are not in the plan \
                     format; its processes are be tasks on CPU {h} (any free slot; a sequenced run, \
                     --planner with --demos, gives them their DEmOS turns)",
                    p.path, p.name
                ));
            }
        }
        if tasks.is_empty() {
            return Err(err(
                "windows",
                "no process is scheduled in any window: nothing to import".into(),
            ));
        }
        Ok(tasks)
    }

    /// Warnings for a process's `init` and `jitter`, which the plan does not represent.
    fn warn_not_in_plan(&mut self, q: &Process) {
        if q.init {
            self.warnings.push(format!(
                "{}.init: the plan has no init phase; a run with --demos gives it one before \
                 slot 0, until the process stops itself (docs/demos.md, Initialisation)",
                q.path
            ));
        }
        if q.jitter > 0 {
            self.warnings.push(format!(
                "{}.jitter: the plan reserves the largest budget, {} ms",
                q.path,
                q.max_budget()
            ));
        }
    }

    /// Process `k` of partition `i` as a task on CPU `h`: `tt` with its `jobs` when SC (none,
    /// with a warning, when it never fits its windows), else `be`.
    fn task(
        &mut self,
        is_sc: bool,
        i: usize,
        k: usize,
        h: u32,
        jobs: &mut Vec<RawJob>,
    ) -> Option<RawTask> {
        let q = &self.config.partitions[i].processes[k];
        if !is_sc {
            return Some(RawTask {
                name: Some(self.name(i, k)),
                cmd: Some(self.cmd(&q.cmd)),
                class: Some("be".into()),
                cpu: Some(h),
                ..RawTask::default()
            });
        }
        if jobs.is_empty() {
            self.warnings.push(format!(
                "{}: SC process '{}' never fits its windows: left out of the plan",
                q.path, q.cmd
            ));
            return None;
        }
        Some(RawTask {
            name: Some(self.name(i, k)),
            cmd: Some(self.cmd(&q.cmd)),
            class: Some("tt".into()),
            cpu: Some(h),
            jobs: Some(std::mem::take(jobs)),
            ..RawTask::default()
        })
    }

    /// The table: each CPU's SC ranges, owned by their processes' tasks.
    fn table(&self, ranges: BTreeMap<u32, Vec<(u64, u64, usize, usize)>>) -> Vec<RawCpuTable> {
        ranges
            .into_iter()
            .map(|(cpu, rs)| RawCpuTable {
                cpu: Some(cpu),
                ranges: Some(
                    rs.into_iter()
                        .map(|(a, b, i, k)| RawRange {
                            start: Some(a),
                            end: Some(b),
                            task: Some(self.name(i, k)),
                        })
                        .collect(),
                ),
            })
            .collect()
    }
}

/// The plan of a sequenced kernel run (`scx_tt --table plan.json --planner POLICY --demos
/// config.yaml`, docs/demos.md "Sequenced kernel run"), from the import of `config`: each BE
/// process (the import's `be` task `PARTITION.k`, on its partition's CPU) becomes a slot owner
/// — class `tt` with no static slot, its job's end its command's default (`yield`) like an SC
/// process's — so that the sequencer hands it its BE turns: it runs in them only, one BE
/// process of a CPU at a time, stopped at its budget, never before the window's SC work is
/// done (DEmOS freezes it outside them). Tasks the configuration does not name are left as
/// they are. Returns the names of the tasks changed.
pub fn sequenced_plan(plan: &mut Plan, config: &Config) -> Vec<String> {
    let named: std::collections::BTreeSet<String> = config
        .partitions
        .iter()
        .flat_map(|p| (0..p.processes.len()).map(move |k| format!("{}.{k}", p.name)))
        .collect();
    let mut changed = Vec::new();
    for t in plan.tasks.iter_mut() {
        if t.class == crate::plan::Class::Be && t.cpu.is_some() && named.contains(&t.name) {
            t.class = crate::plan::Class::Tt;
            t.completion = crate::plan::Completion::default_for(&t.selector);
            changed.push(t.name.clone());
        }
    }
    changed
}

/// The plan tasks (indexes) of `config`'s processes with `init: yes`: the run's start-up waits
/// for each to end its initialisation (docs/demos.md, "Initialisation").
pub fn init_tasks(config: &Config, plan: &Plan) -> Vec<usize> {
    config
        .partitions
        .iter()
        .flat_map(|p| {
            p.processes
                .iter()
                .enumerate()
                .filter(|(_, q)| q.init)
                .map(move |(k, _)| format!("{}.{k}", p.name))
        })
        .filter_map(|name| plan.tasks.iter().position(|t| t.name == name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Class, Completion};

    const YAML: &str = "\
partitions:
  - name: SC1
    processes:
      - {cmd: sc1a, budget: 10}
  - name: BE1
    processes:
      - {cmd: be1, budget: 20}
      - {cmd: be2, budget: 20, init: yes}
windows:
  - length: 50
    slices:
      - {cpu: 1, sc_partition: SC1, be_partition: BE1}
";

    #[test]
    fn a_sequenced_run_makes_be_processes_slot_owners_and_leaves_the_rest() {
        let config = Config::from_yaml(YAML, super::super::config::Source::Inline).expect("config");
        let opts = ImportOptions {
            slot_us: None,
            all_cpus: CpuSet::from_cpus([1]),
            config_dir: None,
        };
        let imported = import(&config, &opts).expect("import");
        assert!(imported
            .warnings
            .iter()
            .any(|w| w.contains("partitions[1].processes[1].init: the plan has no init phase")));
        let mut plan = imported.plan;
        assert_eq!(init_tasks(&config, &plan), [2]);
        // a be task the configuration does not name stays be
        let mut other = plan.tasks[0].clone();
        other.name = "bg".into();
        other.class = Class::Be;
        other.completion = Completion::None;
        plan.tasks.push(other);
        let before: Vec<(String, Class)> = plan
            .tasks
            .iter()
            .map(|t| (t.name.clone(), t.class))
            .collect();
        assert_eq!(
            before,
            [
                ("SC1.0".to_string(), Class::Tt),
                ("BE1.0".to_string(), Class::Be),
                ("BE1.1".to_string(), Class::Be),
                ("bg".to_string(), Class::Be),
            ]
        );
        let changed = sequenced_plan(&mut plan, &config);
        assert_eq!(changed, ["BE1.0", "BE1.1"]);
        for t in &plan.tasks[1..3] {
            assert_eq!(
                (t.class, t.completion, t.cpu),
                (Class::Tt, Completion::Yield, Some(1))
            );
        }
        assert_eq!(
            (plan.tasks[3].class, plan.tasks[3].completion),
            (Class::Be, Completion::None)
        );
        // the sequencer now gives the BE processes their turns on CPU 1
        let mut seq = super::super::sequencer::Sequencer::for_plan(
            &config,
            &plan,
            CpuSet::from_cpus([1]),
            super::super::rng::Mt19937::DEFAULT_SEED,
        )
        .expect("sequencer");
        let owners: Vec<Option<u32>> = (0..plan.frame_slots)
            .map(|_| seq.decide().owners[0])
            .collect();
        assert_eq!(plan.slot_us, 10_000);
        assert_eq!(owners, [Some(0), Some(1), Some(1), Some(2), Some(2)]);
        assert!(sequenced_plan(&mut plan, &config).is_empty());
        // the run checks the plan against the configuration again (`follow::check_import`)
        plan.tasks.pop();
        assert_eq!(super::super::follow::check_import(&config, &plan), Ok(()));
        plan.tasks[2].class = Class::Be;
        assert!(super::super::follow::check_import(&config, &plan).is_err());
    }
}
