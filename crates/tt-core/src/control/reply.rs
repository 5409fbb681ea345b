//! Replies of the control protocol (docs/control.md): one JSON object per line, `ok` first.
//! An answer's fields follow `ok`; the admissions and the removal carry their verdict
//! (`accepted`, `removed`) between the two, as clients read it.

use serde::Serialize;

/// One reply line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `{"ok":true, ...}`: the request was done (an admission may still be rejected).
    Ok(Answer),
    /// `{"ok":false,"error":"..."}`: the request was refused and changed nothing.
    Err(String),
}

/// What a request did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    Status(Status),
    /// `switch_table` written: the new table is in force from `switch_slot` on, which starts at
    /// `at_ns`.
    Switched {
        switch_slot: u64,
        at_ns: u64,
    },
    /// `admit_firm` accepted: guaranteed on CPU `cpu` before `deadline_slot`; the first slot
    /// the job can run in is `first_slot` (absolute slots of the kernel's slot clock).
    FirmAccepted {
        cpu: u32,
        deadline_slot: u64,
        first_slot: u64,
    },
    /// `admit_firm` rejected: `needed` slots, `available` free before `deadline_slot`.
    FirmRejected {
        needed: u64,
        available: i64,
        deadline_slot: u64,
    },
    /// `set_policy` done: the planner decides the slots from `from_slot` on under `policy`.
    PolicySet {
        policy: String,
        from_slot: u64,
    },
    /// `admit_periodic` accepted: the task runs on CPU `cpu` from `from_slot` on (a frame
    /// start).
    PeriodicAccepted {
        cpu: u32,
        from_slot: u64,
    },
    /// `admit_periodic` rejected: the planner's reason (the EDF miss on the task's CPU).
    PeriodicRejected {
        why: String,
    },
    /// `remove` done: the task owns no slot from `from_slot` on.
    Removed {
        from_slot: u64,
    },
    /// `admit` accepted: every task it added (one per vCPU of a VM), each with its CPU, its
    /// first slot (a frame start) and its timing. A rejection is [`Answer::PeriodicRejected`].
    TaskAdmitted {
        tasks: Vec<AdmittedTask>,
    },
    /// `admit` with `dry_run`: the verdict the same `admit` would get now; nothing changed.
    DryRun(DryRun),
    /// `capacity`: per managed CPU, what the planner holds.
    Capacity(Capacity),
}

/// The answer to an `admit` with `"dry_run": true`: `{"dry_run":true,"admit":true,
/// "cpus":[1,2]}` or `{"dry_run":true,"admit":false,"why":"..."}`. Its verdict is `admit`, not
/// `accepted`, so that a client reading `accepted` never takes it for an admission.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DryRun {
    /// Always true.
    pub dry_run: bool,
    /// Whether the `admit` would be accepted.
    pub admit: bool,
    /// Accepted: the CPU id each task would get (one per vCPU, in vCPU order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    /// Rejected: the reason the `admit` would give (its `why`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The answer to `capacity`: the node's slot grid, and per managed CPU (plan order) what
/// the planner holds, in slots.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Capacity {
    pub slot_us: u64,
    pub frame_slots: u64,
    /// The planner's next undecided slot: each CPU's spare capacity counts from here.
    pub from_slot: u64,
    pub cpus: Vec<CpuCapacity>,
}

/// One managed CPU in a `capacity` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuCapacity {
    /// Its CPU id.
    pub cpu: u32,
    /// Slots per frame reserved by the tasks on it (the plan's and admitted periodic ones):
    /// the admitted utilisation is exactly `reserved_slots / frame_slots`.
    pub reserved_slots: u64,
    /// WCET slots of firm and aperiodic jobs guaranteed there and not finished.
    pub firm_slots: u64,
    /// Free slots in `[from_slot, spare_until_slot)` by the planner's acceptance test (its
    /// capacity intervals): what one firm job due at `spare_until_slot` could still get.
    pub spare_slots: u64,
    /// The end of the planner's horizon on this CPU (exclusive; 2 to 3 frames ahead).
    pub spare_until_slot: u64,
    /// The tasks that may own slots there: the plan's running tt and adaptive tasks, then
    /// the tt and adaptive tasks `admit` added that are neither gone, removed nor done.
    pub tasks: Vec<String>,
}

/// One task an `admit` added.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdmittedTask {
    pub task: String,
    /// Left out for tt (the default), `"be"` for a be task.
    #[serde(skip_serializing_if = "super::request::AdmitClass::is_tt")]
    pub class: super::request::AdmitClass,
    /// `null` for a be task on any managed CPU.
    pub cpu: Option<u32>,
    pub from_slot: u64,
    /// 0 for a be or an aperiodic task.
    pub period_slots: u64,
    pub wcet_slots: u64,
    /// A periodic task's offset, when not 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub offset_slots: u64,
    /// A periodic task's relative deadline, when not its period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_slots: Option<u64>,
    /// An aperiodic task: its job has had `wcet_slots` before this slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_slot: Option<u64>,
    /// An aperiodic task: what its threads do after the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<super::request::AfterJob>,
    pub tids: Vec<u32>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The answer to `status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Status {
    /// The slot in progress (0 before slot 0 starts).
    pub slot: u64,
    pub frame_slots: u64,
    /// The name of the plan in force.
    pub table: String,
    pub pending_switch_slot: Option<u64>,
    /// Planner mode only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planner: Option<PlannerStatus>,
}

/// The planner part of a status reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannerStatus {
    pub policy: String,
    pub lead_slots: u64,
    /// Firm admissions.
    pub admissions_accepted: u64,
    pub admissions_rejected: u64,
    /// Tasks admitted (`admit_periodic`) or removed at run time, latest state of each, in the
    /// order of their first change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskChange>,
    /// The adaptive tasks (the plan's and `admit`'s): state, last inferred period and
    /// reservation, as of the run's last sampling period (docs/adaptive.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub adaptive: Vec<crate::adaptive::AdaptiveView>,
}

/// The run-time state of a task that was admitted or removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskChange {
    pub task: String,
    pub state: TaskState,
    /// The first slot of that state.
    pub from_slot: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Owns its slots (`admit_periodic` accepted).
    Admitted,
    /// Owns no slot (`remove`).
    Removed,
    /// A task `admit` added whose threads are all gone: owns no slot, its capacity is free.
    Gone,
    /// An aperiodic task `admit` added whose job has had its slots: its threads left it (to
    /// the be task `NAME/be`, or to the housekeeping CPUs).
    Done,
}

impl Answer {
    /// `accepted` of an admission, written before the answer's own fields.
    pub(crate) fn accepted(&self) -> Option<bool> {
        match self {
            Answer::FirmAccepted { .. }
            | Answer::PeriodicAccepted { .. }
            | Answer::TaskAdmitted { .. } => Some(true),
            Answer::FirmRejected { .. } | Answer::PeriodicRejected { .. } => Some(false),
            _ => None,
        }
    }
}

/// A reply as it is written.
#[derive(Default, Serialize)]
struct Line<'a> {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    accepted: Option<bool>,
    /// Of a removal: always true.
    #[serde(skip_serializing_if = "Option::is_none")]
    removed: Option<bool>,
    #[serde(flatten)]
    answer: Option<&'a Answer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

impl Reply {
    /// The reply as one JSON line, newline included.
    pub fn to_line(&self) -> String {
        let line = match self {
            Reply::Ok(answer) => Line {
                ok: true,
                accepted: answer.accepted(),
                removed: matches!(answer, Answer::Removed { .. }).then_some(true),
                answer: Some(answer),
                error: None,
            },
            Reply::Err(error) => Line {
                error: Some(error),
                ..Line::default()
            },
        };
        let text = serde_json::to_string(&line)
            .unwrap_or_else(|e| format!(r#"{{"ok":false,"error":"encoding the reply: {e}"}}"#));
        text + "\n"
    }
}
