//! `simulate --replay LOG [--replay-trace TRACE]`: the planner log of a kernel run replayed
//! through the run driver (`tt_core::drive`), with the closed loop's firm answers against the
//! worst case and, with the run's trace, the conformance of every slot's owner.

use super::EXIT_INVALID;
use anyhow::{bail, Context};
use scx_tt::plan;
use scx_tt::planner::kernel_path::{FirmOutcome, LogEvent, LogHeader};
use scx_tt::planner::replay::{agreement, planner_for, read_log, Replayed};

/// The largest planner log or trace `--replay` reads, bytes.
const MAX_REPLAY_BYTES: u64 = 1 << 30;

pub(super) fn read_text(path: &std::path::Path, what: &str) -> anyhow::Result<String> {
    let bytes = plan::read_capped(path, MAX_REPLAY_BYTES)
        .with_context(|| format!("reading the {what} {}", path.display()))?;
    if bytes.len() as u64 > MAX_REPLAY_BYTES {
        bail!(
            "{what} {}: larger than {MAX_REPLAY_BYTES} bytes",
            path.display()
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{what} {}: not UTF-8: invalid byte at offset {}",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// `simulate --replay LOG [--replay-trace TRACE]`.
pub(super) fn replay(
    plan: &plan::Plan,
    log: &std::path::Path,
    trace: Option<&std::path::Path>,
) -> anyhow::Result<i32> {
    let text = read_text(log, "planner log")?;
    let (header, events) = match read_log(&text) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{}: invalid planner log: {e}", log.display());
            return Ok(EXIT_INVALID);
        }
    };
    let p = match planner_for(
        &header,
        &plan.planner_inputs(),
        plan.tasks.len(),
        table(plan)?,
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}: the log does not fit this plan: {e}", log.display());
            return Ok(EXIT_INVALID);
        }
    };
    let r = scx_tt::planner::replay::replay(p, &events).context("replaying the planner log")?;
    if header.closed_loop && !r.firm.is_empty() {
        compare_with_worst_case(plan, &header, &events, &r)?;
    }
    let resolved = r.entries.iter().map(Vec::len).max().unwrap_or(0);
    println!(
        "replay: {} events, policy {}, lead {}, loop {}, {resolved} slots resolved, {} late slots{}",
        events.len(),
        header.policy,
        header.lead,
        if header.closed_loop { "closed" } else { "open" },
        r.late_slots,
        if header.truncated { " (log truncated)" } else { "" }
    );
    match trace {
        Some(trace) => conformance(plan, &events, &r, trace),
        None => Ok(0),
    }
}

/// The plan's table as BPF holds it (every plan CPU online).
fn table(plan: &plan::Plan) -> anyhow::Result<Vec<u32>> {
    let mut cpus = plan.managed.clone();
    cpus.extend(&plan.housekeeping);
    Ok(
        scx_tt::sched::config::SchedConfig::from_plan(plan, 0, &cpus)
            .context("the plan's table")?
            .entries(),
    )
}

/// The closed loop's firm admissions against the same requests at the same slots on a planner
/// that never observes (the worst case): which were accepted only with reclaim.
fn compare_with_worst_case(
    plan: &plan::Plan,
    header: &LogHeader,
    events: &[LogEvent],
    r: &Replayed,
) -> anyhow::Result<()> {
    // the same requests at the same slots on a planner that never observes
    let mut open = header.clone();
    open.closed_loop = false;
    let w = planner_for(
        &open,
        &plan.planner_inputs(),
        plan.tasks.len(),
        table(plan)?,
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let worst = scx_tt::planner::replay::replay_worst_case(w, events)
        .context("replaying the planner log under the worst case")?;
    let answer = |o: &FirmOutcome| match o {
        FirmOutcome::Accepted { deadline_slot, .. } => {
            format!("accepted (due {deadline_slot})")
        }
        FirmOutcome::Rejected(c) => {
            format!("rejected ({} of {} slots free)", c.available, c.needed)
        }
    };
    let mut only_closed = 0;
    for ((slot, closed), (_, open)) in r.firm.iter().zip(&worst.firm) {
        let gain = matches!(closed, FirmOutcome::Accepted { .. })
            && matches!(open, FirmOutcome::Rejected(_));
        only_closed += u64::from(gain);
        println!(
            "admit_firm at slot {slot}: closed loop {}, worst case {}{}",
            answer(closed),
            answer(open),
            if gain {
                ": accepted only with reclaim"
            } else {
                ""
            }
        );
    }
    let acc = |v: &[(u64, FirmOutcome)]| {
        v.iter()
            .filter(|(_, o)| matches!(o, FirmOutcome::Accepted { .. }))
            .count()
    };
    println!(
        "reclaim: {} of {} firm admissions accepted with the loop closed, {} under the worst \
         case; {only_closed} accepted only with reclaim",
        acc(&r.firm),
        r.firm.len(),
        acc(&worst.firm)
    );
    Ok(())
}

/// `--replay-trace`: the owner the replay names for every slot of the kernel run's trace
/// against the one the kernel ran, and why each differs.
fn conformance(
    plan: &plan::Plan,
    events: &[LogEvent],
    r: &Replayed,
    trace: &std::path::Path,
) -> anyhow::Result<i32> {
    let text = read_text(trace, "trace")?;
    let (_, records) = scx_tt::trace::read_trace(&text)
        .map_err(|e| anyhow::anyhow!("trace {}: {e}", trace.display()))?;
    // tasks admitted at run time (`ctl admit`) by the name the log gives them
    let admitted: std::collections::HashMap<String, u32> = events
        .iter()
        .filter_map(|e| match e {
            LogEvent::AdmitTask { task, name } => Some((name.clone(), task.task as u32)),
            LogEvent::AdmitAperiodic { job, name, .. } => Some((name.clone(), job.task as u32)),
            _ => None,
        })
        .collect();
    let index = |name: &str| {
        plan.tasks
            .iter()
            .position(|t| t.name == name)
            .map(|i| i as u32)
            .or_else(|| admitted.get(name).copied())
    };
    let kernel = records.iter().filter_map(|rec| {
        let cpu = plan.managed.iter().position(|&c| c == rec.cpu)?;
        let owner = match rec.kind {
            scx_tt::trace::SlotKind::Tt | scx_tt::trace::SlotKind::Aperiodic => {
                rec.task.as_deref().and_then(index)
            }
            _ => None,
        };
        Some((cpu, rec.slot, owner))
    });
    let (same, total, diffs) = agreement(r, kernel);
    let pct = if total == 0 {
        0.0
    } else {
        100.0 * same as f64 / total as f64
    };
    println!(
        "conformance: {same} of {total} slots identical ({pct:.2} %), {} different",
        diffs.len()
    );
    let name = |t: Option<u32>| {
        t.map_or("-".to_string(), |t| match plan.tasks.get(t as usize) {
            Some(task) => task.name.clone(),
            None => admitted
                .iter()
                .find(|(_, &i)| i == t)
                .map_or(format!("task {t}"), |(n, _)| n.clone()),
        })
    };
    for d in &diffs {
        let why = if r.late.contains(&d.slot) {
            "the planner decided this slot after it had started (late slot: its entry was not written)"
        } else {
            "unexplained"
        };
        println!(
            "  cpu {} slot {}: replay {} kernel {}: {why}",
            plan.managed[d.cpu],
            d.slot,
            name(d.replay),
            name(d.kernel)
        );
    }
    Ok(0)
}
