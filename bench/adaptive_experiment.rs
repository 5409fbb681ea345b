//! Seed 003's Figure-2 style experiment (LFS++, Sections 4 and 5.3) in slots: a legacy periodic
//! task served by an adaptive periodic reservation (P, Q) whose budget follows
//! `scx_tt::adaptive::BandwidthController`; the deadline-miss ratio and the bandwidth used
//! against the reservation period's error relative to the true period (P/T − 1) and against the
//! spread factor x. Also one closed-loop run where P comes from `scx_tt::adaptive::period`.
//!
//! ```text
//! cargo bench --bench adaptive_experiment              # full grid (about a second)
//! cargo bench --bench adaptive_experiment -- --quick   # 1 seed, 60 s a run
//! ```
//! Options: `--quick`, `--seeds N`, `--seconds N`, `--out DIR`. Writes
//! `DIR/adaptive_experiment.txt` and `DIR/adaptive_experiment.svg` (default `bench/results`).
//! docs/adaptive.md describes the set-up and the result.
//!
//! Set-up (one slot = 1 ms):
//! - Task: a job every T = 40 slots, execution uniform in 6..=14 slots (mean 10: 25 % of the
//!   CPU), one thread: a job starts when the previous one is done (a late job delays the next);
//!   deadline the next release. A job is late (a miss) if it completes after its deadline.
//! - Reservation: Q slots in every window [jP, (j+1)P), contiguous, at an offset uniform in
//!   [0, P − Q] (where the table's EDF happens to put it: neither the best nor the worst case).
//!   The task runs in the reservation's slots only (the rest of the CPU belongs to others).
//! - Controller: S = 1000 slots, N = 16, p = 0.9375 (the paper's example), x on the grid,
//!   max_bandwidth 0.9; Q = the slots of `BudgetRequest::to_slots` for period P, updated every
//!   S; before the first sample Q = 50 % of P. The first 5 s are not measured (warm-up).
//! - Bandwidth: the mean of Q/P over the measured time (allocated) and the CPU the task used.

#[path = "planner_common.rs"]
#[allow(dead_code)]
mod common;

use common::machine;
use scx_tt::adaptive::controller::{BandwidthController, ControllerConfig};
use scx_tt::adaptive::period::{AnalyserConfig, PeriodAnalyser};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

const SLOT_NS: u64 = 1_000_000;
const T: u64 = 40;
const EXEC: (u64, u64) = (6, 14);
const S: u64 = 1000;
const WARMUP: u64 = 5000;
/// Reservation periods: P/T − 1 from −20 % to +20 %.
const PERIODS: [u64; 11] = [32, 34, 36, 38, 39, 40, 41, 42, 44, 46, 48];
const SPREADS: [f64; 5] = [0.0, 0.1, 0.2, 0.3, 0.5];

/// xorshift64*, seeded.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

struct Opts {
    seeds: u64,
    slots: u64,
    out: PathBuf,
    quick: bool,
}

fn parse_opts() -> Result<Opts, String> {
    let mut o = Opts {
        seeds: 5,
        slots: 200_000,
        out: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/results"),
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
                o.seeds = 1;
                o.slots = 60_000;
            }
            "--seeds" => o.seeds = num("--seeds", val("--seeds")?)?.clamp(1, 100),
            "--seconds" => o.slots = num("--seconds", val("--seconds")?)?.clamp(10, 10_000) * 1000,
            "--out" => o.out = val("--out")?.into(),
            "--bench" => {}
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// Totals of one or more runs.
#[derive(Clone, Copy, Debug, Default)]
struct Outcome {
    jobs: u64,
    misses: u64,
    /// Σ over measured slots of Q/P.
    alloc: f64,
    /// Slots the task ran, measured.
    used: u64,
    slots: u64,
    /// Σ response/T over measured jobs, and the worst.
    resp: f64,
    worst: f64,
}

impl Outcome {
    fn add(&mut self, o: Outcome) {
        self.jobs += o.jobs;
        self.misses += o.misses;
        self.alloc += o.alloc;
        self.used += o.used;
        self.slots += o.slots;
        self.resp += o.resp;
        self.worst = self.worst.max(o.worst);
    }
    fn miss_pct(&self) -> f64 {
        100.0 * self.misses as f64 / self.jobs.max(1) as f64
    }
    fn alloc_pct(&self) -> f64 {
        100.0 * self.alloc / self.slots.max(1) as f64
    }
    fn used_pct(&self) -> f64 {
        100.0 * self.used as f64 / self.slots.max(1) as f64
    }
    fn mean_resp(&self) -> f64 {
        self.resp / self.jobs.max(1) as f64
    }
}

/// How the reservation period is chosen.
#[derive(Clone, Copy)]
enum PeriodChoice {
    Fixed(u64),
    /// From the analyser on the wakeups of the first `H` (the task runs meanwhile with a
    /// provisional reservation of 50 % every 50 slots).
    Analysed,
}

/// One run: returns the outcome and the reservation period used after the analysis.
fn run(seed: u64, slots: u64, spread: f64, choice: PeriodChoice) -> (Outcome, u64) {
    let mut rng = Rng::new(seed);
    let mut place = Rng::new(seed ^ 0x5EED);
    let cfg = ControllerConfig {
        period_min_ns: 5 * SLOT_NS,
        period_max_ns: 500 * SLOT_NS,
        percentile: 0.9375,
        window: 16,
        spread,
        sampling_ns: S * SLOT_NS,
        max_bandwidth: 0.9,
        min_bandwidth: 0.0,
    };
    let mut ctl = BandwidthController::new(cfg).expect("valid controller parameters");
    let acfg = AnalyserConfig::default();
    let horizon = acfg.horizon_ns / SLOT_NS;
    let mut analyser = PeriodAnalyser::new(acfg).expect("valid analyser parameters");
    let (mut period, mut analysing) = match choice {
        PeriodChoice::Fixed(p) => (p, false),
        PeriodChoice::Analysed => (50, true),
    };
    let mut budget = period / 2;
    // the current server window: [win_start, win_start + period), supply [sup_lo, sup_hi)
    let mut win_start = 0;
    let mut sup_lo = 0;
    let mut sup_hi = 0;
    // the task: releases, its queue of (release, remaining) jobs
    let mut queue: std::collections::VecDeque<(u64, u64)> = Default::default();
    let mut out = Outcome::default();
    let mut consumed_total = 0u64;
    let mut next_period = period;
    let mut next_budget = budget;
    for s in 0..slots {
        if s % T == 0 {
            if queue.is_empty() {
                // the task was blocked: this release is a wakeup event
                analyser.push(s * SLOT_NS);
            }
            queue.push_back((s, rng.range(EXEC.0, EXEC.1)));
        }
        if analysing && s == horizon {
            analyser.advance(s * SLOT_NS);
            if let Some(e) = analyser.detect().estimate() {
                next_period = ((e.period_ns / SLOT_NS as f64) + 1e-9).floor().max(1.0) as u64;
            }
            analysing = false;
        }
        if s > 0 && s % S == 0 {
            if let Some(r) = ctl.step(consumed_total * SLOT_NS, next_period as f64 * 1e6) {
                next_budget = r
                    .to_slots(SLOT_NS, None)
                    .expect("the period is at least one slot")
                    .wcet_slots;
            }
        } else if s == 0 {
            ctl.read(0);
        }
        // a new server window takes the latest period and budget
        if s == win_start + period || s == 0 {
            if s > 0 {
                win_start = s;
            }
            period = next_period;
            budget = next_budget.min(period);
            let off = place.range(0, period - budget);
            sup_lo = win_start + off;
            sup_hi = sup_lo + budget;
        }
        let measured = s >= WARMUP;
        if measured {
            out.slots += 1;
            out.alloc += budget as f64 / period as f64;
        }
        if (sup_lo..sup_hi).contains(&s) {
            if let Some(front) = queue.front_mut() {
                front.1 -= 1;
                consumed_total += 1;
                if measured {
                    out.used += 1;
                }
                if front.1 == 0 {
                    let (release, _) = queue.pop_front().expect("front");
                    let finish = s + 1;
                    if release >= WARMUP {
                        let resp = (finish - release) as f64 / T as f64;
                        out.jobs += 1;
                        out.misses += u64::from(finish > release + T);
                        out.resp += resp;
                        out.worst = out.worst.max(resp);
                    }
                }
            }
        }
    }
    // jobs still queued at the end whose deadline passed are misses too
    for &(release, _) in &queue {
        if release >= WARMUP && release + T <= slots {
            out.jobs += 1;
            out.misses += 1;
        }
    }
    (out, period)
}

fn main() {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("adaptive_experiment: {e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let mut grid = vec![[Outcome::default(); SPREADS.len()]; PERIODS.len()];
    for (i, &p) in PERIODS.iter().enumerate() {
        for (j, &x) in SPREADS.iter().enumerate() {
            for seed in 0..opts.seeds {
                grid[i][j].add(run(seed, opts.slots, x, PeriodChoice::Fixed(p)).0);
            }
        }
    }
    let mut closed = Vec::new();
    for (j, &x) in SPREADS.iter().enumerate() {
        let mut o = Outcome::default();
        let mut periods = Vec::new();
        for seed in 0..opts.seeds {
            let (r, p) = run(seed, opts.slots, x, PeriodChoice::Analysed);
            o.add(r);
            periods.push(p);
        }
        closed.push((j, o, periods));
    }
    let secs = started.elapsed().as_secs_f64();
    let report = render(&opts, &grid, &closed, secs);
    print!("{report}");
    if let Err(e) = common::write_outputs(&opts.out, "adaptive_experiment", &report, &svg(&grid)) {
        eprintln!("adaptive_experiment: writing results: {e}");
        std::process::exit(1);
    }
}

fn err_pct(p: u64) -> f64 {
    (p as f64 / T as f64 - 1.0) * 100.0
}

fn render(
    opts: &Opts,
    grid: &[[Outcome; SPREADS.len()]],
    closed: &[(usize, Outcome, Vec<u64>)],
    secs: f64,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "adaptive_experiment: {}", machine());
    let _ = writeln!(
        s,
        "grid: {} ({} seeds a point, {} slots of 1 ms = {:.0} s a run, first {} s not measured); {secs:.1} s",
        if opts.quick { "--quick" } else { "full" },
        opts.seeds,
        opts.slots,
        opts.slots as f64 / 1000.0,
        WARMUP / 1000
    );
    let _ = writeln!(
        s,
        "task: T = {T} slots, execution uniform {}..={} slots (utilisation 25 %, peak 35 %); reservation (P, Q): Q contiguous slots at a random offset of each window of P; controller S = {S} slots, N = 16, p = 0.9375, max bandwidth 0.9",
        EXEC.0, EXEC.1
    );
    let _ = writeln!(
        s,
        "cells: deadline-miss ratio % / allocated bandwidth Q/P % (CPU used by the task: {:.1} % in every cell that keeps up)",
        grid[5][2].used_pct()
    );
    let _ = write!(s, "\n{:>5} {:>7}", "P", "P/T-1");
    for x in SPREADS {
        let _ = write!(s, " | {:>13}", format!("x = {x:.1}"));
    }
    let _ = writeln!(s);
    for (i, &p) in PERIODS.iter().enumerate() {
        let _ = write!(s, "{:>5} {:>+6.1}%", p, err_pct(p));
        for o in &grid[i] {
            let _ = write!(s, " | {:>5.1} / {:>5.1}", o.miss_pct(), o.alloc_pct());
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "\nmean response time / T (worst), P = T: {}",
        SPREADS
            .iter()
            .enumerate()
            .map(|(j, x)| format!(
                "x {x:.1}: {:.2} ({:.2})",
                grid[5][j].mean_resp(),
                grid[5][j].worst
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "\nclosed loop: P from the period analyser on the task's wakeups of the first 2 s (provisional reservation 25 of every 50 slots meanwhile)"
    );
    for (j, o, periods) in closed {
        let _ = writeln!(
            s,
            "  x {:.1}: P = {:?} slots (T = {T}); miss {:.1} %, allocated {:.1} %",
            SPREADS[*j],
            periods,
            o.miss_pct(),
            o.alloc_pct()
        );
    }
    // the paper's claims, checked
    let best = |j: usize| {
        (0..PERIODS.len())
            .min_by(|&a, &b| grid[a][j].miss_pct().total_cmp(&grid[b][j].miss_pct()))
            .unwrap_or(0)
    };
    let _ = writeln!(
        s,
        "\npaper (Section 4, Fig. 2): a reservation period at or just below the task's serves it best; above it misses grow"
    );
    for (j, x) in SPREADS.iter().enumerate() {
        let above: f64 = (6..PERIODS.len())
            .map(|i| grid[i][j].miss_pct())
            .sum::<f64>()
            / (PERIODS.len() - 6) as f64;
        let below: f64 = (0..5).map(|i| grid[i][j].miss_pct()).sum::<f64>() / 5.0;
        let _ = writeln!(
            s,
            "  x {x:.1}: fewest misses at P = {} ({:+.1} %); mean miss % with P < T {:.1}, P = T {:.1}, P > T {:.1}",
            PERIODS[best(j)],
            err_pct(PERIODS[best(j)]),
            below,
            grid[5][j].miss_pct(),
            above
        );
    }
    let _ = writeln!(
        s,
        "paper (Section 5.3): a larger x buys fewer misses with more bandwidth; at P = T: {}",
        SPREADS
            .iter()
            .enumerate()
            .map(|(j, x)| format!(
                "x {x:.1} → {:.1} % / {:.1} %",
                grid[5][j].miss_pct(),
                grid[5][j].alloc_pct()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    s
}

/// Two panels: miss ratio and allocated bandwidth against P/T − 1, one line per x.
fn svg(grid: &[[Outcome; SPREADS.len()]]) -> String {
    const COLORS: [&str; 5] = ["#000000", "#1f77b4", "#2ca02c", "#ff7f0e", "#d62728"];
    let (pw, ph, ml, mt, gap) = (360.0, 240.0, 60.0, 50.0, 80.0);
    let width = ml + 2.0 * (pw + gap);
    let height = mt + ph + 110.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let miss_max = grid
        .iter()
        .flatten()
        .map(Outcome::miss_pct)
        .fold(1.0, f64::max);
    let miss_top = (miss_max / 10.0).ceil() * 10.0;
    let alloc_max = grid
        .iter()
        .flatten()
        .map(Outcome::alloc_pct)
        .fold(1.0, f64::max);
    let alloc_top = (alloc_max / 10.0).ceil() * 10.0;
    type Metric = fn(&Outcome) -> f64;
    let panels: [(&str, f64, Metric); 2] = [
        ("deadline-miss ratio %", miss_top, Outcome::miss_pct),
        ("allocated bandwidth Q/P %", alloc_top, Outcome::alloc_pct),
    ];
    for (k, (title, top, metric)) in panels.iter().enumerate() {
        let x0 = ml + k as f64 * (pw + gap);
        let (y0, y1) = (mt, mt + ph);
        let xe = |e: f64| x0 + (e + 20.0) / 40.0 * pw;
        let y = |v: f64| y1 - v / top * ph;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{title} vs reservation period error P/T − 1</text>"#,
            x0 + pw / 2.0,
            y0 - 15.0
        );
        let _ = writeln!(
            s,
            r#"<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        );
        for t in 0..=4 {
            let v = top * t as f64 / 4.0;
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" x2="{}" y1="{yv}" y2="{yv}" stroke="#dddddd"/><text x="{}" y="{}" text-anchor="end">{v:.0}</text>"##,
                x0 + pw,
                x0 - 5.0,
                y(v) + 4.0,
                yv = y(v)
            );
        }
        for e in [-20.0, -10.0, 0.0, 10.0, 20.0] {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{e:+.0}%</text>"#,
                xe(e),
                y1 + 16.0
            );
        }
        for (j, x) in SPREADS.iter().enumerate() {
            let pts: Vec<String> = PERIODS
                .iter()
                .enumerate()
                .map(|(i, &p)| format!("{:.1},{:.1}", xe(err_pct(p)), y(metric(&grid[i][j]))))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="1.5"/>"#,
                pts.join(" "),
                COLORS[j]
            );
            let (lx, ly) = (x0 + 10.0 + j as f64 * 70.0, y1 + 40.0);
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{}" stroke-width="2"/><text x="{}" y="{}">x = {x:.1}</text>"#,
                lx + 15.0,
                COLORS[j],
                lx + 18.0,
                ly + 4.0
            );
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="{}">T = {T} slots, execution 6..14 slots; adaptive budget Q = (1 + x) · P · C_0.9375 / S, S = 1 s</text>"#,
        height - 20.0
    );
    let _ = writeln!(s, "</svg>");
    s
}
