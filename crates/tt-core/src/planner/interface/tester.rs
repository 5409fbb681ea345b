//! The schedulability test of one search: RM scheduling points, the EDF demand scan and its
//! horizon (decision 8), and the work counter that caps a search.

use super::big::gcd;
use super::workload::Workload;
use super::{sbf, InterfaceError, Resource, Scheduler, Supply, LARGEST_FLOAT_HORIZON};
use super::{MAX_EVALUATIONS, MAX_TEST_POINTS, U_ERROR};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Where an EDF test must look.
pub(super) enum Horizon {
    /// Θ = Π: sbf(t) = t ≥ U_W·t ≥ dbf(t).
    Dedicated,
    /// Θ < U_W·Π, or Θ = U_W·Π with a blackout: fails in the long run.
    Fails,
    /// Deadlines up to this t.
    Upto(u128),
}

/// One search: the workload, the test, the RM points and the work counter.
pub(super) struct Tester<'a> {
    pub(super) w: &'a Workload,
    pub(super) scheduler: Scheduler,
    pub(super) supply: Supply,
    /// RM: per rank, its scheduling points `(t, rbf_rank(t))` in increasing t.
    pub(super) points: Vec<Vec<(u64, u128)>>,
    pub(super) evaluations: u64,
    /// (period being examined, search bound) for the work-cap error.
    pub(super) at: (u64, Option<u64>),
    /// EDF: the next deadline of each task, reused by every scan.
    pub(super) heap: BinaryHeap<Reverse<(u128, usize)>>,
    /// (Π, lcm(H, Π)); Π = 0 before the first.
    pub(super) lcm_cache: (u64, u128),
    /// (H, U_W·H) when H < 2^64; always for EDF and for aligned supply (harmonic: H = p_n).
    pub(super) small: Option<(u128, u128)>,
}

impl<'a> Tester<'a> {
    pub(super) fn new(
        w: &'a Workload,
        scheduler: Scheduler,
        supply: Supply,
    ) -> Result<Tester<'a>, InterfaceError> {
        if supply == Supply::Aligned {
            if let Some((a, b)) = w.non_harmonic_pair() {
                return Err(InterfaceError::NotHarmonic {
                    a,
                    pa: w.tasks[a].period,
                    b,
                    pb: w.tasks[b].period,
                });
            }
        }
        let small = w.small.map(|(h, e)| (u128::from(h), u128::from(e)));
        let points = match scheduler {
            Scheduler::Rm => rm_points(w)?,
            Scheduler::Edf => Vec::new(),
        };
        Ok(Tester {
            w,
            scheduler,
            supply,
            points,
            evaluations: 0,
            at: (0, None),
            heap: BinaryHeap::new(),
            lcm_cache: (0, 0),
            small,
        })
    }

    pub(super) fn charge(&mut self, n: u64) -> Result<(), InterfaceError> {
        self.evaluations = self.evaluations.saturating_add(n);
        if self.evaluations > MAX_EVALUATIONS {
            return Err(InterfaceError::WorkCap {
                period: self.at.0,
                bound: self
                    .at
                    .1
                    .map_or_else(|| "not yet known".to_string(), |b| b.to_string()),
            });
        }
        Ok(())
    }

    /// RM needs the workload schedulable on a dedicated CPU, so that Θ = Π always passes.
    /// (EDF: U_W ≤ 1 is enough, and the workload checked it.)
    pub(super) fn require_dedicated(&mut self) -> Result<(), InterfaceError> {
        let dedicated = Resource {
            period: 1,
            budget: 1,
        };
        if self.scheduler == Scheduler::Rm {
            if let Some(rank) = self.rm_failing_rank(dedicated)? {
                let task = self.w.rm_order[rank];
                return Err(InterfaceError::NotRmSchedulable {
                    task,
                    period: self.w.tasks[task].period,
                    wcet: self.w.tasks[task].wcet,
                });
            }
        }
        Ok(())
    }

    pub(super) fn schedulable(&mut self, r: Resource) -> Result<bool, InterfaceError> {
        // Every test costs at least one evaluation, also when decided without a point.
        self.charge(1)?;
        Ok(match self.scheduler {
            Scheduler::Rm => self.rm_failing_rank(r)?.is_none(),
            Scheduler::Edf => self.edf_first_violation(r, r)?.is_none(),
        })
    }

    /// The first rank with no scheduling point where rbf ≤ sbf.
    pub(super) fn rm_failing_rank(&mut self, r: Resource) -> Result<Option<usize>, InterfaceError> {
        for rank in 0..self.points.len() {
            if self.rm_witness(rank, r)?.is_none() {
                return Ok(Some(rank));
            }
        }
        Ok(None)
    }

    /// The first scheduling point of `rank` where rbf ≤ sbf under `r`, with the values.
    pub(super) fn rm_witness(
        &mut self,
        rank: usize,
        r: Resource,
    ) -> Result<Option<(u64, u128, u128)>, InterfaceError> {
        let mut found = None;
        let mut scanned = 0;
        for &(t, rbf) in &self.points[rank] {
            scanned += 1;
            let s = sbf(r, self.supply, u128::from(t));
            if rbf <= s {
                found = Some((t, rbf, s));
                break;
            }
        }
        self.charge(scanned)?;
        Ok(found)
    }

    /// H when below 2^64 (always for aligned supply: W is harmonic, H = p_n).
    pub(super) fn small_hyperperiod(&self) -> Result<u128, InterfaceError> {
        self.small
            .map(|(h, _)| h)
            .ok_or(InterfaceError::Internal("hyperperiod above 2^64"))
    }

    /// Θ/Π against U_W: 128-bit products when H < 2^64 (the hot path), else big integers.
    pub(super) fn rate(&self, budget: u64, period: u64) -> Ordering {
        match self.small {
            // Θ·H and U_W·H·Π, both below 2^96.
            Some((h, e)) => (u128::from(budget) * h).cmp(&(e * u128::from(period))),
            None => self.w.compare_rate(budget, period),
        }
    }

    /// lcm(H, Π) ≤ 2^64·2^32, cached for the period last asked (a 128-bit gcd costs about a
    /// microsecond, and MinExec asks for the same period some 32 times).
    pub(super) fn lcm_with_hyperperiod(&mut self, period: u64) -> Result<u128, InterfaceError> {
        if self.lcm_cache.0 != period {
            let (h, p) = (self.small_hyperperiod()?, u128::from(period));
            self.lcm_cache = (period, h / gcd(h, p) * p);
        }
        Ok(self.lcm_cache.1)
    }

    /// Decision 8.
    pub(super) fn horizon(&mut self, r: Resource) -> Result<Horizon, InterfaceError> {
        let d = u128::from(r.period - r.budget);
        if d == 0 {
            return Ok(Horizon::Dedicated);
        }
        match (self.rate(r.budget, r.period), self.supply) {
            (Ordering::Less, _) => Ok(Horizon::Fails),
            (_, Supply::Aligned) => Ok(Horizon::Upto(self.small_hyperperiod()?)),
            // κ = U_W with a blackout: dbf(H) = κH > κ(H − d) ≥ sbf(H).
            (Ordering::Equal, Supply::General) => Ok(Horizon::Fails),
            (Ordering::Greater, Supply::General) => {
                let linear = self.linear_horizon(r)?;
                Ok(Horizon::Upto(match self.small {
                    Some(_) => linear.min(self.lcm_with_hyperperiod(r.period)? + d),
                    None => linear,
                }))
            }
        }
    }

    /// ⌈2d·κ/(κ − U_W)⌉ for κ > U_W, or a larger value (a longer horizon keeps the test
    /// exact). Exact in 128 bits when H < 2^64; else in floating point with U_W's rounding
    /// error ([`U_ERROR`]) as a margin.
    pub(super) fn linear_horizon(&self, r: Resource) -> Result<u128, InterfaceError> {
        let (p, theta) = (u128::from(r.period), u128::from(r.budget));
        let d = p - theta;
        if let Some((h, e)) = self.small {
            // 2d·ΘH / (ΘH − EΠ). 2d·ΘH < 2^33·2^96 may not fit: then 2d·(⌊ΘH/(ΘH − EΠ)⌋ + 1),
            // a little larger; saturated, the periodic horizon (< 2^97) is the smaller.
            let (supply_rate, slack) = (theta * h, theta * h - e * p);
            return Ok(match (2 * d).checked_mul(supply_rate) {
                Some(n) => n.div_ceil(slack),
                None => (2 * d).saturating_mul(supply_rate / slack + 1),
            });
        }
        let kappa = r.budget as f64 / r.period as f64;
        let gap = kappa - self.w.utilization_f64() - U_ERROR;
        let t = 2.0 * d as f64 * kappa / gap * (1.0 + U_ERROR) + 1.0;
        if gap <= U_ERROR || t >= LARGEST_FLOAT_HORIZON {
            return Err(InterfaceError::EdfHorizonTooLarge {
                period: r.period,
                budget: r.budget,
            });
        }
        Ok(t.ceil() as u128)
    }

    /// An upper bound on k/(1 − U_W) (U_W < 1): exact ⌈k·H/(H − U_W·H)⌉ when H < 2^64, else
    /// in floating point with [`U_ERROR`] as a margin; None when U_W is too close to 1 for it.
    pub(super) fn over_one_minus_u(&self, k: u128) -> Option<u128> {
        match self.small {
            Some((h, e)) => Some((k * h).div_ceil(h - e)),
            None => {
                let gap = 1.0 - self.w.utilization_f64() - U_ERROR;
                let v = k as f64 / gap * (1.0 + U_ERROR) + 1.0;
                (gap > U_ERROR && v < LARGEST_FLOAT_HORIZON).then(|| v.ceil() as u128)
            }
        }
    }

    /// EDF: the first deadline within `horizon_of`'s horizon where dbf > sbf_r, or None.
    /// (`horizon_of` is `r` for the test itself.)
    pub(super) fn edf_first_violation(
        &mut self,
        r: Resource,
        horizon_of: Resource,
    ) -> Result<Option<(u128, u128)>, InterfaceError> {
        let bound = match self.horizon(horizon_of)? {
            Horizon::Dedicated => return Ok(None),
            Horizon::Fails => return Ok(Some((u128::MAX, 0))),
            Horizon::Upto(b) => b,
        };
        let supply = self.supply;
        let mut first = None;
        self.scan_deadlines(bound, |t, dbf| {
            let ok = dbf <= sbf(r, supply, t);
            if !ok {
                first = Some((t, dbf));
            }
            ok
        })?;
        Ok(first)
    }

    /// Visit every distinct deadline t ≤ `bound` in increasing order with dbf(t), until `visit`
    /// returns false. One evaluation per deadline.
    pub(super) fn scan_deadlines(
        &mut self,
        bound: u128,
        visit: impl FnMut(u128, u128) -> bool,
    ) -> Result<(), InterfaceError> {
        let w = self.w;
        // The heap's memory is kept across scans (a scan per test, millions per search).
        let mut next = std::mem::take(&mut self.heap);
        next.clear();
        next.extend(
            w.tasks
                .iter()
                .enumerate()
                .map(|(k, task)| Reverse((u128::from(task.period), k))),
        );
        let result = self.scan_with(&mut next, bound, visit);
        self.heap = next;
        result
    }

    pub(super) fn scan_with(
        &mut self,
        next: &mut BinaryHeap<Reverse<(u128, usize)>>,
        bound: u128,
        mut visit: impl FnMut(u128, u128) -> bool,
    ) -> Result<(), InterfaceError> {
        let w = self.w;
        let mut dbf: u128 = 0;
        while let Some(&Reverse((t, _))) = next.peek() {
            if t > bound {
                break;
            }
            while let Some(&Reverse((t2, k))) = next.peek() {
                if t2 != t {
                    break;
                }
                next.pop();
                let task = w.tasks[k];
                // dbf ≤ 256·t and t ≤ bound < 2^97: neither overflows.
                dbf += u128::from(task.wcet);
                next.push(Reverse((t + u128::from(task.period), k)));
            }
            self.charge(1)?;
            if !visit(t, dbf) {
                break;
            }
        }
        Ok(())
    }
}

/// Per RM rank, the scheduling points with rbf, after counting them against the cap.
fn rm_points(w: &Workload) -> Result<Vec<Vec<(u64, u128)>>, InterfaceError> {
    let order = &w.rm_order;
    let mut count: u128 = 0;
    for (i, &ti) in order.iter().enumerate() {
        let pi = w.tasks[ti].period;
        for &k in &order[..=i] {
            count += u128::from(pi / w.tasks[k].period);
        }
    }
    if count > u128::from(MAX_TEST_POINTS) {
        return Err(InterfaceError::TooManyTestPoints { points: count });
    }
    Ok((0..order.len())
        .map(|i| {
            let pi = w.tasks[order[i]].period;
            let mut ts: Vec<u64> = order[..=i]
                .iter()
                .flat_map(|&k| {
                    let pk = w.tasks[k].period;
                    (1..=pi / pk).map(move |j| j * pk)
                })
                .collect();
            ts.sort_unstable();
            ts.dedup();
            ts.into_iter().map(|t| (t, w.rbf(i, t))).collect()
        })
        .collect())
}
