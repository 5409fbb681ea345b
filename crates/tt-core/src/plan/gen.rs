//! `plan gen`: random periodic task sets (UUnifast) as plans, reproducible from a seed.
//!
//! # Algorithm
//! ```text
//! gen(params, seed):
//!   loop (at most MAX_ATTEMPTS seeds: seed, seed+1, ...):
//!     rng = splitmix64(seed)
//!     u[] = UUnifast-discard(n, U)        // n utilizations summing to U, each ≤ 1 (at most
//!                                         // UUNIFAST_DRAWS draws, else the seed fails)
//!     for each u_i:
//!       candidates = periods P in [Pmin, Pmax] (dividing frame_slots, when given)
//!                    with round(u_i·P) in [Wmin, Wmax]
//!       P = uniform pick among candidates (all of [Pmin, Pmax] if none); C = clamp(round(u_i·P))
//!     plan = tasks t0..t{n-1} on managed CPUs 1..=K (housekeeping 0), partitioned by the
//!            validator (worst-fit decreasing)
//!     if Plan::try_from(plan) is Ok: return (plan, seed)
//!     note why (infeasible / frame above the cap), seed += 1
//! ```
//! The PRNG (splitmix64) and every step are written here, so a seed names the same plan across
//! versions and machines (the utilizations are rounded to integer slots, which absorbs the last
//! bits of `powf`).
//!
//! # Properties
//! 1. (Deterministic) The same parameters give the same plan and the same seed used.
//! 2. (Valid) A returned plan passes `Plan::try_from`; rejected seeds are listed with the first
//!    error of each.
//! 3. (Ranges) Periods lie in the period range (and divide `frame_slots` when given); wcets lie
//!    in the WCET range and never exceed the period.

use super::raw::{RawCpus, RawPlan, RawTask};
use super::timing::FRAME_CAP_SLOTS;
use super::validate::{SLOT_US_MAX, SLOT_US_MIN};
use super::Plan;
use crate::abi::{MAX_CPUS, MAX_TASKS};
use crate::planner::offline::Slot;

/// Seeds tried before giving up.
pub const MAX_ATTEMPTS: u64 = 1000;

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenParams {
    pub tasks: usize,
    /// Total utilization of the set (Σ wcet/period), at most `cpus`.
    pub util: f64,
    pub cpus: u32,
    /// Inclusive WCET range in slots.
    pub wcet: (Slot, Slot),
    /// Inclusive period range in slots.
    pub period: (Slot, Slot),
    pub seed: u64,
    pub slot_us: u64,
    /// When given, periods are drawn among its divisors, so the frame stays this size.
    pub frame_slots: Option<Slot>,
    /// argv every generated task spawns.
    pub cmd: Vec<String>,
}

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum GenError {
    /// A refused argument (the message names the flag, its value and the rule): `plan gen`
    /// exits 2, as for any invalid input.
    #[error("{0}")]
    Params(String),
    /// The arguments are valid but no seed tried gave a valid plan: exit 1.
    #[error("no valid plan in {MAX_ATTEMPTS} seeds from {first}; last reason: {last}")]
    Exhausted { first: u64, last: String },
}

/// A generated plan and how it was found.
#[derive(Debug)]
pub struct Generated {
    pub raw: RawPlan,
    pub plan: Plan,
    /// The seed that produced `raw`.
    pub seed: u64,
    /// One line per rejected seed.
    pub retries: Vec<String>,
}

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and fully specified here.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform index in `0..n` (n > 0), by rejection so there is no modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// UUnifast (Bini & Buttazzo 2005), discarding sets with a task above 1 (UUnifast-discard) so
/// that multiprocessor totals work.
///
/// Draws at most [`UUNIFAST_DRAWS`] sets; `None` if every one had a task above 1 (a total close
/// to `n` makes that likely, a total of exactly `n > 1` certain).
pub fn uunifast(n: usize, total: f64, rng: &mut SplitMix64) -> Option<Vec<f64>> {
    for _ in 0..UUNIFAST_DRAWS {
        let mut out = Vec::with_capacity(n);
        let mut sum = total;
        for i in 1..n {
            let next = sum * rng.next_f64().powf(1.0 / (n - i) as f64);
            out.push(sum - next);
            sum = next;
        }
        out.push(sum);
        if out.iter().all(|&u| u <= 1.0) {
            return Some(out);
        }
    }
    None
}

/// Sets UUnifast-discard draws per seed before the seed is given up.
pub const UUNIFAST_DRAWS: usize = 100;

fn check(p: &GenParams) -> Result<(), GenError> {
    let bad = |m: String| Err(GenError::Params(m));
    if p.tasks == 0 {
        return bad(format!("--tasks {}: must be at least 1", p.tasks));
    }
    if p.cpus == 0 {
        return bad(format!("--cpus {}: must be at least 1", p.cpus));
    }
    // The BPF limits (plan::limits) would reject every seed; say so once instead.
    if p.tasks > MAX_TASKS {
        return bad(format!(
            "--tasks {} is above the BPF scheduler's limit of {MAX_TASKS} tasks",
            p.tasks
        ));
    }
    if p.cpus >= MAX_CPUS {
        return bad(format!(
            "--cpus {} needs CPU ids up to {}, above the BPF scheduler's highest CPU id {}",
            p.cpus,
            p.cpus,
            MAX_CPUS - 1
        ));
    }
    if !(p.util > 0.0 && p.util <= p.cpus as f64 && p.util <= p.tasks as f64) {
        return bad(format!(
            "--util {} must be in (0, min(--cpus, --tasks)]",
            p.util
        ));
    }
    for (flag, (lo, hi)) in [("--wcet", p.wcet), ("--period", p.period)] {
        if lo == 0 || lo > hi {
            return bad(format!(
                "{flag} {lo}..{hi} must be a range A..B with 1 ≤ A ≤ B"
            ));
        }
    }
    // A period above the frame cap can never be in a valid plan; the range is enumerated.
    if p.period.1 > FRAME_CAP_SLOTS {
        return bad(format!(
            "--period {}..{}: B must be at most {FRAME_CAP_SLOTS} (the frame cap)",
            p.period.0, p.period.1
        ));
    }
    if let Some(f) = p.frame_slots {
        if f == 0 || f > FRAME_CAP_SLOTS {
            return bad(format!(
                "--frame-slots {f} must be in 1..={FRAME_CAP_SLOTS} (the frame cap)"
            ));
        }
    }
    if !(SLOT_US_MIN..=SLOT_US_MAX).contains(&p.slot_us) {
        return bad(format!(
            "--slot-us {} must be in {SLOT_US_MIN}..={SLOT_US_MAX} (the plan's slot_us range)",
            p.slot_us
        ));
    }
    if candidate_periods(p).is_empty() {
        return bad(format!(
            "no period in --period {}..{} is at least the smallest wcet {}{}",
            p.period.0,
            p.period.1,
            p.wcet.0,
            p.frame_slots
                .map_or(String::new(), |f| format!(" and divides --frame-slots {f}"))
        ));
    }
    if p.cmd.is_empty() {
        return bad("the task command must not be empty".into());
    }
    Ok(())
}

/// Periods a task may get: in the period range, at least the smallest wcet (so the wcet range
/// can be met), dividing `frame_slots` when given.
fn candidate_periods(p: &GenParams) -> Vec<Slot> {
    (p.period.0.max(p.wcet.0)..=p.period.1)
        .filter(|d| p.frame_slots.is_none_or(|f| f % d == 0))
        .collect()
}

/// One attempt: the raw plan of `seed` (`None`: UUnifast-discard found no set).
pub fn raw_plan(p: &GenParams, seed: u64) -> Option<RawPlan> {
    raw_plan_from(p, seed, &candidate_periods(p))
}

/// [`raw_plan`] with the candidate periods computed once for all seeds.
fn raw_plan_from(p: &GenParams, seed: u64, periods: &[Slot]) -> Option<RawPlan> {
    let mut rng = SplitMix64::new(seed);
    let tasks = uunifast(p.tasks, p.util, &mut rng)?
        .into_iter()
        .enumerate()
        .map(|(i, u)| {
            let wcet_of = |period: Slot| ((u * period as f64).round() as u64).clamp(1, period);
            // `wcet_of` does not decrease with the period (u ≤ 1), so the periods whose wcet
            // lies in the range are one run of the sorted candidates: two binary searches
            // instead of a pass over up to FRAME_CAP_SLOTS periods per task.
            let lo = periods.partition_point(|&t| wcet_of(t) < p.wcet.0);
            let hi = periods.partition_point(|&t| wcet_of(t) <= p.wcet.1);
            let fits = &periods[lo..hi.max(lo)];
            let pool = if fits.is_empty() { periods } else { fits };
            let period = pool[rng.below(pool.len() as u64) as usize];
            let wcet = wcet_of(period).clamp(p.wcet.0, p.wcet.1).min(period);
            RawTask {
                name: Some(format!("t{i}")),
                cmd: Some(p.cmd.clone()),
                class: Some("tt".into()),
                period: Some(period),
                wcet: Some(wcet),
                ..RawTask::default()
            }
        })
        .collect();
    Some(RawPlan {
        version: Some(1),
        slot_us: Some(p.slot_us),
        frame_slots: p.frame_slots,
        cpus: Some(RawCpus {
            managed: Some((1..=p.cpus).collect()),
            housekeeping: Some(vec![0]),
        }),
        tasks: Some(tasks),
        table: None,
        server: None,
    })
}

/// The first valid plan from `params.seed` on (see the module doc).
pub fn generate(params: &GenParams) -> Result<Generated, GenError> {
    check(params)?;
    let mut retries = Vec::new();
    let periods = candidate_periods(params);
    // MAX_ATTEMPTS seeds from the given one on, wrapping past u64::MAX
    for seed in (0..MAX_ATTEMPTS).map(|k| params.seed.wrapping_add(k)) {
        let Some(raw) = raw_plan_from(params, seed, &periods) else {
            retries.push(format!(
                "seed {seed}: UUnifast-discard drew {UUNIFAST_DRAWS} sets, each with a task \
                 above utilization 1 (--util {} is close to --tasks {})",
                params.util, params.tasks
            ));
            continue;
        };
        match Plan::try_from(raw.clone()) {
            Ok(plan) => {
                return Ok(Generated {
                    raw,
                    plan,
                    seed,
                    retries,
                })
            }
            Err(e) => {
                let first = e.iter().next().map_or(String::new(), |x| x.to_string());
                retries.push(format!("seed {seed}: {first}"));
            }
        }
    }
    Err(GenError::Exhausted {
        first: params.seed,
        last: retries.pop().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_values() {
        // First outputs for seed 1234567 from the reference C implementation.
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }

    #[test]
    fn uunifast_sums_to_total_and_each_at_most_one() {
        let mut r = SplitMix64::new(7);
        for n in 1..20 {
            let u = uunifast(n, 0.9 * n.min(3) as f64, &mut r).unwrap();
            assert_eq!(u.len(), n);
            let sum: f64 = u.iter().sum();
            assert!((sum - 0.9 * n.min(3) as f64).abs() < 1e-9, "{sum}");
            assert!(u.iter().all(|&x| (0.0..=1.0).contains(&x)));
        }
    }

    fn params() -> GenParams {
        GenParams {
            tasks: 8,
            util: 1.0,
            cpus: 2,
            wcet: (1, 15),
            period: (15, 50),
            seed: 1,
            slot_us: 1000,
            frame_slots: Some(480),
            cmd: vec!["/bin/true".into()],
        }
    }

    #[test]
    fn same_seed_same_plan() {
        let a = generate(&params()).unwrap();
        let b = generate(&params()).unwrap();
        assert_eq!(a.raw, b.raw);
        assert_eq!(a.seed, b.seed);
    }

    #[test]
    fn generated_tasks_respect_ranges_and_frame() {
        let g = generate(&params()).unwrap();
        assert_eq!(g.plan.frame_slots, 480);
        for t in g.raw.tasks.unwrap() {
            let (period, wcet) = (t.period.unwrap(), t.wcet.unwrap());
            assert!((15..=50).contains(&period) && 480 % period == 0, "{period}");
            assert!((1..=15).contains(&wcet) && wcet <= period, "{wcet}");
        }
    }

    #[test]
    fn impossible_sets_are_retried_then_reported() {
        // One CPU at utilization 1 with wcet forced to at least 10 of periods 15..16: the rounding
        // up makes every set overloaded, so every seed fails.
        let p = GenParams {
            tasks: 3,
            util: 1.0,
            cpus: 1,
            wcet: (10, 15),
            period: (15, 16),
            frame_slots: None,
            ..params()
        };
        match generate(&p) {
            Err(GenError::Exhausted { first, last }) => {
                assert_eq!(first, 1);
                assert!(last.contains("misses its deadline"), "{last}");
            }
            other => panic!("expected exhaustion, got {other:?}"),
        }
    }

    #[test]
    fn bad_params_are_rejected() {
        let p = GenParams {
            util: 3.0,
            ..params()
        };
        assert!(matches!(generate(&p), Err(GenError::Params(_))));
        // 480 has no divisor in 33..39.
        let p = GenParams {
            period: (33, 39),
            ..params()
        };
        assert!(matches!(generate(&p), Err(GenError::Params(m)) if m.contains("divides")));
    }

    #[test]
    fn params_beyond_the_bpf_limits_are_rejected_before_any_seed() {
        // managed CPUs are 1..=cpus: 1023 fits below TT_MAX_CPUS = 1024; 1024 and the
        // largest u32 do not (no wrap of cpus + 1)
        for cpus in [MAX_CPUS, u32::MAX] {
            let p = GenParams {
                cpus,
                util: 1.0,
                ..params()
            };
            assert!(
                matches!(generate(&p), Err(GenError::Params(m)) if m == format!("--cpus {cpus} needs CPU ids up to {cpus}, above the BPF scheduler's highest CPU id 1023"))
            );
        }
        let p = GenParams {
            cpus: MAX_CPUS - 1,
            util: 1.0,
            ..params()
        };
        assert!(!matches!(generate(&p), Err(GenError::Params(m)) if m.starts_with("--cpus")));
        let p = GenParams {
            tasks: MAX_TASKS + 1,
            ..params()
        };
        assert!(
            matches!(generate(&p), Err(GenError::Params(m)) if m.contains("limit of 1024 tasks"))
        );
    }
}
