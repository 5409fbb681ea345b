//! The searches of one [`Tester`]: MinExec, Theorem 1's MaxResPeriod, Algorithm 1 (general
//! supply), the divisor search (aligned supply) and the critical points of the result.

use super::tester::{Horizon, Tester};
use super::{
    sbf, CriticalPoint, InterfaceError, Resource, Scheduler, MAX_CRITICAL_POINTS, MAX_PERIOD_SLOTS,
};
use std::cmp::Ordering;

impl Tester<'_> {
    pub(super) fn min_exec(&mut self, period: u64) -> Result<u64, InterfaceError> {
        // Θ ≥ ⌈U_W·Π⌉ is necessary (property 5), 1 when H is too large to say; Θ = Π passes
        // (require_dedicated).
        let least = self
            .small
            .map_or(1, |(h, e)| (e * u128::from(period)).div_ceil(h));
        let mut lo = (least as u64).max(1);
        let mut hi = period;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let r = Resource {
                period,
                budget: mid,
            };
            if self.schedulable(r)? {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(hi)
    }

    /// Theorem 1 with the critical points of decision 7; None when the bandwidth is 1.
    pub(super) fn max_res_period(&mut self, r: Resource) -> Result<Option<u64>, InterfaceError> {
        let (a, b) = (u128::from(r.budget), u128::from(r.period));
        if a == b || a == 0 {
            return Ok(None);
        }
        // ⌊(κt − demand)/(κ(1 − κ))⌋ = ⌊b(at − demand·b) / (a(b − a))⌋, or None if negative.
        let term = |t: u128, demand: u128| -> Option<u64> {
            let x = (a * t).checked_sub(demand.checked_mul(b)?)?;
            let y = a * (b - a);
            let v = match b.checked_mul(x) {
                Some(n) => n / y,
                // Above 2^128: an upper bound is safe here (it only widens the search).
                None => (x / y + 1).saturating_mul(b),
            };
            Some(u64::try_from(v).unwrap_or(u64::MAX))
        };
        let bound = match self.scheduler {
            Scheduler::Rm => {
                let mut bound = u64::MAX;
                for rank in 0..self.points.len() {
                    let best = self.points[rank]
                        .iter()
                        .filter_map(|&(t, rbf)| term(u128::from(t), rbf))
                        .max()
                        .unwrap_or(0);
                    self.charge(self.points[rank].len() as u64)?;
                    bound = bound.min(best);
                }
                bound
            }
            Scheduler::Edf => {
                // t = H (dbf(H) = U_W·H) when H < 2^64; any set of t gives a valid bound.
                let mut bound = self
                    .small
                    .map_or(u64::MAX, |(h, e)| term(h, e).unwrap_or(0));
                let pn = u128::from(self.w.max_period());
                self.scan_deadlines(pn, |t, dbf| {
                    bound = bound.min(term(t, dbf).unwrap_or(0));
                    true
                })?;
                bound
            }
        };
        Ok(Some(bound))
    }

    /// Smaller bandwidth, or equal at a smaller period (decision 4).
    pub(super) fn better(a: Resource, b: Resource) -> bool {
        let (ka, kb) = (a.bandwidth(), b.bandwidth());
        ka < kb || (ka == kb && a.period < b.period)
    }

    /// Algorithm 1 with decisions 4–6: (optimum, final bound, periods examined).
    pub(super) fn search_general(&mut self) -> Result<(Resource, u64, u64), InterfaceError> {
        let pn = self.w.max_period();
        self.at = (pn, None);
        let mut best = Resource {
            period: pn,
            budget: self.min_exec(pn)?,
        };
        if let Some(seed) = self.edf_seed(best)? {
            if Self::better(seed, best) {
                best = seed;
            }
        }
        let mut bound = self.max_res_period(best)?.unwrap_or(1);
        if self.scheduler == Scheduler::Rm {
            bound = bound.min(pn);
        }
        let mut examined = 0;
        let mut period = 1;
        while period <= bound {
            self.at = (period, Some(bound));
            let cand = Resource {
                period,
                budget: self.min_exec(period)?,
            };
            examined += 1;
            if Self::better(cand, best) {
                best = cand;
                if let Some(b) = self.max_res_period(best)? {
                    bound = bound.min(b);
                }
            }
            if period == u64::MAX {
                break;
            }
            period += 1;
        }
        Ok((best, bound, examined))
    }

    /// EDF, decision 5: when MinExec(p_n) = p_n but an interface with a blackout exists,
    /// (Π*, MinExec(Π*)) with Π* = ⌈4/(1 − U_W)⌉; None otherwise.
    fn edf_seed(&mut self, best: Resource) -> Result<Option<Resource>, InterfaceError> {
        if !(self.scheduler == Scheduler::Edf
            && best.budget == best.period
            && self.rate(1, 1) == Ordering::Greater
            && self.edf_admits_blackout()?)
        {
            return Ok(None);
        }
        let star = self.over_one_minus_u(4);
        let period = star
            .and_then(|p| u64::try_from(p).ok())
            .filter(|&p| p <= MAX_PERIOD_SLOTS)
            .ok_or_else(|| InterfaceError::PeriodSearchTooLarge {
                period: star.map_or_else(|| "above 2^100".to_string(), |p| p.to_string()),
            })?;
        self.at = (period, None);
        let seed = Resource {
            period,
            budget: self.min_exec(period)?,
        };
        if seed.budget == seed.period {
            return Err(InterfaceError::Internal(
                "EDF: (Π*, Π* − 1) should pass (decision 5)",
            ));
        }
        Ok(Some(seed))
    }

    /// EDF, decision 5: dbf(t) ≤ t − 2 at every deadline t ≤ 2/(1 − U_W) (U_W < 1).
    pub(super) fn edf_admits_blackout(&mut self) -> Result<bool, InterfaceError> {
        let bound =
            self.over_one_minus_u(2)
                .ok_or_else(|| InterfaceError::PeriodSearchTooLarge {
                    period: "above 2^100".to_string(),
                })?;
        let mut ok = true;
        self.scan_deadlines(bound, |t, dbf| {
            ok = t >= 2 && dbf <= t - 2;
            ok
        })?;
        Ok(ok)
    }

    /// The divisors of p_1 (harmonic W), each with its MinExec (decision 3).
    pub(super) fn search_aligned(&mut self) -> Result<(Resource, u64, u64), InterfaceError> {
        let p1 = self.w.min_period();
        let mut divisors: Vec<u64> = Vec::new();
        let mut i: u64 = 1;
        while i * i <= p1 {
            if p1.is_multiple_of(i) {
                divisors.push(i);
                if i != p1 / i {
                    divisors.push(p1 / i);
                }
            }
            i += 1;
        }
        divisors.sort_unstable();
        let mut best: Option<Resource> = None;
        for &period in &divisors {
            self.at = (period, Some(p1));
            let cand = Resource {
                period,
                budget: self.min_exec(period)?,
            };
            if best.is_none_or(|b| Self::better(cand, b)) {
                best = Some(cand);
            }
        }
        let best = best.ok_or(InterfaceError::Internal("1 divides every period"))?;
        Ok((best, p1, divisors.len() as u64))
    }

    /// The critical points of `r` (see [`Interface::critical_points`]) and whether one slot less
    /// would be below the long-run rate.
    pub(super) fn critical_points(
        &mut self,
        r: Resource,
    ) -> Result<(Vec<CriticalPoint>, bool), InterfaceError> {
        let lower = Resource {
            period: r.period,
            budget: r.budget.saturating_sub(1),
        };
        let forced = self.rate(lower.budget, r.period) == Ordering::Less;
        let narrow = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
        let mut out = Vec::new();
        match self.scheduler {
            Scheduler::Rm => {
                for rank in 0..self.points.len() {
                    if self.rm_witness(rank, lower)?.is_some() {
                        continue;
                    }
                    if let Some((t, rbf, s)) = self.rm_witness(rank, r)? {
                        out.push(CriticalPoint {
                            task: Some(self.w.rm_order[rank]),
                            t,
                            demand: narrow(rbf),
                            supply: narrow(s),
                        });
                    }
                }
            }
            Scheduler::Edf => {
                // Within r's own horizon (already scanned once to accept r), or the lower
                // resource's when r is dedicated.
                let bound = match (self.horizon(r)?, self.horizon(lower)?) {
                    (Horizon::Upto(b), _) | (Horizon::Dedicated, Horizon::Upto(b)) => b,
                    _ => 0,
                };
                let supply = self.supply;
                self.scan_deadlines(bound, |t, dbf| {
                    if dbf > sbf(lower, supply, t) {
                        out.push(CriticalPoint {
                            task: None,
                            t: narrow(t),
                            demand: narrow(dbf),
                            supply: narrow(sbf(r, supply, t)),
                        });
                    }
                    out.len() < MAX_CRITICAL_POINTS
                })?;
            }
        }
        Ok((out, forced))
    }
}
