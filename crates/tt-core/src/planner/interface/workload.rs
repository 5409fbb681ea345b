//! The workload: parsing `"p,e;..."`, validating it into a [`Workload`] (exact U_W and
//! hyperperiod at any size) and its request and demand bounds.

use super::big::{gcd, Big};
use super::{InterfaceError, Ratio, Task, MAX_PERIOD_SLOTS, MAX_TASKS};
use std::cmp::Ordering;

/// Parse `"p,e;p,e;..."` (slots; spaces around the numbers allowed, nothing else).
pub fn parse_tasks(text: &str) -> Result<Vec<Task>, InterfaceError> {
    if text.trim().is_empty() {
        return Err(InterfaceError::Empty);
    }
    let number = |task: usize, field: &'static str, s: &str| {
        let s = s.trim();
        let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        s.parse::<u64>()
            .ok()
            .filter(|_| digits)
            .ok_or_else(|| InterfaceError::NotANumber {
                task,
                field,
                text: s.to_string(),
            })
    };
    text.split(';')
        .enumerate()
        .map(|(task, entry)| {
            let mut fields = entry.split(',');
            match (fields.next(), fields.next(), fields.next()) {
                (Some(p), Some(e), None) => Ok(Task {
                    period: number(task, "period", p)?,
                    wcet: number(task, "wcet", e)?,
                }),
                _ => Err(InterfaceError::Syntax {
                    task,
                    text: entry.to_string(),
                }),
            }
        })
        .collect()
}

/// A validated workload: 1..=[`MAX_TASKS`] tasks, 1 ≤ wcet ≤ period ≤ [`MAX_PERIOD_SLOTS`],
/// U_W ≤ 1 (exactly, whatever the size of the hyperperiod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub(super) tasks: Vec<Task>,
    pub(super) rm_order: Vec<usize>,
    /// H and U_W·H = Σ e_i·H/p_i ≤ H, exact at any size.
    pub(super) hyperperiod: Big,
    pub(super) demand: Big,
    /// (H, U_W·H) when H < 2^64: the exact rationals and the EDF test use them.
    pub(super) small: Option<(u64, u64)>,
}

impl Workload {
    pub fn new(tasks: &[Task]) -> Result<Workload, InterfaceError> {
        if tasks.is_empty() {
            return Err(InterfaceError::Empty);
        }
        if tasks.len() > MAX_TASKS {
            return Err(InterfaceError::TooManyTasks { count: tasks.len() });
        }
        for (task, t) in tasks.iter().enumerate() {
            if t.period == 0 {
                return Err(InterfaceError::ZeroPeriod { task });
            }
            if t.period > MAX_PERIOD_SLOTS {
                return Err(InterfaceError::PeriodTooLarge {
                    task,
                    period: t.period,
                });
            }
            if t.wcet == 0 {
                return Err(InterfaceError::ZeroWcet { task });
            }
            if t.wcet > t.period {
                return Err(InterfaceError::WcetAbovePeriod {
                    task,
                    wcet: t.wcet,
                    period: t.period,
                });
            }
        }
        // At most 256 periods below 2^32: H has at most 8192 bits.
        let mut h = Big::from(1);
        for t in tasks {
            let g = gcd(u128::from(t.period), u128::from(h.rem_small(t.period))) as u64;
            h = h.div_small(g).mul_small(t.period);
        }
        let e = tasks.iter().fold(Big::from(0), |e, t| {
            e.add(&h.div_small(t.period).mul_small(t.wcet))
        });
        let small = h.to_u64().zip(e.to_u64());
        if e > h {
            let utilization = match small {
                Some((h, e)) => Ratio::new(e, h).to_string(),
                None => format!("{:.12}", utilization_f64(tasks)),
            };
            return Err(InterfaceError::Overloaded { utilization });
        }
        let mut rm_order: Vec<usize> = (0..tasks.len()).collect();
        rm_order.sort_by_key(|&i| (tasks[i].period, i));
        Ok(Workload {
            tasks: tasks.to_vec(),
            rm_order,
            hyperperiod: h,
            demand: e,
            small,
        })
    }

    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Task indices in RM priority order (rank 0 first).
    pub fn rm_order(&self) -> &[usize] {
        &self.rm_order
    }

    /// H, when below 2^64.
    pub fn hyperperiod(&self) -> Option<u64> {
        self.small.map(|(h, _)| h)
    }

    /// U_W exactly, when H < 2^64.
    pub fn utilization(&self) -> Option<Ratio> {
        self.small.map(|(h, e)| Ratio::new(e, h))
    }

    /// U_W as a float (Σ e_i/p_i).
    pub fn utilization_f64(&self) -> f64 {
        utilization_f64(&self.tasks)
    }

    /// Θ/Π against U_W, exactly (Θ·H against U_W·H·Π).
    pub fn compare_rate(&self, budget: u64, period: u64) -> Ordering {
        self.hyperperiod
            .mul_small(budget)
            .cmp(&self.demand.mul_small(period))
    }

    /// Every two periods divide one another.
    pub fn is_harmonic(&self) -> bool {
        self.non_harmonic_pair().is_none()
    }

    pub(super) fn non_harmonic_pair(&self) -> Option<(usize, usize)> {
        // In RM order periods grow; harmonic iff each divides the next.
        self.rm_order.windows(2).find_map(|w| {
            let (a, b) = (self.tasks[w[0]].period, self.tasks[w[1]].period);
            (!b.is_multiple_of(a)).then_some((w[0], w[1]))
        })
    }

    /// rbf of RM rank `rank` at `t`: Σ over ranks k ≤ rank of ⌈t/p_k⌉·e_k (decision 1).
    pub fn rbf(&self, rank: usize, t: u64) -> u128 {
        self.rm_order[..=rank.min(self.tasks.len() - 1)]
            .iter()
            .map(|&k| {
                let task = self.tasks[k];
                u128::from(t.div_ceil(task.period)) * u128::from(task.wcet)
            })
            .sum()
    }

    /// dbf at `t`: Σ ⌊t/p_i⌋·e_i.
    pub fn dbf(&self, t: u64) -> u128 {
        self.tasks
            .iter()
            .map(|task| u128::from(t / task.period) * u128::from(task.wcet))
            .sum()
    }

    pub(super) fn max_period(&self) -> u64 {
        self.tasks[self.rm_order[self.tasks.len() - 1]].period
    }

    pub(super) fn min_period(&self) -> u64 {
        self.tasks[self.rm_order[0]].period
    }
}

pub(super) fn utilization_f64(tasks: &[Task]) -> f64 {
    tasks.iter().map(|t| t.wcet as f64 / t.period as f64).sum()
}
