//! `admit` of class be: no timing; the threads join the slack of the managed CPUs (`cpu`'s
//! alone when given) at once, without a guarantee.

use super::{bad, resolve, timed};
use crate::control::request::{Admit, AdmitSelector};
use crate::control::{Answered, Control, Engine};

impl Control {
    /// `admit` of class be, after the shared checks: refused with any timing field, else
    /// [`Control::admit_slack`].
    pub(super) fn admit_be(
        &mut self,
        r: &Admit,
        select: &AdmitSelector,
        engine: &mut impl Engine,
    ) -> Answered {
        if timed(r) || r.deadline_slots.is_some() || r.after.is_some() {
            return Err(bad(
                "class",
                "\"be\"".into(),
                "a be task takes no timing (period_slots, wcet_slots, deadline_slots, \
                 after, util, latency_us): it runs in the slack of the managed CPUs, \
                 without a guarantee",
            ));
        }
        let (_, tids) = resolve(select, engine)?;
        // (r.cpu was checked to be a managed CPU by Control::admit)
        self.admit_slack(&r.name, r, select, r.cpu, tids, engine)
    }
}
