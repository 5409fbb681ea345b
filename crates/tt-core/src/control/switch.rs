//! `switch_table` (the module doc of [`crate::control`], Switch): the switch slot, starting a
//! plan's loading, and the switch once it is loaded.

use super::{
    journal, mismatches, request, Answer, Answered, Control, ControlError, Engine, Request,
    SwitchRecord, MIN_LEAD_NS, MIN_LEAD_SLOTS,
};
use crate::plan::{LoadError, Plan};
use std::path::Path;

impl Control {
    /// The switch slot for a switch written at `now_ns` (property 1).
    pub(super) fn switch_slot(&self, now_ns: u64) -> u64 {
        let frame = self.plan.frame_slots.max(1);
        // the first e with start(e - 1) = t0 + (e - 1)·slot >= now + MIN_LEAD_NS
        let before =
            (now_ns.saturating_sub(self.clock.t0_ns) + MIN_LEAD_NS).div_ceil(self.clock.slot_ns);
        let earliest = (before + 1).max(self.clock.slot_or_first(now_ns) + MIN_LEAD_SLOTS);
        earliest.div_ceil(frame) * frame
    }

    /// A switch to the plan at `path`: refused now, or its loading started (the only state
    /// change: `loading`; the rest is [`Control::finish_switch`]'s once the plan is loaded).
    pub(super) fn start_switch(
        &mut self,
        path: &Path,
        engine: &mut impl Engine,
    ) -> Result<(), ControlError> {
        if let Some(p) = &self.planner {
            return Err(ControlError::SwitchInPlannerMode {
                policy: p.policy.clone(),
            });
        }
        if let Some(loading) = &self.loading {
            return Err(ControlError::SwitchLoading {
                table: loading.display().to_string(),
            });
        }
        if let Some(p) = &self.pending {
            return Err(ControlError::SwitchPending {
                table: p.table.clone(),
                slot: p.at_slot,
            });
        }
        engine.start_load(path);
        self.loading = Some(path.to_path_buf());
        Ok(())
    }

    /// The switch to the plan loaded from `path`: checked against the running plan, written to
    /// the kernel, recorded. A refusal changes nothing.
    pub(super) fn finish_switch(
        &mut self,
        path: &Path,
        loaded: Result<Plan, LoadError>,
        engine: &mut impl Engine,
    ) -> Answered {
        let plan = loaded.map_err(|e| ControlError::Plan {
            path: path.to_path_buf(),
            reason: match e {
                LoadError::Io { source, .. } => format!("cannot read the plan: {source}"),
                LoadError::Invalid { errors, .. } => format!("invalid plan: {errors}"),
            },
        })?;
        let found = mismatches(&self.plan, &plan);
        if !found.is_empty() {
            return Err(ControlError::Incompatible {
                path: path.to_path_buf(),
                mismatches: found,
            });
        }
        let at_slot = self.switch_slot(engine.now_ns());
        engine
            .write_table(&plan, at_slot)
            .map_err(ControlError::Kernel)?;
        let record = SwitchRecord {
            at_slot,
            table: path.display().to_string(),
        };
        let at_ns = self.clock.start_ns(at_slot);
        self.log_switch(&record, at_ns, engine);
        self.plan = plan;
        self.pending = Some(record.clone());
        self.history.push(record);
        let line = Request::SwitchTable(request::SwitchTable {
            plan: path.to_path_buf(),
        })
        .to_line();
        self.journal.set(journal::Key::Table, line.ok());
        Ok(Answer::Switched {
            switch_slot: at_slot,
            at_ns,
        })
    }

    /// Notes a switch written to the kernel; warns when the write ended after the tick that
    /// already looked the switch slot up.
    pub(super) fn log_switch(&self, switch: &SwitchRecord, at_ns: u64, engine: &mut impl Engine) {
        let now = engine.now_ns();
        let decided_ns = at_ns.saturating_sub(self.clock.slot_ns);
        if now >= decided_ns {
            engine.warn(&format!(
                "the table was written {:.1} ms after slot {} started: the slots around the \
                 switch may be enforced or accounted with the old table",
                (now - decided_ns) as f64 / 1e6,
                switch.at_slot - 1
            ));
        }
        engine.note(&format!(
            "table switch to {} at slot {} (a frame start, in {:.1} ms)",
            switch.table,
            switch.at_slot,
            at_ns.saturating_sub(now) as f64 / 1e6
        ));
    }
}
