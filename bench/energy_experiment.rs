//! The EASS paper's power experiment (Section VI-A) in simulation: average package power per
//! utilization for bss / dpm / dvfs / dpm+dvfs (and bss with C-states), the reduction against bss
//! next to the paper's figures, with actual execution = WCET and uniform 50–100 % of WCET.
//!
//! ```text
//! cargo bench --no-default-features --bench energy_experiment            # full grid
//! cargo bench --no-default-features --bench energy_experiment -- --quick # 3 sets, 3 ms slots
//! ```
//! Options: `--quick`, `--sets N`, `--slot-ms 1,3,10`, `--model FILE`, `--out DIR`.
//! Writes `DIR/energy_experiment.svg` and `DIR/energy_experiment.txt` (default `bench/results`).
//! See docs/energy.md for the set-up and every difference from the paper.

#[path = "planner_common.rs"]
#[allow(dead_code)]
mod common;

use common::machine;
use scx_tt::energy::model::{self, PowerModel};
use scx_tt::sim::experiment::{run, task_set, Case, Exec, RunResult, Variant, VARIANTS};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

const U_SCHED: [f64; 7] = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8];
const U_NEW: [f64; 3] = [0.1, 0.2, 0.5];
const EXECS: [(&str, Exec); 2] = [
    ("exec = WCET (paper)", Exec::Wcet),
    ("exec = 50-100% of WCET", Exec::Range(0.5, 1.0)),
];
/// Reported reduction against BSS (dpm, dvfs) at the lowest, 50 % and highest utilization.
const PAPER: [(f64, f64, f64); 3] = [
    (0.2, -31.85, -29.81),
    (0.5, -23.0, -28.0),
    (0.8, -3.16, -4.58),
];

struct Opts {
    sets: u32,
    slot_ms: Vec<u64>,
    model: PathBuf,
    out: PathBuf,
    quick: bool,
}

fn parse_opts() -> Result<Opts, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut o = Opts {
        sets: 10,
        slot_ms: vec![1, 3, 10],
        model: root.join("models/xeon-gold-5218.json"),
        out: root.join("bench/results"),
        quick: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--quick" => {
                o.quick = true;
                o.sets = 3;
                o.slot_ms = vec![3];
            }
            "--sets" => o.sets = val("--sets")?.parse().map_err(|e| format!("--sets: {e}"))?,
            "--slot-ms" => {
                o.slot_ms = val("--slot-ms")?
                    .split(',')
                    .map(|s| s.parse().map_err(|e| format!("--slot-ms: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--model" => o.model = val("--model")?.into(),
            "--out" => o.out = val("--out")?.into(),
            "--bench" => {}
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// Sums of one (exec, variant, u_sched, u_new, slot_ms) cell.
#[derive(Default, Clone)]
struct Cell {
    n: u32,
    package_w: f64,
    core_w: f64,
    busy: f64,
    mhz: f64,
    misses: u64,
    accepted: usize,
    offered: usize,
    core_j: f64,
    work_s: f64,
}

impl Cell {
    fn add(&mut self, r: &RunResult) {
        self.n += 1;
        self.package_w += r.package_w;
        self.core_w += r.core_w;
        self.busy += r.busy;
        self.mhz += r.mean_mhz;
        self.misses += r.guaranteed_misses;
        self.accepted += r.accepted;
        self.offered += r.offered;
        self.core_j += r.core_j;
        self.work_s += r.work_s;
    }
    fn merge(&mut self, o: &Cell) {
        self.n += o.n;
        self.package_w += o.package_w;
        self.core_w += o.core_w;
        self.busy += o.busy;
        self.mhz += o.mhz;
        self.misses += o.misses;
        self.accepted += o.accepted;
        self.offered += o.offered;
        self.core_j += o.core_j;
        self.work_s += o.work_s;
    }
    /// Managed-core energy per second of full-speed work, J/s.
    fn j_per_work_s(&self) -> f64 {
        self.core_j / self.work_s.max(f64::MIN_POSITIVE)
    }
    fn accepted_pct(&self) -> f64 {
        100.0 * self.accepted as f64 / self.offered.max(1) as f64
    }
    fn mean(&self, v: f64) -> f64 {
        v / f64::from(self.n.max(1))
    }
}

/// Key: (exec index, variant index, u_sched %, u_new %, slot ms).
type Results = BTreeMap<(usize, usize, u32, u32, u64), Cell>;

fn pct(u: f64) -> u32 {
    (u * 100.0).round() as u32
}

fn sum_where(res: &Results, f: impl Fn(&(usize, usize, u32, u32, u64)) -> bool) -> Cell {
    let mut c = Cell::default();
    for (k, v) in res {
        if f(k) {
            c.merge(v);
        }
    }
    c
}

fn reduction(w: f64, base: f64) -> f64 {
    100.0 * (w - base) / base
}

fn main() {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("energy_experiment: {e}");
            std::process::exit(2);
        }
    };
    let model = match model::from_path(&opts.model) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("energy_experiment: {e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let mut res = Results::new();
    let mut errors = 0;
    for &slot_ms in &opts.slot_ms {
        for &us in &U_SCHED {
            for &un in &U_NEW {
                for set in 0..opts.sets {
                    let case = Case {
                        u_sched: us,
                        u_new: un,
                        set,
                        slot_us: slot_ms * 1000,
                    };
                    let (plan, arrivals) = match task_set(&case) {
                        Ok(x) => x,
                        Err(e) => {
                            eprintln!("set {case:?}: {e}");
                            errors += 1;
                            continue;
                        }
                    };
                    for (ei, &(_, exec)) in EXECS.iter().enumerate() {
                        for (vi, &v) in VARIANTS.iter().enumerate() {
                            match run(&model, &plan, &arrivals, v, exec, u64::from(set) + 7) {
                                Ok(r) => res
                                    .entry((ei, vi, pct(us), pct(un), slot_ms))
                                    .or_default()
                                    .add(&r),
                                Err(e) => {
                                    eprintln!("{} {case:?}: {e}", v.name);
                                    errors += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let elapsed = started.elapsed();
    let report = render(&opts, &model, &res, errors, elapsed.as_secs_f64());
    print!("{report}");
    if let Err(e) =
        common::write_outputs(&opts.out, "energy_experiment", &report, &svg(&model, &res))
    {
        eprintln!("energy_experiment: writing results: {e}");
        std::process::exit(1);
    }
    let misses = sum_where(&res, |_| true).misses;
    if misses > 0 || errors > 0 {
        std::process::exit(1);
    }
}

fn variant(name: &str) -> usize {
    VARIANTS
        .iter()
        .position(|v: &Variant| v.name == name)
        .unwrap_or(0)
}

fn render(opts: &Opts, model: &PowerModel, res: &Results, errors: u32, secs: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "energy_experiment: {}", machine());
    let _ = writeln!(
        s,
        "grid: {} ({} sets per combination, slots {:?} ms, u_sched 20-80%, u_new 10/20/50%); model {}; {secs:.1} s; {errors} errors",
        if opts.quick { "--quick" } else { "full" },
        opts.sets,
        opts.slot_ms,
        model.name
    );
    let _ = writeln!(
        s,
        "package W = uncore {:.1} W + housekeeping core + {} x managed core; all figures are model estimates, not measurements",
        model.uncore_w,
        scx_tt::sim::experiment::managed_cores(model)
    );
    let bss = variant("bss");
    for (ei, (ename, _)) in EXECS.iter().enumerate() {
        let _ = writeln!(s, "\n== {ename}: average package power (W) by scheduled utilization (mean over new-job utilization, sets and slot lengths)");
        let _ = write!(s, "{:>7}", "u_sched");
        for v in &VARIANTS {
            let _ = write!(s, " {:>11}", v.name);
        }
        for v in &VARIANTS[1..] {
            let _ = write!(s, " {:>12}", format!("{} vs bss", v.name));
        }
        let _ = writeln!(s, " {:>9} {:>9} {:>8}", "paper dpm", "paper dvfs", "misses");
        for &us in &U_SCHED {
            let cells: Vec<Cell> = (0..VARIANTS.len())
                .map(|vi| sum_where(res, |k| k.0 == ei && k.1 == vi && k.2 == pct(us)))
                .collect();
            let base = cells[bss].mean(cells[bss].package_w);
            let _ = write!(s, "{:>6}%", pct(us));
            for c in &cells {
                let _ = write!(s, " {:>11.2}", c.mean(c.package_w));
            }
            for c in &cells[1..] {
                let _ = write!(s, " {:>11.1}%", reduction(c.mean(c.package_w), base));
            }
            let paper = PAPER.iter().find(|p| (p.0 - us).abs() < 1e-9);
            match paper {
                Some(p) => {
                    let _ = write!(s, " {:>8.2}% {:>8.2}%", p.1, p.2);
                }
                None => {
                    let _ = write!(s, " {:>9} {:>9}", "", "");
                }
            }
            let misses: u64 = cells.iter().map(|c| c.misses).sum();
            let _ = writeln!(s, " {misses:>8}");
        }
        let _ = writeln!(s, "\n   the same against bss with C-states (idle slots in the deepest state that pays off within the slot, instead of polling: the other reading of the paper's baseline, docs/energy.md)");
        let cst = variant("bss+cstates");
        let _ = write!(s, "{:>7}", "u_sched");
        for v in VARIANTS
            .iter()
            .filter(|v| v.name != "bss" && v.name != "bss+cstates")
        {
            let _ = write!(s, " {:>20}", format!("{} vs bss+cstates", v.name));
        }
        let _ = writeln!(s);
        for &us in &U_SCHED {
            let cells: Vec<Cell> = (0..VARIANTS.len())
                .map(|vi| sum_where(res, |k| k.0 == ei && k.1 == vi && k.2 == pct(us)))
                .collect();
            let base = cells[cst].mean(cells[cst].package_w);
            let _ = write!(s, "{:>6}%", pct(us));
            for (c, v) in cells.iter().zip(&VARIANTS) {
                if v.name != "bss" && v.name != "bss+cstates" {
                    let _ = write!(s, " {:>19.1}%", reduction(c.mean(c.package_w), base));
                }
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "\n   admissions and work: new jobs accepted (% of offered) | managed-core energy per second of full-speed work done (J/s; the work includes the accepted jobs, so a policy that accepts less also works less)");
        let _ = write!(s, "{:>7}", "u_sched");
        for v in &VARIANTS {
            let _ = write!(s, " {:>11}", format!("{} acc", v.name));
        }
        for v in &VARIANTS {
            let _ = write!(s, " {:>11}", format!("{} J/s", v.name));
        }
        let _ = writeln!(s);
        for &us in &U_SCHED {
            let cells: Vec<Cell> = (0..VARIANTS.len())
                .map(|vi| sum_where(res, |k| k.0 == ei && k.1 == vi && k.2 == pct(us)))
                .collect();
            let _ = write!(s, "{:>6}%", pct(us));
            for c in &cells {
                let _ = write!(s, " {:>10.1}%", c.accepted_pct());
            }
            for c in &cells {
                let _ = write!(s, " {:>11.2}", c.j_per_work_s());
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "\n   detail: u_sched/u_new -> package W per variant, new jobs accepted per variant, managed-core busy % (bss), dvfs mean MHz");
        for &us in &U_SCHED {
            for &un in &U_NEW {
                let cells: Vec<Cell> = (0..VARIANTS.len())
                    .map(|vi| {
                        sum_where(res, |k| {
                            k.0 == ei && k.1 == vi && k.2 == pct(us) && k.3 == pct(un)
                        })
                    })
                    .collect();
                let _ = write!(s, "   {:>3}%/{:>3}%", pct(us), pct(un));
                for (c, v) in cells.iter().zip(&VARIANTS) {
                    let _ = write!(s, " {}={:.1}", v.name, c.mean(c.package_w));
                }
                let b = &cells[bss];
                let d = &cells[variant("dvfs")];
                let _ = write!(s, "  accepted of {}:", b.offered);
                for (c, v) in cells.iter().zip(&VARIANTS) {
                    let _ = write!(s, " {}={}", v.name, c.accepted);
                }
                let _ = writeln!(
                    s,
                    "  busy {:.0}%  dvfs {:.0} MHz",
                    100.0 * b.mean(b.busy),
                    d.mean(d.mhz)
                );
            }
        }
        if opts.slot_ms.len() > 1 {
            let _ = writeln!(s, "\n   slot length: package power difference against {} ms slots (paper Fig. 4b: a small decrease for longer slots)", opts.slot_ms[0]);
            for (vi, v) in VARIANTS.iter().enumerate() {
                let at = |ms: u64| {
                    let c = sum_where(res, |k| k.0 == ei && k.1 == vi && k.4 == ms);
                    c.mean(c.package_w)
                };
                let base = at(opts.slot_ms[0]);
                let _ = write!(s, "   {:>11}", v.name);
                for &ms in &opts.slot_ms[1..] {
                    let _ = write!(s, "  {ms} ms: {:+.2}%", reduction(at(ms), base));
                }
                let _ = writeln!(s);
            }
        }
    }
    let total = sum_where(res, |_| true);
    let _ = writeln!(
        s,
        "\nguaranteed deadline misses over all runs: {} (goal 0); runs: {}",
        total.misses, total.n
    );
    s
}

/// Two panels (one per execution model): average package power against scheduled utilization.
fn svg(model: &PowerModel, res: &Results) -> String {
    const COLORS: [&str; 5] = ["#000000", "#1f77b4", "#d62728", "#2ca02c", "#7f7f7f"];
    let (pw, ph, ml, mt, mb) = (460.0, 300.0, 60.0, 40.0, 50.0);
    let width = 2.0 * (pw + ml) + 20.0;
    let height = ph + mt + mb + 90.0;
    let series = |ei: usize, vi: usize| -> Vec<(f64, f64)> {
        U_SCHED
            .iter()
            .map(|&us| {
                let c = sum_where(res, |k| k.0 == ei && k.1 == vi && k.2 == pct(us));
                (us, c.mean(c.package_w))
            })
            .collect()
    };
    let all: Vec<f64> = (0..EXECS.len())
        .flat_map(|ei| (0..VARIANTS.len()).flat_map(move |vi| series(ei, vi)))
        .map(|p| p.1)
        .collect();
    let ymax = (all.iter().cloned().fold(0.0, f64::max) / 10.0).ceil() * 10.0;
    // The axis starts at 0 W so that differences are not exaggerated.
    let ymin = 0.0;
    let ymax = if ymax > ymin { ymax } else { ymin + 10.0 };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (ei, (ename, _)) in EXECS.iter().enumerate() {
        let x0 = ml + ei as f64 * (pw + ml + 20.0);
        let (y0, y1) = (mt, mt + ph);
        let x = |u: f64| x0 + (u - 0.2) / 0.6 * pw;
        let y = |w: f64| y1 - (w - ymin) / (ymax - ymin) * ph;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">Average package power, {ename}</text>"#,
            x0 + pw / 2.0,
            y0 - 15.0
        );
        let _ = writeln!(
            s,
            r#"<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        );
        for &us in &U_SCHED {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{}%</text>"#,
                x(us),
                y1 + 16.0,
                pct(us)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">utilization of scheduled VMs</text>"#,
            x0 + pw / 2.0,
            y1 + 34.0
        );
        let step = if ymax - ymin > 100.0 { 20.0 } else { 10.0 };
        let mut w = ymin;
        while w <= ymax + 1e-9 {
            let (xe, yw, xt, yt) = (x0 + pw, y(w), x0 - 5.0, y(w) + 4.0);
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" x2="{xe}" y1="{yw}" y2="{yw}" stroke="#dddddd"/><text x="{xt}" y="{yt}" text-anchor="end">{w:.0} W</text>"##
            );
            w += step;
        }
        for (vi, v) in VARIANTS.iter().enumerate() {
            let pts: Vec<String> = series(ei, vi)
                .iter()
                .map(|&(u, w)| format!("{:.1},{:.1}", x(u), y(w)))
                .collect();
            let dash = if v.name == "bss+cstates" {
                r#" stroke-dasharray="5,4""#
            } else {
                ""
            };
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
                pts.join(" "),
                COLORS[vi]
            );
        }
    }
    let ly = mt + ph + mb + 10.0;
    for (vi, v) in VARIANTS.iter().enumerate() {
        let lx = ml + vi as f64 * 150.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            lx + 25.0,
            COLORS[vi],
            lx + 30.0,
            ly + 4.0,
            v.name
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="{}">Paper (measured, RAPL, Xeon Gold 5218), reduction vs BSS: DPM -31.85% / DVFS -29.81% at the lowest utilization, about -23% / -28% at 50%, -3.16% / -4.58% at the highest.</text>"#,
        ly + 30.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="{}">This plot: simulation with power model {} (an estimate, docs/energy.md); package = uncore + housekeeping core + {} managed cores.</text>"#,
        ly + 48.0,
        model.name,
        scx_tt::sim::experiment::managed_cores(model)
    );
    let _ = writeln!(s, "</svg>");
    s
}
