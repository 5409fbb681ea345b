//! Requests of the control protocol (docs/control.md): one JSON object per line, `op` naming
//! the operation and the other fields its arguments.
//!
//! Parsed with serde, in two steps, because serde's internally tagged enums buffer the object
//! before they pick the variant and so lose the path of a field error: [`Request::parse`] takes
//! `op` out of the object and reads the rest into that op's arguments (a struct that denies
//! unknown fields) through `serde_path_to_error`, so that every error names the field. Written
//! back (`scx_tt ctl`) through the derived, `op`-tagged serialisation of the same enum.

use crate::planner::cpu::MAX_JOB_SLOTS;
use crate::planner::Policy;
use serde::de::{self, DeserializeOwned, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;
use thiserror::Error;

/// The longest request line accepted, newline excluded.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// The operations, in the order of docs/control.md.
const OPS: &str =
    "status, switch_table, admit_firm, set_policy, admit_periodic, remove, admit, capacity";

/// One request.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// `{"op":"status"}`
    Status,
    /// `{"op":"switch_table","plan":"/abs/path.json"}`
    SwitchTable(SwitchTable),
    /// `{"op":"admit_firm","task":"NAME","wcet_slots":N,"deadline_slots":D}` (planner mode)
    AdmitFirm(AdmitFirm),
    /// `{"op":"set_policy","policy":"bss"|"dvfs"}` (planner mode)
    SetPolicy(SetPolicy),
    /// `{"op":"admit_periodic","task":"NAME"}` (planner mode)
    AdmitPeriodic(TaskArg),
    /// `{"op":"remove","task":"NAME"}` (planner mode)
    Remove(TaskArg),
    /// `{"op":"admit","name":"vm1","select":{"qemu_pid":123},"util":0.2,"latency_us":40000}`
    /// (planner mode): a task the plan does not name; with `"dry_run":true` only the verdict
    /// it would get now, changing nothing.
    Admit(Admit),
    /// `{"op":"capacity"}` (planner mode): per managed CPU, the slots reserved per frame, the
    /// spare capacity the planner holds now and the tasks there. Read-only.
    Capacity,
}

/// `status` takes no argument.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// Switch to the plan file `plan`'s table at the next frame start far enough ahead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchTable {
    /// An absolute path: scx_tt's working directory is not the client's.
    #[serde(deserialize_with = "absolute_path")]
    pub plan: PathBuf,
}

/// A firm job of `wcet_slots` slots for tt task `task`, due `deadline_slots` slots after the
/// current slot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmitFirm {
    pub task: String,
    #[serde(deserialize_with = "positive_slots")]
    pub wcet_slots: u64,
    #[serde(deserialize_with = "positive_slots")]
    pub deadline_slots: u64,
}

/// The planner decides the slots from its next undecided one on under `policy` (any policy
/// name parses; the kernel path runs bss and dvfs only, which the state machine checks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetPolicy {
    #[serde(serialize_with = "policy_name", deserialize_with = "policy_of_name")]
    pub policy: Policy,
}

/// Which threads an `admit` takes, resolved when the request arrives (as a plan's selectors,
/// docs/plan-format.md): `{"pid":N}` (every thread of the process), `{"tids":[...]}`,
/// `{"comm":"NAME"}` (threads of that name), `{"cgroup":"/PATH"}` (cgroup v2 `cgroup.threads`),
/// `{"qemu_pid":N}` / `{"qemu_name":"NAME"}` (a QEMU process's vCPU threads, `CPU n/KVM` or
/// `CPU n/TCG`: one task per vCPU).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AdmitSelector {
    Pid(u32),
    Tids(Vec<u32>),
    Comm(String),
    Cgroup(String),
    QemuPid(u32),
    QemuName(String),
}

/// The class of an `admit`ted task: `tt` (the default) owns slots by its timing; `be` runs in
/// the slack of the managed CPUs (of `cpu` if given), with no timing and no guarantee;
/// `adaptive` gives no timing either and names its managed CPU: it runs as `be` there until the
/// supervisor grants it a reservation from its observed period and consumption, within the
/// optional `adaptive` bounds (docs/adaptive.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdmitClass {
    #[default]
    Tt,
    Be,
    Adaptive,
}

impl AdmitClass {
    pub fn is_tt(&self) -> bool {
        *self == AdmitClass::Tt
    }
}

/// What the threads of an aperiodic `admit` (one job of `wcet_slots` before `deadline_slots`)
/// do once the job has had its slots: `be`, run on in the slack of the same managed CPU
/// without a guarantee; `leave`, leave the plan and run on the housekeeping CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterJob {
    Be,
    Leave,
}

/// A task the plan does not name, admitted at run time (`scx_tt ctl admit`, docs/control.md):
/// `name`, its threads (`select`), its timing — `period_slots` and `wcet_slots`, or `util` (of a
/// CPU, per vCPU) and `latency_us` (the longest the task may wait for the CPU) — and optionally
/// the managed CPU (`cpu`, else the least loaded). The state machine checks the combination.
/// `select` is required ([`Request::parse`] refuses its absence as serde would) unless
/// `dry_run` is set: a dry run may give `vcpus` instead of threads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admit {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<AdmitSelector>,
    #[serde(default, skip_serializing_if = "AdmitClass::is_tt")]
    pub class: AdmitClass,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "some_slots"
    )]
    pub period_slots: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "some_slots"
    )]
    pub wcet_slots: Option<u64>,
    /// With `period_slots`: each job's release after its period's start (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_slots: Option<u64>,
    /// With `period_slots`: each job's relative deadline (default the period). Without
    /// `period_slots`: the deadline of an aperiodic task's one job of `wcet_slots`, counted
    /// from the slot the request arrives in.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "some_slots"
    )]
    pub deadline_slots: Option<u64>,
    /// An aperiodic task: what its threads do once its job has had its slots (default `be`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<AfterJob>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// With class `adaptive`: its bounds (the plan's `adaptive` object, docs/plan-format.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<Box<crate::adaptive::AdaptiveBounds>>,
    /// Class tt only: answer the verdict this `admit` would get now (accepted with the CPU of
    /// each vCPU, or rejected with the reason) and change nothing (docs/control.md, "Dry
    /// runs").
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    /// A dry run without `select`: the number of reservations (vCPUs, one per managed CPU),
    /// 1..=the managed CPUs; default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpus: Option<u32>,
    /// Class tt: the CPU id of each task in order (one per vCPU of a VM), instead of the
    /// planner's choice. The journal records an accepted admission with the CPUs it got, so
    /// that a `--resume` puts each task back where it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Admit {
    /// `name` for the threads `select` selects, with no timing, class tt, any CPU: the fields
    /// to set follow.
    pub fn new(name: impl Into<String>, select: AdmitSelector) -> Self {
        Admit {
            name: name.into(),
            select: Some(select),
            class: AdmitClass::Tt,
            period_slots: None,
            wcet_slots: None,
            offset_slots: None,
            deadline_slots: None,
            after: None,
            util: None,
            latency_us: None,
            cpu: None,
            adaptive: None,
            dry_run: false,
            vcpus: None,
            cpus: None,
        }
    }
}

/// An optional [`positive_slots`].
fn some_slots<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    positive_slots(d).map(Some)
}

/// The task an `admit_periodic` or `remove` is about, by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskArg {
    pub task: String,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("request is longer than {MAX_REQUEST_BYTES} bytes")]
    TooLong,
    #[error("request is not JSON: {0}")]
    Json(String),
    #[error("request = {0}: must be a JSON object such as {{\"op\":\"status\"}}")]
    NotObject(String),
    #[error("op: is required (one of {OPS})")]
    MissingOp,
    /// The value of `op`, as JSON text.
    #[error("op = {0}: unknown operation (one of {OPS})")]
    UnknownOp(String),
    /// The JSON path of a key that appears twice in one object.
    #[error("{0}: appears twice (a key may appear once)")]
    DuplicateKey(String),
    /// An argument of `op` broke a rule: `field` names it, or `message` does when the error is
    /// about the arguments as a whole (a missing one).
    #[error("{at}: {message}", at = field.clone().unwrap_or_else(|| format!("op = {op:?}")))]
    Field {
        op: &'static str,
        field: Option<String>,
        message: String,
    },
}

impl Request {
    /// Parses one request line (without its newline).
    pub fn parse(line: &str) -> Result<Request, RequestError> {
        if line.len() > MAX_REQUEST_BYTES {
            return Err(RequestError::TooLong);
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| RequestError::Json(e.to_string()))?;
        let Value::Object(mut args) = value else {
            return Err(RequestError::NotObject(value.to_string()));
        };
        // `Value` keeps the last of two equal keys; a second pass over the (valid, bounded)
        // line refuses them instead, wherever they are.
        let de = &mut serde_json::Deserializer::from_str(line);
        if let Err(e) = serde_path_to_error::deserialize::<_, UniqueKeys>(de) {
            // the path is the object's; the message is the key (serde_json adds the position)
            let parent = e.path().to_string();
            let key = e.into_inner().to_string();
            let key = key.rsplit_once(" at line ").map_or(&key[..], |(k, _)| k);
            return Err(RequestError::DuplicateKey(match &parent[..] {
                "." => key.to_string(),
                p => format!("{p}.{key}"),
            }));
        }
        let op = args.remove("op").ok_or(RequestError::MissingOp)?;
        let args = Value::Object(args);
        match op.as_str() {
            Some("status") => parse_args::<NoArgs>("status", args).map(|_| Request::Status),
            Some("switch_table") => parse_args("switch_table", args).map(Request::SwitchTable),
            Some("admit_firm") => parse_args("admit_firm", args).map(Request::AdmitFirm),
            Some("set_policy") => parse_args("set_policy", args).map(Request::SetPolicy),
            Some("admit_periodic") => {
                parse_args("admit_periodic", args).map(Request::AdmitPeriodic)
            }
            Some("remove") => parse_args("remove", args).map(Request::Remove),
            Some("admit") => parse_args::<Admit>("admit", args).and_then(|r| {
                match r.select.is_none() && !r.dry_run {
                    // as serde says it of a required field: only a dry run may leave it out
                    true => Err(RequestError::Field {
                        op: "admit",
                        field: None,
                        message: "missing field `select`".into(),
                    }),
                    false => Ok(Request::Admit(r)),
                }
            }),
            Some("capacity") => parse_args::<NoArgs>("capacity", args).map(|_| Request::Capacity),
            _ => Err(RequestError::UnknownOp(op.to_string())),
        }
    }

    /// The request as one JSON line, newline included (what `scx_tt ctl` sends); `Err` for a
    /// plan path that is not UTF-8 (JSON cannot carry it).
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        Ok(serde_json::to_string(self)? + "\n")
    }
}

/// Reads the arguments of `op` (the request object without `op`) into `T`.
fn parse_args<T: DeserializeOwned>(op: &'static str, args: Value) -> Result<T, RequestError> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        RequestError::Field {
            op,
            field: (path != ".").then_some(path),
            message: e.into_inner().to_string(),
        }
    })
}

/// `wcet_slots`, `deadline_slots`: an integer of at least 1 and at most the planner's bound
/// [`MAX_JOB_SLOTS`] (beyond it a job's work would not fit the planner's 64-bit counters).
fn positive_slots<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct Slots;
    impl Visitor<'_> for Slots {
        type Value = u64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an integer of at least 1 (slots)")
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
            match n {
                0 => Err(E::invalid_value(Unexpected::Unsigned(n), &self)),
                1..=MAX_JOB_SLOTS => Ok(n),
                _ => Err(E::invalid_value(Unexpected::Unsigned(n), &AtMost)),
            }
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
            match u64::try_from(n) {
                Ok(n) => self.visit_u64(n),
                Err(_) => Err(E::invalid_value(Unexpected::Signed(n), &self)),
            }
        }
    }
    d.deserialize_u64(Slots)
}

/// Any JSON value whose objects have distinct keys (the error is at the second occurrence).
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeys)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = UniqueKeys;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(self)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(key));
            }
            seen.insert(key);
            map.next_value::<UniqueKeys>()?;
        }
        Ok(self)
    }
}

/// What a slot count above the bound should have been.
struct AtMost;
impl de::Expected for AtMost {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "at most {MAX_JOB_SLOTS} slots (the planner's bound)")
    }
}

/// `plan`: an absolute path.
fn absolute_path<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    d.deserialize_str(StrRule {
        expected: "an absolute path (scx_tt's working directory is not the client's)",
        parse: |s: &str| Some(PathBuf::from(s)).filter(|p| p.is_absolute()),
    })
}

/// `policy`: a policy name.
fn policy_of_name<'de, D: Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
    d.deserialize_str(StrRule {
        expected: "a policy name: \"bss\", \"dvfs\", \"dpm\" or \"dpm+dvfs\"",
        parse: |s: &str| s.parse().ok(),
    })
}

fn policy_name<S: Serializer>(policy: &Policy, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(policy.name())
}

/// A string field that `parse` accepts (`None`: the value breaks the rule `expected` says).
struct StrRule<F> {
    expected: &'static str,
    parse: F,
}

impl<T, F: FnOnce(&str) -> Option<T>> Visitor<'_> for StrRule<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        (self.parse)(s).ok_or_else(|| E::invalid_value(Unexpected::Str(s), &self.expected))
    }
}
