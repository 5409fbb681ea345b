//! `admit` with `"dry_run": true` (class tt, docs/control.md "Dry runs"): the verdict the same
//! `admit` would get now — accepted with the CPU of each vCPU, rejected with its reason, or
//! refused with its error — and nothing changes: no planner state, no BPF task, no journal
//! entry, no name taken, no admission counted, nothing in the run's log.
//!
//! The verdict is the real admission's own: the same checks ([`Control::admit_shared`],
//! [`Control::prepare_tt`]) and the same placement with the planner's exact test
//! ([`TtAdmission::plan`]), run inside [`KernelPlanner::dry_run`], which hands the planner's
//! state back as it was, the planner ids and index map included. Without `select` the
//! reservations have no threads: `vcpus` of them (default 1), one per managed CPU, as a VM's.
//!
//! What a dry run cannot foresee: BPF refusing the tasks (the real admit's kernel error) and
//! what changes before the real request (the clock, other requests, the threads).
//!
//! [`TtAdmission::plan`]: super::tt::TtAdmission::plan
//! [`KernelPlanner::dry_run`]: crate::planner::kernel_path::KernelPlanner::dry_run

use super::bad;
use crate::control::reply::DryRun;
use crate::control::request::{Admit, AdmitClass};
use crate::control::{Answer, Answered, Control, ControlError, Engine};

impl Control {
    /// The dry run of `r` (after the checks every `admit` shares; `cpus`: the managed CPU
    /// indices it may use). Changes nothing.
    pub(super) fn admit_dry(
        &mut self,
        r: &Admit,
        cpus: Vec<usize>,
        engine: &mut impl Engine,
    ) -> Answered {
        if r.class != AdmitClass::Tt {
            let class = serde_json::to_string(&r.class).unwrap_or_default();
            return Err(bad(
                "dry_run",
                "true".into(),
                &format!(
                    "only for class tt: a {class} task reserves no slots, so there is no \
                     acceptance test to run (class = {class})"
                ),
            ));
        }
        if let (Some(_), Some(v)) = (&r.select, r.vcpus) {
            return Err(bad(
                "vcpus",
                v.to_string(),
                "only without select: with select the threads give the tasks (a VM one per \
                 vCPU thread)",
            ));
        }
        let (a, _) = self.prepare_tt(r, r.select.as_ref(), cpus, engine)?;
        let verdict = engine
            .with_planner(|p, cur| p.dry_run(|p| a.plan(p, cur)))
            .map_err(ControlError::PlannerUnavailable)?;
        Ok(Answer::DryRun(match verdict {
            Ok(placed) => DryRun {
                dry_run: true,
                admit: true,
                cpus: Some(placed.iter().map(|x| self.cpu_id(x.cpu)).collect()),
                why: None,
            },
            Err(why) => DryRun {
                dry_run: true,
                admit: false,
                cpus: None,
                why: Some(format!("{}: {why}", r.name)),
            },
        }))
    }
}
