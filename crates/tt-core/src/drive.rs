//! The run driver: the one slot loop that every run of the planner goes through (issue 33).
//!
//! A run is a [`Decider`] (what decides slots: the runtime planner in `simulate`, the
//! kernel-path planner in the kernel run and in replay, DEmOS's sequencer) and a [`Backend`]
//! (where slots happen: `simulate`'s virtual clock, the kernel's BPF maps and slot clock, a
//! planner log). [`drive`] owns the loop; the backend owns time and effects, the decider owns
//! the decisions, and neither knows the other's kind. So `simulate`, the kernel run and replay
//! cannot drift apart in the order they feed and apply the planner: there is one order, here.
//!
//! # One turn
//! 1. [`Backend::begin`]: the slot in progress (`None` before slot 0 starts), or the end of the
//!    run. The kernel reads CLOCK_MONOTONIC; `simulate` counts; replay reads the log.
//! 2. [`Backend::collect`]: what happened since the last turn, in the order it happened
//!    (the kernel: the slots BPF observed; `simulate`: the work done in the last slot; replay:
//!    the log's calls up to the next advance).
//! 3. [`Decider::decide`]: the decider takes them, in that order, then decides every slot up
//!    to `cur + lead`. Observations come before the decision because a slot's decision may
//!    depend on them (a job that completed early frees its slots: slot shifting's reclaim).
//! 4. [`Backend::apply`]: the decision's writes (table and cpuperf entries, records); the
//!    backend reports every write that came after its slot had started (late).
//! 5. [`Decider::note_late`]: the decider learns which writes were late (the planner counts
//!    them in the summary), right after they are known, before anything slower runs.
//! 6. [`Backend::settle`]: the effects that follow the entries and may be slow (DPM idle-period
//!    ends, pm_qos limits, cpufreq writes): after the entries so that BPF never sees an idle
//!    period end before the entries it covers, and after 5 so a slow sysfs write cannot delay
//!    the count.
//! 7. [`Backend::wait`]: until the next turn (the kernel sleeps to the next slot boundary).
//!
//! The driver is pure: the backend brings the clock and the OS, as values and calls.

/// The slot in progress at a turn: `None` before slot 0 starts.
pub type Cur = Option<u64>;

/// Where slots happen: time, inputs and effects.
pub trait Backend {
    /// One thing that happened since the last turn (an observation, an arrival, a logged call).
    type Input;
    /// What the decider decided in one turn.
    type Decision;
    type Error;

    /// The slot in progress for this turn, or `None` to end the run.
    fn begin(&mut self) -> Option<Cur>;

    /// Appends what happened since the last turn to `inputs`, in the order it happened.
    fn collect(&mut self, cur: Cur, inputs: &mut Vec<Self::Input>) -> Result<(), Self::Error>;

    /// Applies the decision's writes; pushes each `(CPU index, slot)` written after its slot had
    /// started to `late`.
    fn apply(
        &mut self,
        cur: Cur,
        decision: &Self::Decision,
        late: &mut Vec<(usize, u64)>,
    ) -> Result<(), Self::Error>;

    /// The effects that follow the entries (DPM, pm_qos, cpufreq). Nothing by default.
    fn settle(&mut self, _cur: Cur, _decision: &Self::Decision) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Waits for the next turn. Nothing by default (a virtual clock does not wait).
    fn wait(&mut self, _cur: Cur) {}
}

/// What decides slots.
pub trait Decider<B: Backend> {
    /// Takes `inputs` (drained, in order) and decides through the lead.
    fn decide(&mut self, cur: Cur, inputs: &mut Vec<B::Input>) -> Result<B::Decision, B::Error>;

    /// The writes of the last decision that came late (possibly none).
    fn note_late(&mut self, _late: &[(usize, u64)]) {}
}

/// Runs turns until the backend ends the run or a step fails; returns the number of turns.
pub fn drive<B: Backend, D: Decider<B>>(decider: &mut D, backend: &mut B) -> Result<u64, B::Error> {
    let mut inputs = Vec::new();
    let mut late = Vec::new();
    let mut turns = 0;
    while let Some(cur) = backend.begin() {
        inputs.clear();
        backend.collect(cur, &mut inputs)?;
        let decision = decider.decide(cur, &mut inputs)?;
        late.clear();
        backend.apply(cur, &decision, &mut late)?;
        decider.note_late(&late);
        backend.settle(cur, &decision)?;
        backend.wait(cur);
        turns += 1;
    }
    Ok(turns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    type Log = Rc<RefCell<Vec<String>>>;

    /// A scripted backend: turns at the given slots, one input per turn, a late write on odd
    /// slots, an error at `fail_at`.
    struct Script {
        turns: Vec<Cur>,
        next: usize,
        fail_at: Option<u64>,
        log: Log,
    }

    impl Backend for Script {
        type Input = u64;
        type Decision = Vec<u64>;
        type Error = String;

        fn begin(&mut self) -> Option<Cur> {
            let cur = *self.turns.get(self.next)?;
            self.next += 1;
            self.log.borrow_mut().push(format!("begin {cur:?}"));
            Some(cur)
        }

        fn collect(&mut self, cur: Cur, inputs: &mut Vec<u64>) -> Result<(), String> {
            assert!(inputs.is_empty(), "the driver hands a fresh input list");
            inputs.extend(cur.map(|c| c * 10));
            self.log.borrow_mut().push(format!("collect {inputs:?}"));
            Ok(())
        }

        fn apply(
            &mut self,
            cur: Cur,
            d: &Vec<u64>,
            late: &mut Vec<(usize, u64)>,
        ) -> Result<(), String> {
            assert!(late.is_empty());
            if cur.is_some() && cur == self.fail_at {
                return Err(format!("write failed at {cur:?}"));
            }
            if let Some(c) = cur.filter(|c| c % 2 == 1) {
                late.push((0, c));
            }
            self.log.borrow_mut().push(format!("apply {d:?}"));
            Ok(())
        }

        fn settle(&mut self, _cur: Cur, d: &Vec<u64>) -> Result<(), String> {
            self.log.borrow_mut().push(format!("settle {}", d.len()));
            Ok(())
        }

        fn wait(&mut self, cur: Cur) {
            self.log.borrow_mut().push(format!("wait {cur:?}"));
        }
    }

    struct Echo(Log);

    impl Decider<Script> for Echo {
        fn decide(&mut self, cur: Cur, inputs: &mut Vec<u64>) -> Result<Vec<u64>, String> {
            let d: Vec<u64> = inputs.drain(..).chain(cur).collect();
            self.0.borrow_mut().push(format!("decide {d:?}"));
            Ok(d)
        }

        fn note_late(&mut self, late: &[(usize, u64)]) {
            self.0.borrow_mut().push(format!("late {late:?}"));
        }
    }

    fn run(turns: Vec<Cur>, fail_at: Option<u64>) -> (Result<u64, String>, Vec<String>) {
        let log: Log = Rc::default();
        let mut b = Script {
            turns,
            next: 0,
            fail_at,
            log: log.clone(),
        };
        let r = drive(&mut Echo(log.clone()), &mut b);
        let l = log.borrow().clone();
        (r, l)
    }

    #[test]
    fn each_turn_collects_decides_applies_tells_late_settles_and_waits_in_that_order() {
        let (r, log) = run(vec![None, Some(0), Some(1)], None);
        assert_eq!(r, Ok(3));
        let want = [
            "begin None",
            "collect []",
            "decide []",
            "apply []",
            "late []",
            "settle 0",
            "wait None",
            "begin Some(0)",
            "collect [0]",
            "decide [0, 0]",
            "apply [0, 0]",
            "late []",
            "settle 2",
            "wait Some(0)",
            "begin Some(1)",
            "collect [10]",
            "decide [10, 1]",
            "apply [10, 1]",
            "late [(0, 1)]",
            "settle 2",
            "wait Some(1)",
        ];
        assert_eq!(log, want);
    }

    #[test]
    fn a_failed_apply_ends_the_run_before_late_settle_or_wait() {
        let (r, log) = run(vec![Some(0), Some(2), Some(3)], Some(2));
        assert_eq!(r, Err("write failed at Some(2)".to_string()));
        assert_eq!(log.last().map(String::as_str), Some("decide [20, 2]"));
        assert!(!log.iter().any(|l| l == "begin Some(3)"), "{log:?}");
    }

    #[test]
    fn a_backend_that_ends_at_once_runs_no_turn() {
        let (r, log) = run(vec![], None);
        assert_eq!(r, Ok(0));
        assert!(log.is_empty());
    }
}
