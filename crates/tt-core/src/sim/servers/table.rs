//! The table of servers Γ_c = (Π, Θ) on one CPU: preemptive EDF of their windows, or fixed
//! priorities by Π when they overload it.

use super::{ServerError, Window, MAX_TABLE_SLOTS};
use crate::planner::interface::Resource;
use crate::planner::offline::{self, Job};
use serde::Serialize;

/// How [`server_table`] placed the servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TableKind {
    /// Preemptive EDF of the server jobs (`planner::offline::edf`): every window gets its
    /// budget.
    Edf,
    /// Σ Θ/Π > 1, EDF has no table: fixed priorities by Π (the paper's RM at the VMM), a
    /// server job's budget left at its deadline dropped; some windows get less.
    RmOverloaded,
}

/// A table of servers for one CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerTable {
    /// Owner server of each slot.
    pub table: Vec<Option<usize>>,
    /// The windows of each server within the table.
    pub windows: Vec<Vec<Window>>,
    pub kind: TableKind,
    /// Whether the table is the hyperperiod (lcm of the periods) and repeats; else it is at
    /// least `slots` long and is used once.
    pub repeats: bool,
    /// Per server: windows of the table that got less than their budget (0 under EDF).
    pub short_windows: Vec<u64>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The table for servers Γ_c = `servers[c]` on one CPU and a run of `slots` slots: the
/// hyperperiod when it is at most `max(slots, 1)` and [`MAX_TABLE_SLOTS`] (then it repeats),
/// else one table of ⌈slots/Π⌉·Π slots (the largest over the servers), used once. Placed by
/// the crate's offline EDF (`planner::offline::edf`, ties by server index); when the servers
/// overload the CPU (Σ Θ/Π > 1: the paper's "overloaded" domains) by fixed priorities, the
/// shortest period first (the paper's VMM), dropping budget not served by a window's end.
pub fn server_table(servers: &[Resource], slots: u64) -> Result<ServerTable, ServerError> {
    for (i, r) in servers.iter().enumerate() {
        if r.period == 0 || r.budget > r.period {
            return Err(ServerError::Server {
                server: i,
                period: r.period,
                budget: r.budget,
            });
        }
    }
    let slots = slots.max(1);
    let (frame, repeats) = table_length(servers, slots)?;
    let windows = server_windows(servers, frame, slots, repeats);
    let jobs = window_jobs(&windows);
    match offline::edf(&jobs, frame) {
        Ok(ranges) => {
            let mut table = vec![None; frame as usize];
            for r in ranges {
                for s in r.start..r.end {
                    table[s as usize] = Some(jobs[r.job].task);
                }
            }
            Ok(ServerTable {
                table,
                short_windows: vec![0; servers.len()],
                windows,
                kind: TableKind::Edf,
                repeats,
            })
        }
        Err(_) => Ok(rm_overloaded(servers, windows, frame, repeats)),
    }
}

/// The table's length and whether it repeats: the hyperperiod when it is at most `slots` and
/// [`MAX_TABLE_SLOTS`], else the longest ⌈slots/Π⌉·Π, used once.
fn table_length(servers: &[Resource], slots: u64) -> Result<(u64, bool), ServerError> {
    let mut hyper: Option<u64> = Some(1);
    for r in servers {
        hyper = hyper
            .and_then(|h| (h / gcd(h, r.period)).checked_mul(r.period))
            .filter(|&h| h <= slots.min(MAX_TABLE_SLOTS));
    }
    match hyper {
        Some(h) => Ok((h, true)),
        None => {
            let frame = servers
                .iter()
                .map(|r| u128::from(slots.div_ceil(r.period)) * u128::from(r.period))
                .max()
                .unwrap_or(1);
            if frame > u128::from(MAX_TABLE_SLOTS) {
                return Err(ServerError::TableTooLong(
                    u64::try_from(frame).unwrap_or(u64::MAX),
                ));
            }
            Ok((frame as u64, false))
        }
    }
}

/// Each server's windows [kΠ, (k+1)Π) with budget Θ.
fn server_windows(servers: &[Resource], frame: u64, slots: u64, repeats: bool) -> Vec<Vec<Window>> {
    servers
        .iter()
        .map(|&r| {
            // windows that start inside the run (the ones after cannot matter)
            let n = if repeats {
                frame / r.period
            } else {
                slots.div_ceil(r.period)
            };
            (0..n)
                .map(|k| Window {
                    release: k * r.period,
                    deadline: (k + 1) * r.period,
                    budget: r.budget,
                })
                .collect()
        })
        .collect()
}

/// The server jobs EDF places: one per window with a budget, `task` the server's index.
fn window_jobs(windows: &[Vec<Window>]) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (c, ws) in windows.iter().enumerate() {
        for (k, w) in ws.iter().enumerate() {
            if w.budget > 0 {
                jobs.push(Job {
                    task: c,
                    instance: k as u32,
                    release: w.release,
                    deadline: w.deadline,
                    wcet: w.budget,
                });
            }
        }
    }
    jobs
}

/// The table when EDF has none (Σ Θ/Π > 1): fixed priorities, the shortest period first; a
/// window's budget not served by its end is dropped, and the windows that got less than their
/// budget are counted.
fn rm_overloaded(
    servers: &[Resource],
    windows: Vec<Vec<Window>>,
    frame: u64,
    repeats: bool,
) -> ServerTable {
    let mut table = vec![None; frame as usize];
    let mut order: Vec<usize> = (0..servers.len()).collect();
    order.sort_by_key(|&c| (servers[c].period, c));
    let mut left = vec![0u64; servers.len()];
    for s in 0..frame {
        for (c, r) in servers.iter().enumerate() {
            if s % r.period == 0 {
                let k = (s / r.period) as usize;
                left[c] = windows[c].get(k).map_or(0, |w| w.budget);
            }
        }
        if let Some(&c) = order.iter().find(|&&c| left[c] > 0) {
            table[s as usize] = Some(c);
            left[c] -= 1;
        }
    }
    let short_windows = windows
        .iter()
        .enumerate()
        .map(|(c, ws)| {
            ws.iter()
                .filter(|w| {
                    let got = (w.release..w.deadline)
                        .filter(|&s| table[s as usize] == Some(c))
                        .count() as u64;
                    got < w.budget
                })
                .count() as u64
        })
        .collect();
    ServerTable {
        table,
        windows,
        kind: TableKind::RmOverloaded,
        repeats,
        short_windows,
    }
}
