//! Stage 2: the frame, given or the lcm of the periods, under the cap; explicit jobs inside it;
//! the table it gives fits the BPF scheduler.

use super::{Checked, Errors, Fields};
use crate::plan::error::{PlanErrors, Rule};
use crate::plan::limits;
use crate::plan::raw::RawPlan;
use crate::plan::timing::{lcm, Timing, FRAME_CAP_SLOTS};
use crate::plan::{Class, Start};
use crate::planner::offline::Slot;

/// Stage 2 after a valid stage 1: the frame, or every error of the stage.
pub(super) fn check(raw: &RawPlan, f: &Fields) -> Result<Slot, PlanErrors> {
    let mut errs = Errors::default();
    let frame = check_frame(raw.frame_slots, &f.tasks, &mut errs);
    if frame > 0 {
        // the CPU-slot cap is the tighter one: a table over the BPF limit is over it too, and
        // gets its error alone
        let given = raw.frame_slots.is_some();
        if limits::check_cpu_slots(f.managed.len(), frame, given, &mut errs) {
            limits::check_table_size(f.managed.len(), frame, given, &mut errs);
        }
        // every table task's instances (an upper bound of the jobs the CPUs get)
        let jobs: u128 = f
            .tasks
            .iter()
            .filter(|t| t.class == Class::Tt && t.start == Start::Table)
            .filter_map(|t| t.timing.as_ref())
            .map(|t| t.job_count(frame) as u128)
            .sum();
        limits::check_job_count(jobs, f.managed.len(), &mut errs);
    }
    errs.finish()?;
    Ok(frame)
}

/// The frame: `frame_slots`, or the lcm of the periods when absent; 0 (with the error pushed)
/// when there is none; explicit jobs due after it are errors too.
fn check_frame(given: Option<Slot>, tasks: &[Checked], errs: &mut Errors) -> Slot {
    let periods: Vec<(Slot, &str)> = tasks
        .iter()
        .filter_map(|t| Some((t.timing.as_ref()?.period()?, t.name.as_str())))
        .collect();
    let frame = match given {
        Some(0) => {
            errs.value("frame_slots", &0, Rule::Zero);
            return 0;
        }
        Some(f) if f > FRAME_CAP_SLOTS => {
            errs.value(
                "frame_slots",
                &f,
                Rule::FrameTooLarge {
                    what: "the frame",
                    frame: f as u128,
                    cap: FRAME_CAP_SLOTS,
                },
            );
            return 0;
        }
        Some(f) => {
            for &(period, name) in &periods {
                if f % period != 0 {
                    errs.value(
                        "frame_slots",
                        &f,
                        Rule::FrameNotMultiple {
                            period,
                            task: name.to_string(),
                        },
                    );
                }
            }
            f
        }
        None if periods.is_empty() => {
            errs.push("frame_slots", None, Rule::FrameUnknown);
            return 0;
        }
        None => match lcm(periods.iter().map(|p| p.0), FRAME_CAP_SLOTS) {
            Ok(f) => f,
            Err(reached) => {
                errs.push(
                    "frame_slots",
                    None,
                    Rule::FrameTooLarge {
                        what: "the lcm of the periods",
                        frame: reached,
                        cap: FRAME_CAP_SLOTS,
                    },
                );
                return 0;
            }
        },
    };
    for (i, t) in tasks.iter().enumerate() {
        if let Some(Timing::Jobs(jobs)) = &t.timing {
            for (j, &(_, d, _)) in jobs.iter().enumerate() {
                if d > frame {
                    errs.value(
                        format!("tasks[{i}].jobs[{j}].deadline"),
                        &d,
                        Rule::OutsideFrame { frame },
                    );
                }
            }
        }
    }
    frame
}
