//! Seed 001's synthetic server-design experiment (Lee et al., RTAS 2012, Section IV-B) in slots:
//! five components with RM workloads, their optimal interfaces by Algorithm 1, an EDF table of
//! the interfaces on one CPU, and every job's response time under ptps, wcps, crps and the
//! paper's WCPS (`wcps-paper`), from `scx_tt::sim::servers`.
//!
//! ```text
//! cargo bench --bench server_designs              # full grid (a few seconds on 2 cores)
//! cargo bench --bench server_designs -- --quick   # 2 sets a point, 20,000 slots
//! ```
//! Options: `--quick`, `--sets N`, `--slots N`, `--ticks N`, `--threads N`, `--out DIR`.
//! Writes `DIR/server_designs.txt` and `DIR/server_designs.svg` (default `bench/results`).
//! See docs/servers.md for the set-up and every difference from the paper.
//!
//! Set-up (one slot = the paper's 1 ms scheduling quantum):
//! - U_W = 0.7, 0.8, 0.9, 1.0; tasks of utilization uniform in [0.2 %, 5 %] drawn until U_W is
//!   reached, period uniform in the range, wcet = max(1, round(u·p)) slots; spread uniformly over
//!   five components (each gets at least one task).
//! - Experiment 1 (task period): periods in (550, 650), (350, 850), (100, 1100) slots, the
//!   paper's ranges in ms; ETF 100 %.
//! - Experiment 2 (ETF): periods in (550, 650); each job of the three highest-priority
//!   components runs uniform in [ETF, 1] × its WCET, ETF = 100 %, 50 %, 10 %; the two lowest at
//!   100 % (as the paper).
//! - Γ = optimal_interface(RM, general supply) per component; table by `server_table`: EDF of the
//!   Γ's when Σ Θ/Π ≤ 1, else (the paper's overloaded domains) fixed priorities by Π with a
//!   window's unserved budget dropped — the paper's RM VMM scheduler; such sets are counted.
//! - `be` work present (always ready), so wcps's time for `be` is visible.
//! - Lowest-priority component: the largest Π (ties: the last one).

#[path = "planner_common.rs"]
#[allow(dead_code)]
mod common;

use common::machine;
use scx_tt::plan::gen::SplitMix64;
use scx_tt::planner::interface::{optimal_interface, Scheduler, Supply, Task, Workload};
use scx_tt::sim::servers::{
    self, server_table, Component, Config, Design, Exec, LocalTask, TableKind, DESIGNS,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

const U_W: [f64; 4] = [0.7, 0.8, 0.9, 1.0];
const RANGES: [(u64, u64); 3] = [(550, 650), (350, 850), (100, 1100)];
const ETFS: [f64; 3] = [1.0, 0.5, 0.1];
const COMPONENTS: usize = 5;
/// The paper's deadline-miss ratios (%) of the lowest-priority domain, PTPS / WCPS / CRPS, where
/// its text gives them: (experiment, U_W index, variant index, [ptps, wcps, crps]).
/// Fig. 5c: U_W = 0.9, periods (350, 850). Fig. 6c, 6d: U_W = 0.9 and 1.0, ETF 100/50/10 %
/// ("all jobs missed" under PTPS in 6d: 100 %).
const PAPER: [(usize, usize, usize, [f64; 3]); 7] = [
    (0, 2, 1, [100.0, 60.5, 6.2]),
    (1, 2, 0, [26.9, 11.7, 0.02]),
    (1, 2, 1, [27.3, 8.51, 0.0]),
    (1, 2, 2, [27.3, 0.49, 0.0]),
    (1, 3, 0, [100.0, 75.6, 36.1]),
    (1, 3, 1, [100.0, 32.7, 0.0]),
    (1, 3, 2, [100.0, 31.3, 0.0]),
];
/// Ratios above this are clipped in the means (the paper clips its CDFs at 3).
const CLIP: f64 = 3.0;

struct Opts {
    sets: u32,
    slots: u64,
    ticks: u64,
    threads: usize,
    out: PathBuf,
    quick: bool,
}

fn parse_opts() -> Result<Opts, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut o = Opts {
        sets: 10,
        slots: 300_000,
        ticks: 100,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        out: root.join("bench/results"),
        quick: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let num = |name: &str, v: String| -> Result<u64, String> {
            v.parse().map_err(|e| format!("{name} {v:?}: {e}"))
        };
        match a.as_str() {
            "--quick" => {
                o.quick = true;
                o.sets = 2;
                o.slots = 20_000;
            }
            "--sets" => o.sets = num("--sets", val("--sets")?)?.clamp(1, 1000) as u32,
            "--slots" => o.slots = num("--slots", val("--slots")?)?.clamp(1, 10_000_000),
            "--ticks" => o.ticks = num("--ticks", val("--ticks")?)?.clamp(1, 1_000_000),
            "--threads" => o.threads = num("--threads", val("--threads")?)?.clamp(1, 64) as usize,
            "--out" => o.out = val("--out")?.into(),
            "--bench" => {}
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// One point of the grid: experiment 0 (period range `v`) or 1 (ETF index `v`), U_W index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Point {
    exp: usize,
    u: usize,
    v: usize,
}

/// Sums over the sets of one (point, design).
#[derive(Clone, Debug, Default)]
struct Cell {
    runs: u32,
    /// Lowest-priority component: judged jobs, misses, Σ clipped ratio, every ratio.
    low_jobs: u64,
    low_misses: u64,
    low_sum: f64,
    low: Vec<f64>,
    /// All components.
    all_jobs: u64,
    all_misses: u64,
    /// CPU ticks: be, idle, reclaimed, total.
    be: u64,
    idle: u64,
    reclaimed: u64,
    total: u64,
}

impl Cell {
    fn add(&mut self, r: &servers::ServerReport, low: usize) {
        self.runs += 1;
        let l = &r.components[low];
        self.low_jobs += l.jobs;
        self.low_misses += l.misses;
        for x in l.ratios() {
            self.low_sum += x.min(CLIP);
            self.low.push(x);
        }
        self.all_jobs += r.jobs;
        self.all_misses += r.misses;
        self.be += r.time.be;
        self.idle += r.time.idle;
        self.reclaimed += r.time.reclaimed;
        self.total += r.time.owner + r.time.reclaimed + r.time.be + r.time.idle;
    }
    fn merge(&mut self, o: Cell) {
        self.runs += o.runs;
        self.low_jobs += o.low_jobs;
        self.low_misses += o.low_misses;
        self.low_sum += o.low_sum;
        self.low.extend(o.low);
        self.all_jobs += o.all_jobs;
        self.all_misses += o.all_misses;
        self.be += o.be;
        self.idle += o.idle;
        self.reclaimed += o.reclaimed;
        self.total += o.total;
    }
    fn low_dmr(&self) -> f64 {
        100.0 * self.low_misses as f64 / self.low_jobs.max(1) as f64
    }
    fn all_dmr(&self) -> f64 {
        100.0 * self.all_misses as f64 / self.all_jobs.max(1) as f64
    }
    fn low_mean(&self) -> f64 {
        self.low_sum / self.low_jobs.max(1) as f64
    }
    fn low_p99(&self) -> f64 {
        servers::Ratios::of(&self.low).p99.min(CLIP)
    }
    fn pct(&self, x: u64) -> f64 {
        100.0 * x as f64 / self.total.max(1) as f64
    }
}

/// Per point: the workloads' figures (sets, overloaded sets, Σ U_Γ, Σ U_W) and one cell per
/// design.
#[derive(Clone, Debug, Default)]
struct PointResult {
    sets: u32,
    overloaded: u32,
    u_gamma: f64,
    u_w: f64,
    /// Γ of the lowest-priority component of set 0 (for the table, as the paper's Fig. 5).
    low_gamma: Option<(u64, u64)>,
    cells: BTreeMap<Design, Cell>,
    errors: Vec<String>,
}

impl PointResult {
    fn merge(&mut self, o: PointResult) {
        self.sets += o.sets;
        self.overloaded += o.overloaded;
        self.u_gamma += o.u_gamma;
        self.u_w += o.u_w;
        self.low_gamma = self.low_gamma.or(o.low_gamma);
        for (d, c) in o.cells {
            self.cells.entry(d).or_default().merge(c);
        }
        self.errors.extend(o.errors);
    }
}

/// The paper's generator: tasks of utilization uniform in [0.002, 0.05] until U_W is reached,
/// spread over five components.
fn workload(u_w: f64, (lo, hi): (u64, u64), rng: &mut SplitMix64) -> Vec<Vec<Task>> {
    let mut tasks = Vec::new();
    let mut total = 0.0;
    while total < u_w {
        let u = 0.002 + 0.048 * rng.next_f64();
        let period = lo + rng.below(hi - lo + 1);
        let wcet = ((u * period as f64).round() as u64).clamp(1, period);
        total += wcet as f64 / period as f64;
        tasks.push(Task { period, wcet });
    }
    // shuffle, the first five one to each component, the rest uniformly
    for i in (1..tasks.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        tasks.swap(i, j);
    }
    let mut comps = vec![Vec::new(); COMPONENTS];
    for (i, t) in tasks.into_iter().enumerate() {
        let c = if i < COMPONENTS {
            i
        } else {
            rng.below(COMPONENTS as u64) as usize
        };
        comps[c].push(t);
    }
    comps
}

fn run_set(opts: &Opts, p: Point, set: u32) -> PointResult {
    let mut out = PointResult::default();
    let range = if p.exp == 0 { RANGES[p.v] } else { RANGES[0] };
    let etf = if p.exp == 0 { 1.0 } else { ETFS[p.v] };
    // experiment 2 runs the same task sets under each ETF (the paper: one set per U_W, three
    // ETFs), so ptps's lowest-priority results cannot change with the ETF of the others
    let v_key = if p.exp == 0 { p.v as u64 } else { 0 };
    let seed = 0x5eed_0001
        ^ ((p.exp as u64) << 48)
        ^ ((p.u as u64) << 40)
        ^ (v_key << 32)
        ^ u64::from(set);
    let mut rng = SplitMix64::new(seed);
    let work = workload(U_W[p.u], range, &mut rng);
    let mut gammas = Vec::new();
    for (c, tasks) in work.iter().enumerate() {
        let r = Workload::new(tasks)
            .and_then(|w| optimal_interface(&w, Scheduler::Rm, Supply::General));
        match r {
            Ok(i) => gammas.push(i.resource),
            Err(e) => {
                out.errors
                    .push(format!("{p:?} set {set} component {c}: {e}"));
                return out;
            }
        }
    }
    let table = match server_table(&gammas, opts.slots) {
        Ok(t) => t,
        Err(e) => {
            out.errors.push(format!("{p:?} set {set}: table: {e}"));
            return out;
        }
    };
    // RM priority among components: shorter Π first; the three highest get the ETF
    let mut prio: Vec<usize> = (0..COMPONENTS).collect();
    prio.sort_by_key(|&c| (gammas[c].period, c));
    let low = prio[COMPONENTS - 1];
    let components: Vec<Component> = (0..COMPONENTS)
        .map(|c| {
            let rank = prio.iter().position(|&x| x == c).unwrap_or(0);
            let exec = if etf < 1.0 && rank < 3 {
                Exec::Uniform { min: etf }
            } else {
                Exec::Factor(1.0)
            };
            Component {
                name: format!("c{c}"),
                scheduler: Scheduler::Rm,
                tasks: work[c]
                    .iter()
                    .enumerate()
                    .map(|(i, t)| LocalTask {
                        name: format!("c{c}.t{i}"),
                        period: t.period,
                        wcet: t.wcet,
                    })
                    .collect(),
                opaque: false,
                windows: table.windows[c].clone(),
                period: gammas[c].period,
                exec,
            }
        })
        .collect();
    out.sets = 1;
    out.overloaded = u32::from(table.kind == TableKind::RmOverloaded);
    out.u_gamma = gammas
        .iter()
        .map(|g| g.budget as f64 / g.period as f64)
        .sum();
    out.u_w = work
        .iter()
        .flatten()
        .map(|t| t.wcet as f64 / t.period as f64)
        .sum();
    if set == 0 {
        out.low_gamma = Some((gammas[low].period, gammas[low].budget));
    }
    for d in DESIGNS {
        let cfg = Config {
            table: &table.table,
            components: &components,
            ticks_per_slot: opts.ticks,
            slots: opts.slots,
            design: d,
            be: true,
            seed,
        };
        match servers::simulate(&cfg) {
            Ok(r) => out.cells.entry(d).or_default().add(&r, low),
            Err(e) => out.errors.push(format!("{p:?} set {set} {d}: {e}")),
        }
    }
    out
}

fn main() {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("server_designs: {e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let mut items = Vec::new();
    for exp in 0..2 {
        for u in 0..U_W.len() {
            for v in 0..3 {
                for set in 0..opts.sets {
                    items.push((Point { exp, u, v }, set));
                }
            }
        }
    }
    let results: Vec<(Point, PointResult)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..opts.threads)
            .map(|k| {
                let items = &items;
                let opts = &opts;
                scope.spawn(move || {
                    items
                        .iter()
                        .skip(k)
                        .step_by(opts.threads)
                        .map(|&(p, set)| (p, run_set(opts, p, set)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    });
    let mut res: BTreeMap<Point, PointResult> = BTreeMap::new();
    for (p, r) in results {
        res.entry(p).or_default().merge(r);
    }
    let secs = started.elapsed().as_secs_f64();
    let report = render(&opts, &res, secs);
    print!("{report}");
    if let Err(e) = common::write_outputs(&opts.out, "server_designs", &report, &svg(&res)) {
        eprintln!("server_designs: writing results: {e}");
        std::process::exit(1);
    }
    let errors: usize = res.values().map(|r| r.errors.len()).sum();
    if errors > 0 {
        std::process::exit(1);
    }
}

fn variant_name(exp: usize, v: usize) -> String {
    if exp == 0 {
        format!("({}, {})", RANGES[v].0, RANGES[v].1)
    } else {
        format!("ETF {:.0}%", ETFS[v] * 100.0)
    }
}

fn render(opts: &Opts, res: &BTreeMap<Point, PointResult>, secs: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "server_designs: {}", machine());
    let _ = writeln!(
        s,
        "grid: {} ({} sets a point, {} slots of 1 ms = {:.0} s a run, {} ticks a slot, {} threads); {secs:.1} s",
        if opts.quick { "--quick" } else { "full" },
        opts.sets,
        opts.slots,
        opts.slots as f64 / 1000.0,
        opts.ticks,
        opts.threads
    );
    let _ = writeln!(
        s,
        "five components, RM inside, Γ by Algorithm 1 (general supply), table by EDF of the Γ's (RM with dropped budget when Σ U_Γ > 1: 'ovl'); be work present"
    );
    let _ = writeln!(
        s,
        "columns per design: lowest-priority component's deadline-miss ratio % | mean and p99 of response/deadline (clipped at {CLIP}, as the paper's plots) | 'all' = miss ratio % over all components"
    );
    let titles = [
        "Experiment 1, task period (ETF 100 %): the paper's Figs. 4-5",
        "Experiment 2, ETF of the three highest-priority components (periods 550-650): the paper's Fig. 6",
    ];
    for (exp, title) in titles.iter().enumerate() {
        let _ = writeln!(s, "\n== {title}");
        let _ = write!(
            s,
            "{:>5} {:>12} {:>5} {:>5} {:>4} {:>10}",
            "U_W", "variant", "U_W*", "U_Γ", "ovl", "low Γ"
        );
        for d in DESIGNS {
            let _ = write!(s, " | {:>22}", format!("{d} low/mean/p99 all"));
        }
        let _ = writeln!(s, " | be % of CPU: ptps wcps crps wcps-paper");
        for (u, uw) in U_W.iter().enumerate() {
            for v in 0..3 {
                let Some(r) = res.get(&Point { exp, u, v }) else {
                    continue;
                };
                let n = f64::from(r.sets.max(1));
                let g = r
                    .low_gamma
                    .map_or("-".into(), |(p, b)| format!("({p},{b})"));
                let _ = write!(
                    s,
                    "{:>5.1} {:>12} {:>5.2} {:>5.2} {:>4} {:>10}",
                    uw,
                    variant_name(exp, v),
                    r.u_w / n,
                    r.u_gamma / n,
                    format!("{}/{}", r.overloaded, r.sets),
                    g
                );
                for d in DESIGNS {
                    let c = r.cells.get(&d).cloned().unwrap_or_default();
                    let _ = write!(
                        s,
                        " | {:>5.1} {:>4.2} {:>4.2} {:>5.1}",
                        c.low_dmr(),
                        c.low_mean(),
                        c.low_p99(),
                        c.all_dmr()
                    );
                }
                let _ = write!(s, " |");
                for d in DESIGNS {
                    let c = r.cells.get(&d).cloned().unwrap_or_default();
                    let _ = write!(s, " {:>4.1}", c.pct(c.be));
                }
                let _ = writeln!(s);
            }
        }
    }
    let _ = writeln!(
        s,
        "\n== The paper's figures beside ours: lowest-priority domain's deadline-miss ratio %, PTPS / WCPS / CRPS (ours: ptps / wcps-paper / crps; scx_tt's wcps = ptps)"
    );
    for (exp, u, v, paper) in PAPER {
        let Some(r) = res.get(&Point { exp, u, v }) else {
            continue;
        };
        let m = |d: Design| r.cells.get(&d).map_or(0.0, |c| c.low_dmr());
        let _ = writeln!(
            s,
            "  U_W {:.1} {:>12}: paper {:>5.1} / {:>5.2} / {:>5.2}   ours {:>5.1} / {:>5.2} / {:>5.2}",
            U_W[u],
            variant_name(exp, v),
            paper[0],
            paper[1],
            paper[2],
            m(Design::Ptps),
            m(Design::WcpsPaper),
            m(Design::Crps)
        );
    }
    // the paper's ordering: CRPS < WCPS < PTPS in deadline misses
    let total = |d: Design, f: &dyn Fn(&Cell) -> u64| -> u64 {
        res.values().filter_map(|r| r.cells.get(&d)).map(f).sum()
    };
    let _ = writeln!(s, "\n== Deadline misses over the whole grid (jobs of every component | of the lowest-priority component)");
    for d in DESIGNS {
        let _ = writeln!(
            s,
            "{:>11}: {:>8} of {:>8} | {:>7} of {:>7}",
            d.to_string(),
            total(d, &|c| c.all_misses),
            total(d, &|c| c.all_jobs),
            total(d, &|c| c.low_misses),
            total(d, &|c| c.low_jobs)
        );
    }
    let mut holds = 0;
    let mut strict = 0;
    let mut points = 0;
    let mut same = 0;
    for r in res.values() {
        let m = |d: Design| r.cells.get(&d).map_or(0, |c| c.all_misses);
        points += 1;
        if m(Design::Crps) <= m(Design::WcpsPaper) && m(Design::WcpsPaper) <= m(Design::Ptps) {
            holds += 1;
        }
        if m(Design::Crps) < m(Design::WcpsPaper) && m(Design::WcpsPaper) < m(Design::Ptps) {
            strict += 1;
        }
        if m(Design::Wcps) == m(Design::Ptps) {
            same += 1;
        }
    }
    let (c, w, p) = (
        total(Design::Crps, &|c| c.all_misses),
        total(Design::WcpsPaper, &|c| c.all_misses),
        total(Design::Ptps, &|c| c.all_misses),
    );
    let agree = c < w && w < p;
    let _ = writeln!(
        s,
        "\npaper (Section IV-B): CRPS < WCPS < PTPS in deadline misses (e.g. U_W = 0.9, periods 350-850: lowest-priority domain 100 % / 60.5 % / 6.2 % under PTPS / WCPS / CRPS)"
    );
    let _ = writeln!(
        s,
        "ours, whole grid: crps {c} < wcps-paper {w} < ptps {p}: {}; per point: crps <= wcps-paper <= ptps at {holds} of {points} points, strictly at {strict} (the rest: no misses at all, or ties)",
        if agree { "agrees" } else { "DISAGREES" }
    );
    let _ = writeln!(
        s,
        "scx_tt's wcps gives the components the same time as ptps (its owner-idle time goes to be work): equal misses at {same} of {points} points"
    );
    let errors: Vec<&String> = res.values().flat_map(|r| r.errors.iter()).collect();
    let _ = writeln!(s, "errors: {}", errors.len());
    for e in errors.iter().take(10) {
        let _ = writeln!(s, "  {e}");
    }
    s
}

/// Six panels (two rows: experiments; three columns: period ranges / ETFs): the
/// lowest-priority component's deadline-miss ratio against U_W, one line per design.
fn svg(res: &BTreeMap<Point, PointResult>) -> String {
    const COLORS: [&str; 4] = ["#000000", "#7f7f7f", "#1f77b4", "#d62728"];
    let (pw, ph, ml, mt, gap) = (260.0, 200.0, 60.0, 50.0, 40.0);
    let width = ml + 3.0 * (pw + gap) + 20.0;
    let height = mt + 2.0 * (ph + 90.0) + 80.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for exp in 0..2 {
        for v in 0..3 {
            let x0 = ml + v as f64 * (pw + gap);
            let y0 = mt + exp as f64 * (ph + 90.0);
            let y1 = y0 + ph;
            let x = |u: usize| x0 + u as f64 / (U_W.len() - 1) as f64 * pw;
            let y = |pct: f64| y1 - pct / 100.0 * ph;
            let title = if exp == 0 {
                format!("periods {}, ETF 100%", variant_name(0, v))
            } else {
                format!("periods (550, 650), {}", variant_name(1, v))
            };
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{title}</text>"#,
                x0 + pw / 2.0,
                y0 - 10.0
            );
            let _ = writeln!(
                s,
                r#"<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
            );
            for pct in [0.0, 25.0, 50.0, 75.0, 100.0] {
                let (xe, yp, xt, yt) = (x0 + pw, y(pct), x0 - 5.0, y(pct) + 4.0);
                let _ = writeln!(
                    s,
                    r##"<line x1="{x0}" x2="{xe}" y1="{yp}" y2="{yp}" stroke="#dddddd"/><text x="{xt}" y="{yt}" text-anchor="end">{pct:.0}%</text>"##
                );
            }
            for (u, uw) in U_W.iter().enumerate() {
                let _ = writeln!(
                    s,
                    r#"<text x="{}" y="{}" text-anchor="middle">{uw:.1}</text>"#,
                    x(u),
                    y1 + 16.0
                );
            }
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">U_W</text>"#,
                x0 + pw / 2.0,
                y1 + 32.0
            );
            for (di, d) in DESIGNS.iter().enumerate() {
                let pts: Vec<String> = (0..U_W.len())
                    .filter_map(|u| {
                        let c = res.get(&Point { exp, u, v })?.cells.get(d)?;
                        Some(format!("{:.1},{:.1}", x(u), y(c.low_dmr())))
                    })
                    .collect();
                let dash = if *d == Design::Wcps {
                    r#" stroke-dasharray="6,4""#
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
                    pts.join(" "),
                    COLORS[di]
                );
            }
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="{}" font-weight="bold">Deadline-miss ratio of the lowest-priority component (seed 001, Section IV-B, in slots)</text>"#,
        mt - 32.0
    );
    let ly = mt + 2.0 * (ph + 90.0) + 10.0;
    for (di, d) in DESIGNS.iter().enumerate() {
        let lx = ml + di as f64 * 170.0;
        let dash = if *d == Design::Wcps {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        };
        let label = match d {
            Design::Wcps => "wcps (scx_tt; = ptps)".to_string(),
            Design::WcpsPaper => "wcps-paper (the paper's WCPS)".to_string(),
            d => d.to_string(),
        };
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{}" stroke-width="2"{dash}/><text x="{}" y="{}">{label}</text>"#,
            lx + 25.0,
            COLORS[di],
            lx + 30.0,
            ly + 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="{}">Paper (Xen, measured): CRPS &lt; WCPS &lt; PTPS in deadline misses; this plot: simulation (scx_tt::sim::servers, docs/servers.md).</text>"#,
        ly + 30.0
    );
    let _ = writeln!(s, "</svg>");
    s
}
