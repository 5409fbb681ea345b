//! The checks of a run's [`Config`] before it runs: ranges, overflows, the job cap, and every
//! owned slot inside a window of its owner.

use super::{overflow, Component, Config, Design, Exec, ServerError};
use super::{MAX_JOBS, MAX_TABLE_SLOTS, MAX_TICKS_PER_SLOT};

/// `Ok` when `cfg` can run; else the first error found.
pub(super) fn validate(cfg: &Config) -> Result<(), ServerError> {
    let tps = cfg.ticks_per_slot;
    if !(1..=MAX_TICKS_PER_SLOT).contains(&tps) {
        return Err(ServerError::Ticks(tps));
    }
    let frame = cfg.table.len() as u64;
    if frame == 0 {
        return Err(ServerError::EmptyTable);
    }
    if frame > MAX_TABLE_SLOTS {
        return Err(ServerError::TableTooLong(frame));
    }
    let end_ticks = cfg
        .slots
        .checked_mul(tps)
        .ok_or_else(|| overflow("slots · ticks_per_slot", format!("{} · {tps}", cfg.slots)))?;
    // window deadlines reach at most one frame past the run
    cfg.slots
        .checked_add(frame)
        .and_then(|x| x.checked_mul(tps))
        .ok_or_else(|| overflow("(slots + table length) · ticks_per_slot", end_ticks))?;
    let mut jobs: u128 = 0;
    for (c, comp) in cfg.components.iter().enumerate() {
        jobs += check_component(cfg, c, comp, end_ticks)?;
    }
    if jobs > u128::from(MAX_JOBS) {
        return Err(ServerError::TooManyJobs { jobs });
    }
    check_owners(cfg)
}

/// Component `c`: its execution factor, its period (wcps-paper), its tasks and its windows.
/// The number of jobs its tasks release in the run.
fn check_component(
    cfg: &Config,
    c: usize,
    comp: &Component,
    end_ticks: u64,
) -> Result<u128, ServerError> {
    let f = match comp.exec {
        Exec::Factor(f) => f,
        Exec::Uniform { min } => min,
    };
    if !(f > 0.0 && f <= 1.0) {
        return Err(ServerError::Exec {
            component: c,
            value: f,
        });
    }
    if cfg.design == Design::WcpsPaper && comp.period == 0 {
        return Err(ServerError::NoPeriod { component: c });
    }
    let tps = cfg.ticks_per_slot;
    let mut jobs: u128 = 0;
    for (i, t) in comp.tasks.iter().enumerate() {
        let bad = |why: String| ServerError::Task {
            component: c,
            task: i,
            why,
        };
        if t.period == 0 {
            return Err(bad("period = 0: must be at least 1 slot".into()));
        }
        if t.wcet == 0 || t.wcet > t.period {
            return Err(bad(format!(
                "wcet = {}: needs 1 ≤ wcet ≤ period ({})",
                t.wcet, t.period
            )));
        }
        t.period
            .checked_mul(tps)
            .and_then(|p| p.checked_add(end_ticks))
            .ok_or_else(|| {
                overflow(
                    format!("components[{c}].tasks[{i}].period · ticks_per_slot"),
                    format!("{} · {tps}", t.period),
                )
            })?;
        jobs += u128::from(cfg.slots.div_ceil(t.period));
    }
    check_windows(c, comp, cfg.table.len() as u64)?;
    Ok(jobs)
}

/// Component `c`'s windows: sorted, disjoint, inside a table of `frame` slots, each budget
/// within its window.
fn check_windows(c: usize, comp: &Component, frame: u64) -> Result<(), ServerError> {
    let mut prev_end = 0;
    for (w, win) in comp.windows.iter().enumerate() {
        let bad = |why| ServerError::Window {
            component: c,
            window: w,
            window_text: format!("[{}, {}) budget {}", win.release, win.deadline, win.budget),
            why,
        };
        if win.release >= win.deadline || win.deadline > frame {
            return Err(bad("needs release < deadline ≤ the table length"));
        }
        if win.release < prev_end {
            return Err(bad("windows must be sorted and disjoint"));
        }
        if win.budget > win.deadline - win.release {
            return Err(bad("budget exceeds the window"));
        }
        prev_end = win.deadline;
    }
    Ok(())
}

/// Every owned slot of the table names a component and lies in a window of it.
fn check_owners(cfg: &Config) -> Result<(), ServerError> {
    let mut at = vec![0usize; cfg.components.len()];
    for (s, owner) in cfg.table.iter().enumerate() {
        let Some(o) = *owner else { continue };
        let comp = cfg.components.get(o).ok_or(ServerError::NoSuchOwner {
            slot: s as u64,
            owner: o,
            count: cfg.components.len(),
        })?;
        let s = s as u64;
        while at[o] < comp.windows.len() && comp.windows[at[o]].deadline <= s {
            at[o] += 1;
        }
        match comp.windows.get(at[o]) {
            Some(w) if w.release <= s => {}
            _ => return Err(ServerError::OutsideWindow { slot: s, owner: o }),
        }
    }
    Ok(())
}
