//! The run's statistics in scx's format: the `scx_stats` metrics a running `scx_tt --table`
//! serves on its stats socket (scx's conventional `/var/run/scx/root/stats`, or
//! `--stats-socket PATH`), `scx_tt --monitor SECS` reads, `--stats SECS` prints and
//! `--help-stats` lists (docs/run-output.md, "Statistics").
//!
//! [`Metrics`] is built from the same [`Summary`] as the exit summary and its JSON, so the
//! three never disagree; [`Metrics::line`] is the `--stats` line. Units are in the field names
//! (`_ns`, `_us`, `_mhz`, `_j`) and in each field's description.

use crate::accounting::{residency_text, Summary, TaskState};
use scx_stats::prelude::*;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// scx's conventional stats socket path (`scx_stats`' default: base `/var/run/scx`, scheduler
/// `root`, socket `stats`), the one `scx_tt --monitor` and scx's own tools look at.
pub const DEFAULT_STATS_SOCKET: &str = "/var/run/scx/root/stats";

/// One managed CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "a managed CPU")]
pub struct CpuMetrics {
    #[stat(desc = "slot ticks recorded (slots)")]
    pub ticks: u64,
    #[stat(desc = "slot tick lateness, median (ns)")]
    pub late_p50_ns: i64,
    #[stat(desc = "slot tick lateness, 99th percentile (ns)")]
    pub late_p99_ns: i64,
    #[stat(desc = "slot tick lateness, maximum (ns)")]
    pub late_max_ns: i64,
    #[stat(desc = "time anything but the slot's owner ran in owned slots (ns)")]
    pub stolen_ns: u64,
    #[stat(desc = "of stolen: kernel threads (ns)")]
    pub kthread_ns: u64,
    #[stat(desc = "of stolen: threads that are not the plan's (ns)")]
    pub foreign_ns: u64,
    #[stat(desc = "guard-band events: one guard band before each boundary that ends a run")]
    pub guard_events: u64,
    #[stat(desc = "guard-band events that fired after the boundary they guard")]
    pub guard_late: u64,
    #[stat(desc = "guard-band events that found the ending owner running and stopped it")]
    pub guard_stops: u64,
    #[stat(desc = "slot records lost in the ring buffer")]
    pub record_drops: u64,
    #[stat(desc = "mean requested frequency over the recorded slots (MHz; 0 without a model)")]
    pub freq_avg_mhz: f64,
    #[stat(desc = "frequency residency: time share per requested P-state (text)")]
    pub freq_residency: String,
}

/// One task of the plan, or admitted at run time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "a task")]
pub struct TaskMetrics {
    #[stat(desc = "tt or be")]
    pub class: String,
    #[stat(desc = "its CPU (-1: none, e.g. a be task that may run on any)")]
    pub cpu: i64,
    #[stat(desc = "running, exited or not_found")]
    pub state: String,
    #[stat(desc = "owner time planned so far (ns)")]
    pub planned_ns: u64,
    #[stat(desc = "owner time it ran in its own slots (ns)")]
    pub delivered_ns: u64,
    #[stat(desc = "time it ran outside its own slots (ns)")]
    pub outside_ns: u64,
    #[stat(desc = "time it ran in all (ns)")]
    pub run_ns: u64,
    #[stat(desc = "jobs ended early by the task's completion rule")]
    pub jobs_done: u64,
    #[stat(desc = "of jobs_done: jobs that overran and ended in the next job's slots")]
    pub jobs_carried: u64,
    #[stat(
        desc = "adaptive task: learning, reserved, compressed or best-effort (empty: not adaptive)"
    )]
    pub adaptive_state: String,
    #[stat(desc = "adaptive task: the last inferred period, 0 before the first (us)")]
    pub adaptive_period_us: u64,
    #[stat(desc = "adaptive task: its reservation's period (slots; 0: no reservation)")]
    pub reservation_period_slots: u64,
    #[stat(desc = "adaptive task: its reservation's WCET per period (slots; 0: no reservation)")]
    pub reservation_wcet_slots: u64,
}

/// The top level: the run so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top, desc = "scx_tt: the run so far")]
pub struct Metrics {
    #[stat(desc = "time since the run started (s)")]
    pub uptime_s: f64,
    #[stat(desc = "slot length (us)")]
    pub slot_us: u64,
    #[stat(desc = "the table in force (its file name)")]
    pub table: String,
    #[stat(desc = "planner mode's policy (bss, dvfs, dpm, dpm+dvfs), empty without --planner")]
    pub policy: String,
    #[stat(desc = "planner mode: slots the planner decided only after they had started")]
    pub planner_late_slots: u64,
    #[stat(
        desc = "planner mode: slots decided in time whose entries were written after they \
                   had started (they ran the entries before)"
    )]
    pub planner_late_writes: u64,
    #[stat(desc = "planner mode: admissions accepted (firm jobs, periodic tasks, VMs)")]
    pub admissions_accepted: u64,
    #[stat(desc = "planner mode: admissions rejected by the acceptance test")]
    pub admissions_rejected: u64,
    #[stat(desc = "table switches written")]
    pub table_switches: u64,
    #[stat(desc = "energy since the start (J); see energy_source")]
    pub energy_j: f64,
    #[stat(
        desc = "where energy_j comes from: measured (RAPL zones), estimated (model), or unavailable"
    )]
    pub energy_source: String,
    #[stat(desc = "per managed CPU")]
    pub cpus: BTreeMap<u32, CpuMetrics>,
    #[stat(desc = "per task, by name")]
    pub tasks: BTreeMap<String, TaskMetrics>,
}

/// What the summary does not hold: the run-time state of the control side (defined by the
/// control state machine, in the core).
pub use crate::control::Live;

impl Metrics {
    /// The metrics of `s` (the summary so far; only managed CPUs are listed).
    pub fn from_summary(s: &Summary, live: &Live) -> Self {
        let cpus = s
            .cpus
            .iter()
            .filter(|c| c.managed)
            .map(|c| {
                let avg = c
                    .freq_residency
                    .iter()
                    .map(|f| f.mhz as f64 * f.fraction)
                    .sum::<f64>();
                let residency = residency_text(&c.freq_residency);
                (
                    c.cpu,
                    CpuMetrics {
                        ticks: c.ticks,
                        late_p50_ns: c.late_ns.p50,
                        late_p99_ns: c.late_ns.p99,
                        late_max_ns: c.late_ns.max,
                        stolen_ns: c.stolen_ns,
                        kthread_ns: c.kthread_ns,
                        foreign_ns: c.foreign_ns,
                        guard_events: c.guard_events,
                        guard_late: c.guard_late,
                        guard_stops: c.guard_stops,
                        record_drops: c.record_drops,
                        freq_avg_mhz: avg,
                        freq_residency: residency,
                    },
                )
            })
            .collect();
        let tasks = s
            .tasks
            .iter()
            .map(|t| {
                let a = s.adaptive.iter().find(|a| a.name == t.name);
                let r = a.and_then(|a| a.reservation);
                (
                    t.name.clone(),
                    TaskMetrics {
                        class: t.class.name().into(),
                        cpu: t.cpu.map_or(-1, i64::from),
                        state: state_name(t.state).into(),
                        planned_ns: t.planned_ns,
                        delivered_ns: t.delivered_ns,
                        outside_ns: t.outside_ns,
                        run_ns: t.run_ns,
                        jobs_done: t.jobs_done,
                        jobs_carried: t.jobs_carried,
                        adaptive_state: a.map_or(String::new(), |a| a.state.name().into()),
                        adaptive_period_us: a.and_then(|a| a.period_us).unwrap_or(0),
                        reservation_period_slots: r.map_or(0, |r| r.period),
                        reservation_wcet_slots: r.map_or(0, |r| r.wcet),
                    },
                )
            })
            .collect();
        let (energy_j, energy_source) = match &s.energy {
            Some(e) => {
                let label = match e.label {
                    crate::accounting::EnergyKind::Measured => "measured",
                    crate::accounting::EnergyKind::Estimated => "estimated",
                };
                (e.joules, format!("{label}: {}", e.source))
            }
            None => (0.0, "unavailable".into()),
        };
        Metrics {
            uptime_s: s.duration_ns as f64 / 1e9,
            slot_us: s.slot_us,
            table: live.table.clone(),
            policy: live.policy.clone(),
            planner_late_slots: s.planner_late_slots.unwrap_or(0),
            planner_late_writes: s.planner_late_writes.as_ref().map_or(0, |w| w.slots),
            admissions_accepted: live.admissions_accepted,
            admissions_rejected: live.admissions_rejected,
            table_switches: s.table_switches.len() as u64,
            energy_j,
            energy_source,
            cpus,
            tasks,
        }
    }

    /// The `--stats` line (and `--monitor`'s): per CPU ticks, lateness, stolen time and
    /// frequency residency; per tt task delivered share and outside share; planner counts in
    /// planner mode; the energy, labelled.
    pub fn line(&self) -> String {
        let mut out = format!("[scx_tt] t={:.1}s", self.uptime_s);
        for (cpu, c) in &self.cpus {
            let _ = write!(
                out,
                " cpu{cpu} ticks={} late_p50={:.0}us p99={:.0}us stolen={:.1}ms",
                c.ticks,
                c.late_p50_ns as f64 / 1e3,
                c.late_p99_ns as f64 / 1e3,
                c.stolen_ns as f64 / 1e6
            );
            if !c.freq_residency.is_empty() {
                let _ = write!(out, " freq=[{}]", c.freq_residency);
            }
        }
        out.push_str(" |");
        for (name, t) in self.tasks.iter().filter(|(_, t)| t.class == "tt") {
            let delivered =
                (t.planned_ns > 0).then(|| 100.0 * t.delivered_ns as f64 / t.planned_ns as f64);
            let outside = (t.run_ns > 0).then(|| 100.0 * t.outside_ns as f64 / t.run_ns as f64);
            let _ = write!(out, " {name}={}/out {}", pct(delivered), pct(outside));
        }
        let adaptive: Vec<(&String, &TaskMetrics)> = self
            .tasks
            .iter()
            .filter(|(_, t)| !t.adaptive_state.is_empty())
            .collect();
        if !adaptive.is_empty() {
            out.push_str(" | adaptive");
        }
        for (name, t) in adaptive {
            let period = match t.adaptive_period_us {
                0 => "-".to_string(),
                p => format!("{:.3}ms", p as f64 / 1e3),
            };
            let _ = write!(
                out,
                " {name}={} P={period} res={}/{}",
                t.adaptive_state, t.reservation_wcet_slots, t.reservation_period_slots
            );
        }
        if !self.policy.is_empty() {
            let _ = write!(
                out,
                " | planner {} late={} admitted={} rejected={}",
                self.policy,
                self.planner_late_slots,
                self.admissions_accepted,
                self.admissions_rejected
            );
        }
        if self.energy_source == "unavailable" {
            out.push_str(" | energy unavailable");
        } else {
            let _ = write!(
                out,
                " | energy {:.3} J ({})",
                self.energy_j, self.energy_source
            );
        }
        out
    }
}

/// `--help-stats`: every metric with its type and description (the units are in both).
pub fn describe() -> String {
    let data = StatsServerData::<(), ()>::new()
        .add_meta(Metrics::meta())
        .add_meta(CpuMetrics::meta())
        .add_meta(TaskMetrics::meta());
    let mut out = Vec::new();
    data.describe_meta(&mut out, None)
        .expect("the metrics' meta is complete");
    String::from_utf8(out).expect("utf-8")
}

/// The metas to serve (`StatsServerData::add_meta`), top first.
pub fn metas() -> Vec<StatsMeta> {
    vec![Metrics::meta(), CpuMetrics::meta(), TaskMetrics::meta()]
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |p| format!("{p:.1}%"))
}

fn state_name(s: TaskState) -> &'static str {
    match s {
        TaskState::Running => "running",
        TaskState::Exited => "exited",
        TaskState::NotFound => "not_found",
    }
}

/// The stats socket of a run: `scx_stats`' server on its own threads; the run loop answers its
/// requests with [`MetricsServer::serve`] between its other work, so a client never blocks the
/// run loop and the loop never waits for a client. At most one request is outstanding (the
/// server's proxy thread passes them one at a time); a request waits for the loop's next turn.
pub struct MetricsServer {
    server: StatsServer<(), Metrics>,
    path: std::path::PathBuf,
    /// The last metrics built and when (ns, the caller's clock): reused for requests that come
    /// within [`MetricsServer::REUSE_NS`], so a client asking in a tight loop costs the run
    /// loop at most one summary per that period.
    last: Option<(u64, Metrics)>,
}

impl MetricsServer {
    /// Metrics younger than this answer a request as they are.
    pub const REUSE_NS: u64 = 100_000_000;

    /// Binds the stats socket at `path` (its directory is created; a stale socket there is
    /// replaced, as scx's schedulers do: the caller launches it only once it owns the machine's
    /// sched_ext, so the socket of a scheduler still attached is never taken).
    pub fn launch(path: &std::path::Path) -> anyhow::Result<Self> {
        let mut data = StatsServerData::<(), Metrics>::new();
        for m in metas() {
            data = data.add_meta(m);
        }
        let data = data.add_stats(
            "top",
            Box::new(|_args, (tx, rx)| {
                tx.send(())?;
                rx.recv()?.to_json()
            }),
        );
        let server = StatsServer::new(data).set_path(path).launch()?;
        Ok(MetricsServer {
            server,
            path: path.to_path_buf(),
            last: None,
        })
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Answers the request waiting, if any, with `build()` (or the metrics built less than
    /// [`Self::REUSE_NS`] before `now_ns`). Never blocks. Returns whether a request was
    /// answered.
    pub fn serve(&mut self, now_ns: u64, build: impl FnOnce() -> Metrics) -> bool {
        let (res_tx, req_rx) = self.server.channels();
        if req_rx.try_recv().is_err() {
            return false;
        }
        let m = match &self.last {
            Some((at, m)) if now_ns.saturating_sub(*at) < Self::REUSE_NS => m.clone(),
            _ => {
                let m = build();
                self.last = Some((now_ns, m.clone()));
                m
            }
        };
        // the client may be gone: nothing to do then
        let _ = res_tx.send(m);
        true
    }
}

impl Drop for MetricsServer {
    /// The socket file goes with the run (scx_stats' own drop stops its listener only).
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A client of a stats socket (`--monitor`): the metrics, or an error that names the path.
pub fn request(path: &std::path::Path, timeout_ms: u64) -> anyhow::Result<Metrics> {
    use anyhow::Context;
    let mut client = StatsClient::new()
        .set_path(path)
        .connect(Some(timeout_ms))
        .with_context(|| format!("connecting to the stats socket {}", path.display()))?;
    client
        .request::<Metrics>("stats", vec![])
        .with_context(|| format!("reading the stats from {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::{
        CpuSummary, EnergyKind, EnergySummary, ExitReason, FreqShare, Quantiles, TaskSummary,
    };
    use crate::plan::Class;

    fn summary() -> Summary {
        let cpu = |cpu: u32, managed: bool, p50: i64| CpuSummary {
            cpu,
            managed,
            ticks: 100 + cpu as u64,
            late_ns: Quantiles {
                min: 1,
                p50,
                p99: 3 * p50,
                max: 9 * p50,
            },
            late_hist: vec![],
            stolen_ns: 2_500_000,
            kthread_ns: 1_000_000,
            foreign_ns: 500_000,
            be_while_tt_ready_ns: 0,
            be_kick_latency_ns: 0,
            bpf_tick_ns_avg: 0,
            late_skips: 0,
            guard_events: 40,
            guard_late: 2,
            guard_stops: 30,
            record_drops: 1,
            freq_residency: vec![
                FreqShare {
                    mhz: 1000,
                    seconds: 0.25,
                    fraction: 0.25,
                },
                FreqShare {
                    mhz: 2000,
                    seconds: 0.75,
                    fraction: 0.75,
                },
            ],
            bpf_counters: Default::default(),
        };
        let task = |name: &str, class: Class, planned: u64| TaskSummary {
            name: name.into(),
            class,
            cpu: (class == Class::Tt).then_some(1),
            tids: vec![7],
            state: TaskState::Running,
            planned_ns: planned,
            delivered_ns: planned / 2,
            outside_ns: 10,
            run_ns: 100,
            jobs_done: 3,
            jobs_carried: 1,
            reclaimed_ns: 0,
        };
        Summary {
            slot_us: 10_000,
            duration_ns: 2_500_000_000,
            exit: ExitReason::Duration,
            tasks: vec![task("a<&>", Class::Tt, 1000), task("fill", Class::Be, 0)],
            cpus: vec![cpu(0, false, 7), cpu(1, true, 2_000), cpu(2, true, 4_000)],
            bpf_prog_stats: vec![],
            energy: Some(EnergySummary {
                joules: 1.5,
                label: EnergyKind::Estimated,
                source: "model m".into(),
                segments: vec![],
            }),
            table_switches: vec![],
            planner_late_slots: Some(4),
            planner_late_writes: None,
            planner_observations: None,
            adaptive: vec![],
        }
    }

    #[test]
    fn an_adaptive_task_s_state_period_and_reservation_are_metrics_and_in_the_line() {
        use crate::adaptive::{AdaptiveState, AdaptiveView, Slots};
        let mut s = summary();
        s.adaptive = vec![AdaptiveView {
            name: "fill".into(),
            task: 1,
            state: AdaptiveState::Compressed,
            period_us: Some(39_998),
            reservation: Some(Slots {
                period: 20,
                wcet: 3,
            }),
            changes: 4,
        }];
        let m = Metrics::from_summary(&s, &Live::default());
        let f = &m.tasks["fill"];
        assert_eq!(
            (
                f.adaptive_state.as_str(),
                f.adaptive_period_us,
                f.reservation_period_slots,
                f.reservation_wcet_slots
            ),
            ("compressed", 39_998, 20, 3)
        );
        // a task that is not adaptive: empty and zeros
        assert_eq!(m.tasks["a<&>"].adaptive_state, "");
        assert_eq!(m.tasks["a<&>"].reservation_wcet_slots, 0);
        assert!(
            m.line()
                .contains(" | adaptive fill=compressed P=39.998ms res=3/20 | energy"),
            "{}",
            m.line()
        );
        // learning: no period, no reservation
        s.adaptive[0].state = AdaptiveState::Learning;
        s.adaptive[0].period_us = None;
        s.adaptive[0].reservation = None;
        let line = Metrics::from_summary(&s, &Live::default()).line();
        assert!(
            line.contains(" | adaptive fill=learning P=- res=0/0"),
            "{line}"
        );
        assert!(describe().contains("reservation_wcet_slots"));
    }

    #[test]
    fn metrics_carry_the_summary_field_by_field_and_only_managed_cpus() {
        let s = summary();
        let live = Live {
            table: "plan.json".into(),
            policy: "dvfs".into(),
            admissions_accepted: 5,
            admissions_rejected: 2,
        };
        let m = Metrics::from_summary(&s, &live);
        assert_eq!(m.cpus.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
        for c in s.cpus.iter().filter(|c| c.managed) {
            let got = &m.cpus[&c.cpu];
            assert_eq!(
                (got.ticks, got.late_p50_ns, got.late_p99_ns, got.late_max_ns),
                (c.ticks, c.late_ns.p50, c.late_ns.p99, c.late_ns.max)
            );
            assert_eq!(
                (got.stolen_ns, got.kthread_ns, got.foreign_ns),
                (c.stolen_ns, c.kthread_ns, c.foreign_ns)
            );
            assert_eq!(
                (got.guard_events, got.guard_late, got.guard_stops),
                (40, 2, 30)
            );
            assert!(
                (got.freq_avg_mhz - 1750.0).abs() < 1e-9,
                "{}",
                got.freq_avg_mhz
            );
        }
        assert_eq!(m.tasks["a<&>"].cpu, 1);
        assert_eq!(m.tasks["fill"].cpu, -1);
        assert_eq!(m.tasks["fill"].class, "be");
        assert_eq!(m.tasks["a<&>"].delivered_ns, 500);
        assert_eq!(
            (m.energy_j, m.energy_source.as_str()),
            (1.5, "estimated: model m")
        );
        assert_eq!(m.planner_late_slots, 4);
        let line = m.line();
        assert_eq!(
            line,
            "[scx_tt] t=2.5s cpu1 ticks=101 late_p50=2us p99=6us stolen=2.5ms \
             freq=[1000MHz 25.0% 2000MHz 75.0%] cpu2 ticks=102 late_p50=4us p99=12us \
             stolen=2.5ms freq=[1000MHz 25.0% 2000MHz 75.0%] | a<&>=50.0%/out 10.0% | \
             planner dvfs late=4 admitted=5 rejected=2 | energy 1.500 J (estimated: model m)"
        );
        // no planner, no energy: neither is printed as if it were there
        let mut s2 = s.clone();
        s2.energy = None;
        let m2 = Metrics::from_summary(&s2, &Live::default());
        assert!(
            m2.line()
                .ends_with("| a<&>=50.0%/out 10.0% | energy unavailable"),
            "{}",
            m2.line()
        );
    }

    #[test]
    fn every_metric_is_described_with_its_unit_and_help_lists_them_all() {
        let text = describe();
        for meta in metas() {
            assert!(text.contains(&format!("[{}", meta.name)), "{text}");
            for (name, field) in &meta.fields {
                let desc = field.attrs.desc.as_deref().unwrap_or("");
                assert!(!desc.is_empty(), "{}.{name} has no description", meta.name);
                // a quantity's unit is in its name and its description
                for (suffix, unit) in [
                    ("_ns", "(ns)"),
                    ("_us", "(us)"),
                    ("_mhz", "MHz"),
                    ("_j", "(J)"),
                    ("_s", "(s)"),
                ] {
                    if name.ends_with(suffix) {
                        assert!(
                            desc.contains(unit),
                            "{}.{name}: {desc:?} lacks {unit}",
                            meta.name
                        );
                    }
                }
                assert!(
                    text.contains(name.as_str()),
                    "{name} missing from --help-stats"
                );
            }
        }
        // the metas name the serialized fields exactly: nothing served is undocumented
        let json =
            serde_json::to_value(Metrics::from_summary(&summary(), &Live::default())).unwrap();
        let top = metas().into_iter().find(|m| m.name == "Metrics").unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, top.fields.keys().collect::<Vec<_>>());
    }

    #[test]
    fn served_metrics_reach_a_client_through_the_socket_and_requests_never_block_the_loop() {
        let dir = std::env::temp_dir().join(format!("scx_tt-metrics-{}", std::process::id()));
        let path = dir.join("root/stats");
        let mut server = MetricsServer::launch(&path).expect("launch");
        // nothing asked: serve returns at once without building
        assert!(!server.serve(0, || panic!("built without a request")));
        let want = Metrics::from_summary(&summary(), &Live::default());
        let client_path = path.clone();
        let client = std::thread::spawn(move || request(&client_path, 5_000));
        // the "run loop": turns until the request has been answered
        let mut builds = 0;
        let t = std::time::Instant::now();
        while !server.serve(1, || {
            builds += 1;
            want.clone()
        }) {
            assert!(t.elapsed().as_secs() < 5, "no request arrived");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let got = client.join().unwrap().expect("request");
        assert_eq!(got, want);
        assert_eq!(builds, 1);
        // a second request within REUSE_NS is answered with the same metrics, not rebuilt
        let client_path = path.clone();
        let client = std::thread::spawn(move || request(&client_path, 5_000));
        while !server.serve(2, || panic!("rebuilt within REUSE_NS")) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(client.join().unwrap().unwrap(), want);
        drop(server);
        assert!(!path.exists(), "the socket file outlived its server");
        // no server: the error names the path
        let e = request(&path, 100).unwrap_err();
        assert!(
            format!("{e:#}").contains(&path.display().to_string()),
            "{e:#}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
