//! The reservations of a run's adaptive tasks (issue 17): every sampling period each task's
//! controller turns its consumption and its inferred period into a request in slots, the
//! supervisor decides the grants of one CPU's tasks together, and [`changes`] says what the run
//! must do to the planner for each task (grant, resize, remove) given what it holds now. Pure:
//! the run (src/cli/run/adaptive.rs) applies the changes through the planner and BPF.
//!
//! # States (`status`, the stats, the summary)
//! - `learning`: no request yet (no period inferred, or no consumption sample yet);
//! - `reserved`: it holds the reservation it asked for;
//! - `compressed`: it holds less than it asked for (the supervisor compressed it);
//! - `best-effort`: it asked and holds nothing (dropped by the supervisor, or the planner
//!   refused the admission): it runs as be in the slack.

use super::supervisor::{Allocation, Grant, Supervision};
use serde::Serialize;

/// What an adaptive task is (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdaptiveState {
    #[default]
    Learning,
    Reserved,
    Compressed,
    BestEffort,
}

impl AdaptiveState {
    pub fn name(self) -> &'static str {
        match self {
            AdaptiveState::Learning => "learning",
            AdaptiveState::Reserved => "reserved",
            AdaptiveState::Compressed => "compressed",
            AdaptiveState::BestEffort => "best-effort",
        }
    }
}

/// A periodic reservation held or wanted: `wcet` slots every `period` slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Slots {
    pub period: u64,
    pub wcet: u64,
}

impl Slots {
    /// `W/P slots (Q ms every T ms)` for slots of `slot_ns`.
    pub fn text(&self, slot_ns: u64) -> String {
        let ms = |s: u64| s as f64 * slot_ns as f64 / 1e6;
        format!(
            "{}/{} slots ({} ms every {} ms)",
            self.wcet,
            self.period,
            ms(self.wcet),
            ms(self.period)
        )
    }
}

/// What the run shows of one adaptive task (`status`, the stats, the summary and its JSON;
/// docs/run-output.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdaptiveView {
    pub name: String,
    /// Its BPF task index.
    pub task: usize,
    pub state: AdaptiveState,
    /// The last period inferred, µs (rounded); `None` before the first.
    pub period_us: Option<u64>,
    /// The reservation it holds (`None`: none, it runs as be).
    pub reservation: Option<Slots>,
    /// Reservation changes so far (grants, resizes, removals).
    pub changes: u64,
}

impl AdaptiveView {
    /// `NAME STATE period P ms, reservation W/P slots (...)` for slots of `slot_ns`.
    pub fn text(&self, slot_ns: u64) -> String {
        format!(
            "{} {}: period {}, reservation {} ({} changes)",
            self.name,
            self.state.name(),
            self.period_us.map_or("none yet".to_string(), |p| format!(
                "{:.3} ms",
                p as f64 / 1e3
            )),
            self.reservation
                .map_or("none".to_string(), |r| r.text(slot_ns)),
            self.changes
        )
    }
}

/// What the run does for one task (its id: the caller's, as in the supervisor's requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Admit `to` (it holds nothing).
    Grant { id: usize, to: Slots },
    /// Take `from` out and admit `to`, under one hold of the planner.
    Resize { id: usize, from: Slots, to: Slots },
    /// Take `from` out: it runs as be.
    Remove { id: usize, from: Slots },
}

/// The grant of one allocation (`None`: dropped).
pub fn granted(a: &Allocation) -> Option<Slots> {
    (a.granted > 0).then_some(Slots {
        period: a.request.period,
        wcet: a.granted,
    })
}

/// The state an allocation leaves its task in, when the run applied it.
pub fn state_of(a: &Allocation) -> AdaptiveState {
    match a.grant {
        Grant::Full => AdaptiveState::Reserved,
        Grant::Compressed => AdaptiveState::Compressed,
        Grant::Dropped => AdaptiveState::BestEffort,
    }
}

/// The changes that bring every supervised task from what it holds (`held(id)`) to its grant:
/// nothing for a task whose grant equals what it holds. Removals come first, then the resizes
/// that do not raise the bandwidth, then those that do, then grants (each pass in the
/// supervisor's order): every change but the growing ones frees capacity, so that the planner,
/// applying them one by one, admits each growing one next to what the others already gave
/// back (the supervisor accepted the set as a whole).
pub fn changes(sup: &Supervision, held: impl Fn(usize) -> Option<Slots>) -> Vec<Change> {
    // wcet/period ≤ wcet'/period' in integers
    let grows = |from: Slots, to: Slots| to.wcet * from.period > from.wcet * to.period;
    let mut out = Vec::new();
    for pass in 0..4 {
        for a in &sup.allocations {
            let id = a.request.id;
            let c = match (held(id), granted(a)) {
                (Some(from), None) if pass == 0 => Change::Remove { id, from },
                (Some(from), Some(to))
                    if from != to && pass == 1 + usize::from(grows(from, to)) =>
                {
                    Change::Resize { id, from, to }
                }
                (None, Some(to)) if pass == 3 => Change::Grant { id, to },
                _ => continue,
            };
            out.push(c);
        }
    }
    out
}

/// When BPF's class of an adaptive task follows a change of its reservation (src/bpf/
/// tt_sched.bpf.c F), as `(at_ns, tt)` in time order: `removed_ns`, the start of the first slot
/// the planner decides without the old reservation (the slots decided before still name the
/// task: it stays tt through them); `admitted_ns`, the start of the new reservation's first
/// slot (a frame start, up to a frame or two ahead). The task turns tt `advance_ns` before its
/// first slot (the run polls every 100 ms: early enough that no slot of it finds it be, late
/// enough that it does not wait long without slots), and be from the removal until then, so
/// that a resize leaves it in the slack instead of without CPU while the new frame comes.
pub fn class_changes(
    removed_ns: Option<u64>,
    admitted_ns: Option<u64>,
    now_ns: u64,
    advance_ns: u64,
) -> Vec<(u64, bool)> {
    let tt_at = admitted_ns.map(|a| a.saturating_sub(advance_ns).max(now_ns));
    match (removed_ns, tt_at) {
        (None, None) => Vec::new(),
        (Some(r), None) => vec![(r.max(now_ns), false)],
        (None, Some(t)) => vec![(t, true)],
        (Some(r), Some(t)) if t <= r => vec![(t, true)],
        (Some(r), Some(t)) => vec![(r.max(now_ns), false), (t, true)],
    }
}

/// Takes the class changes of `pending` (from [`class_changes`], in time order) due at
/// `now_ns` and returns the class they leave: the last due one (`Some(true)`: tt), or `None`
/// when none is due. The later ones stay pending.
pub fn take_due(pending: &mut Vec<(u64, bool)>, now_ns: u64) -> Option<bool> {
    let due = pending.iter().take_while(|(at, _)| *at <= now_ns).count();
    let last = pending[..due].last().map(|&(_, tt)| tt);
    pending.drain(..due);
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::supervisor::supervise;
    use crate::adaptive::supervisor::testing::{req, util};

    fn s(period: u64, wcet: u64) -> Slots {
        Slots { period, wcet }
    }

    #[test]
    fn a_first_grant_a_resize_and_a_removal_in_that_order_of_passes() {
        // 0 holds 4/20 and now asks 5/20 (fits); 1 holds nothing and asks 3/15; 2 holds 2/20
        // and is dropped: 5/20 + 3/15 = 0.45, + 2/20 = 0.55 > 0.5 (its minimum 2)
        let reqs = [req(0, 20, 5, 5), req(1, 15, 3, 3), req(2, 20, 2, 2)];
        let sup = supervise(&reqs, &mut util(0.5)).expect("valid");
        let held = |id| match id {
            0 => Some(s(20, 4)),
            2 => Some(s(20, 2)),
            _ => None,
        };
        assert_eq!(
            changes(&sup, held),
            vec![
                Change::Remove {
                    id: 2,
                    from: s(20, 2)
                },
                Change::Resize {
                    id: 0,
                    from: s(20, 4),
                    to: s(20, 5)
                },
                Change::Grant {
                    id: 1,
                    to: s(15, 3)
                },
            ]
        );
        let states: Vec<AdaptiveState> = sup.allocations.iter().map(state_of).collect();
        assert_eq!(
            states,
            [
                AdaptiveState::Reserved,
                AdaptiveState::Reserved,
                AdaptiveState::BestEffort
            ]
        );
    }

    #[test]
    fn shrinking_resizes_come_before_growing_ones() {
        // 0 grows 3/15 → 4/15, 1 shrinks 5/10 → 4/10: 0.3 + 4/15 + 0.4 ≤ 1 as a set, but 0's
        // growth first (next to 1's 5/10) would not fit; 1's shrink goes first
        let reqs = [req(0, 15, 4, 4), req(1, 10, 4, 4)];
        let sup = supervise(&reqs, &mut util(0.7)).expect("valid");
        let held = |id| match id {
            0 => Some(s(15, 3)),
            _ => Some(s(10, 5)),
        };
        assert_eq!(
            changes(&sup, held),
            vec![
                Change::Resize {
                    id: 1,
                    from: s(10, 5),
                    to: s(10, 4)
                },
                Change::Resize {
                    id: 0,
                    from: s(15, 3),
                    to: s(15, 4)
                },
            ]
        );
    }

    #[test]
    fn an_unchanged_grant_changes_nothing_and_a_compressed_one_is_resized() {
        let reqs = [req(0, 20, 4, 1)];
        let sup = supervise(&reqs, &mut util(1.0)).expect("valid");
        assert!(changes(&sup, |_| Some(s(20, 4))).is_empty());
        // 2 slots of 20 at most: λ = 1/3, grant 1 + ⌊3/3⌋ = 2
        let sup = supervise(&reqs, &mut util(0.1)).expect("valid");
        assert_eq!(state_of(&sup.allocations[0]), AdaptiveState::Compressed);
        assert_eq!(
            changes(&sup, |_| Some(s(20, 4))),
            vec![Change::Resize {
                id: 0,
                from: s(20, 4),
                to: s(20, 2)
            }]
        );
        // a new period is a resize too
        let sup = supervise(&[req(0, 15, 3, 1)], &mut util(1.0)).expect("valid");
        assert_eq!(
            changes(&sup, |_| Some(s(20, 4))),
            vec![Change::Resize {
                id: 0,
                from: s(20, 4),
                to: s(15, 3)
            }]
        );
    }

    #[test]
    fn a_view_in_text_and_json() {
        let v = AdaptiveView {
            name: "legacy".into(),
            task: 1,
            state: AdaptiveState::Reserved,
            period_us: Some(40_001),
            reservation: Some(s(20, 4)),
            changes: 2,
        };
        assert_eq!(
            v.text(2_000_000),
            "legacy reserved: period 40.001 ms, reservation 4/20 slots (8 ms every 40 ms) (2 changes)"
        );
        let json = serde_json::to_value(&v).expect("json");
        assert_eq!(json["state"], "reserved");
        assert_eq!(json["period_us"], 40_001);
        assert_eq!(json["reservation"]["period"], 20);
        assert_eq!(json["reservation"]["wcet"], 4);
        let none = AdaptiveView {
            state: AdaptiveState::Learning,
            period_us: None,
            reservation: None,
            ..v
        };
        assert_eq!(
            none.text(2_000_000),
            "legacy learning: period none yet, reservation none (2 changes)"
        );
        assert!(serde_json::to_value(&none).expect("json")["reservation"].is_null());
    }

    #[test]
    fn the_class_turns_tt_just_before_the_first_slot_and_be_after_the_last() {
        const MS: u64 = 1_000_000;
        // a grant from 600 ms: tt at 450 ms (150 ms ahead); one due now: at once
        assert_eq!(
            class_changes(None, Some(600 * MS), 100 * MS, 150 * MS),
            [(450 * MS, true)]
        );
        assert_eq!(
            class_changes(None, Some(200 * MS), 100 * MS, 150 * MS),
            [(100 * MS, true)]
        );
        // a removal: be once its decided slots have passed
        assert_eq!(
            class_changes(Some(110 * MS), None, 100 * MS, 150 * MS),
            [(110 * MS, false)]
        );
        // a resize whose new frame is far: be in between, then tt again
        assert_eq!(
            class_changes(Some(110 * MS), Some(700 * MS), 100 * MS, 150 * MS),
            [(110 * MS, false), (550 * MS, true)]
        );
        // a resize whose new frame is near: tt throughout
        assert_eq!(
            class_changes(Some(110 * MS), Some(250 * MS), 100 * MS, 150 * MS),
            [(100 * MS, true)]
        );
        assert!(class_changes(None, None, 0, 0).is_empty());
    }

    #[test]
    fn states_and_slots_text() {
        assert_eq!(AdaptiveState::BestEffort.name(), "best-effort");
        assert_eq!(
            serde_json::to_string(&AdaptiveState::BestEffort).expect("json"),
            "\"best-effort\""
        );
        assert_eq!(AdaptiveState::default(), AdaptiveState::Learning);
        assert_eq!(s(20, 4).text(2_000_000), "4/20 slots (8 ms every 40 ms)");
        assert_eq!(s(15, 3).text(500_000), "3/15 slots (1.5 ms every 7.5 ms)");
    }

    #[test]
    fn due_changes_leave_the_last_due_class_and_keep_the_later_ones() {
        // a resize: be from 100, tt from 250; against a brute force over every time
        for now in 0..400 {
            let mut p = class_changes(Some(100), Some(400), 0, 150);
            assert_eq!(p, vec![(100, false), (250, true)]);
            let want = if now >= 250 {
                Some(true)
            } else if now >= 100 {
                Some(false)
            } else {
                None
            };
            let left: Vec<_> = class_changes(Some(100), Some(400), 0, 150)
                .into_iter()
                .filter(|&(at, _)| at > now)
                .collect();
            assert_eq!(take_due(&mut p, now), want, "now {now}");
            assert_eq!(p, left, "now {now}");
        }
        // a scheduler detached past both (a restart during the resize): tt, nothing left
        let mut p = vec![(100, false), (250, true)];
        assert_eq!(take_due(&mut p, 10_000), Some(true));
        assert!(p.is_empty());
        assert_eq!(take_due(&mut p, 10_001), None);
    }
}
