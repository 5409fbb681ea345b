//! `admit` of class adaptive: bounds (`adaptive`) instead of timing, one managed CPU; the
//! threads join that CPU's slack at once, and the reservation comes later, from the
//! supervisor (`crate::adaptive`).

use super::{bad, resolve, timed};
use crate::control::request::{Admit, AdmitSelector};
use crate::control::{Answered, Control, Engine};

impl Control {
    /// `admit` of class adaptive, after the shared checks: [`check_adaptive`], then
    /// [`Control::admit_slack`].
    pub(super) fn admit_adaptive(
        &mut self,
        r: &Admit,
        select: &AdmitSelector,
        engine: &mut impl Engine,
    ) -> Answered {
        check_adaptive(r, timed(r), self.plan.slot_us).map_err(|(f, v, rule)| bad(&f, v, &rule))?;
        let (_, tids) = resolve(select, engine)?;
        self.admit_slack(&r.name, r, select, r.cpu, tids, engine)
    }
}

/// An `admit` of class adaptive: no timing, a managed CPU (`cpu`), and bounds within their
/// rules (`crate::adaptive::bounds`). The error: field, value, rule.
fn check_adaptive(r: &Admit, timed: bool, slot_us: u64) -> Result<(), (String, String, String)> {
    if timed || r.deadline_slots.is_some() || r.after.is_some() || r.offset_slots.is_some() {
        return Err((
            "class".into(),
            "\"adaptive\"".into(),
            "an adaptive task takes no timing (period_slots, wcet_slots, offset_slots, \
             deadline_slots, after, util, latency_us): its period and budget are inferred at run \
             time; bound them with adaptive"
                .into(),
        ));
    }
    if r.cpu.is_none() {
        return Err((
            "cpu".into(),
            "null".into(),
            "is required for an adaptive task (the CPU of its reservation)".into(),
        ));
    }
    r.adaptive
        .as_deref()
        .cloned()
        .unwrap_or_default()
        .params(Some(slot_us))
        .map(drop)
        .map_err(|e| (format!("adaptive.{}", e.field), e.value, e.rule))
}
