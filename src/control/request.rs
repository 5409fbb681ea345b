//! Requests of the control protocol (docs/control.md): one JSON object per line, parsed by hand
//! from a `serde_json::Value` so that each error names the field, the value and the rule.

use crate::planner::Policy;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The longest request line accepted, newline excluded.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

const OPS: &str = "status, switch_table, admit_firm, set_policy, admit_periodic, remove";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `{"op":"status"}`
    Status,
    /// `{"op":"switch_table","plan":"/abs/path.json"}`
    SwitchTable { plan: PathBuf },
    /// `{"op":"admit_firm","task":"NAME","wcet_slots":N,"deadline_slots":D}` (planner mode):
    /// a firm job of `wcet_slots` slots for tt task NAME, due `deadline_slots` slots after the
    /// current slot.
    AdmitFirm {
        task: String,
        wcet_slots: u64,
        deadline_slots: u64,
    },
    /// `{"op":"set_policy","policy":"bss"|"dvfs"}` (planner mode): the planner decides the
    /// slots from its next undecided one on under `policy`.
    SetPolicy { policy: Policy },
    /// `{"op":"admit_periodic","task":"NAME"}` (planner mode): admit tt task NAME, declared
    /// `"start": "admitted"`, with its plan timing on its CPU.
    AdmitPeriodic { task: String },
    /// `{"op":"remove","task":"NAME"}` (planner mode): tt task NAME owns no slot from the
    /// planner's next undecided one on.
    Remove { task: String },
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("request is not JSON: {0}")]
    Json(String),
    #[error("request = {0}: must be a JSON object such as {{\"op\":\"status\"}}")]
    NotObject(String),
    #[error("op: is required (one of {OPS})")]
    MissingOp,
    #[error("op = {0}: unknown operation (one of {OPS})")]
    UnknownOp(String),
    #[error("{field}: unknown field for op {op} (its fields: {allowed})")]
    UnknownField {
        op: &'static str,
        field: String,
        allowed: &'static str,
    },
    #[error("{field}: is required for op {op}")]
    MissingField {
        op: &'static str,
        field: &'static str,
    },
    #[error("{field} = {value}: must be {expected}")]
    FieldType {
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error(
        "plan = {0:?}: must be an absolute path (scx_tt's working directory is not the client's)"
    )]
    RelativePlan(String),
    #[error("request is longer than {MAX_REQUEST_BYTES} bytes")]
    TooLong,
}

impl Request {
    /// Parses one request line (without its newline).
    pub fn parse(line: &str) -> Result<Request, RequestError> {
        if line.len() > MAX_REQUEST_BYTES {
            return Err(RequestError::TooLong);
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| RequestError::Json(e.to_string()))?;
        let Value::Object(obj) = value else {
            return Err(RequestError::NotObject(value.to_string()));
        };
        let op = match obj.get("op") {
            None => return Err(RequestError::MissingOp),
            Some(Value::String(op)) => op.as_str(),
            Some(other) => return Err(RequestError::UnknownOp(other.to_string())),
        };
        match op {
            "status" => {
                only_fields(&obj, "status", &["op"], "op")?;
                Ok(Request::Status)
            }
            "switch_table" => {
                only_fields(&obj, "switch_table", &["op", "plan"], "op, plan")?;
                let plan = match obj.get("plan") {
                    None => {
                        return Err(RequestError::MissingField {
                            op: "switch_table",
                            field: "plan",
                        })
                    }
                    Some(Value::String(p)) => p,
                    Some(other) => {
                        return Err(RequestError::FieldType {
                            field: "plan",
                            value: other.to_string(),
                            expected: "a string (the plan file's absolute path)",
                        })
                    }
                };
                if !Path::new(plan).is_absolute() {
                    return Err(RequestError::RelativePlan(plan.clone()));
                }
                Ok(Request::SwitchTable {
                    plan: PathBuf::from(plan),
                })
            }
            "admit_firm" => {
                const FIELDS: &str = "op, task, wcet_slots, deadline_slots";
                only_fields(
                    &obj,
                    "admit_firm",
                    &["op", "task", "wcet_slots", "deadline_slots"],
                    FIELDS,
                )?;
                Ok(Request::AdmitFirm {
                    task: task_name(&obj, "admit_firm")?,
                    wcet_slots: positive(&obj, "wcet_slots")?,
                    deadline_slots: positive(&obj, "deadline_slots")?,
                })
            }
            "set_policy" => {
                only_fields(&obj, "set_policy", &["op", "policy"], "op, policy")?;
                let policy = match obj.get("policy") {
                    None => {
                        return Err(RequestError::MissingField {
                            op: "set_policy",
                            field: "policy",
                        })
                    }
                    Some(v) => v.as_str().and_then(|p| p.parse().ok()).ok_or_else(|| {
                        RequestError::FieldType {
                            field: "policy",
                            value: v.to_string(),
                            expected: "a policy name: \"bss\" or \"dvfs\" in the kernel path",
                        }
                    })?,
                };
                Ok(Request::SetPolicy { policy })
            }
            "admit_periodic" => {
                only_fields(&obj, "admit_periodic", &["op", "task"], "op, task")?;
                Ok(Request::AdmitPeriodic {
                    task: task_name(&obj, "admit_periodic")?,
                })
            }
            "remove" => {
                only_fields(&obj, "remove", &["op", "task"], "op, task")?;
                Ok(Request::Remove {
                    task: task_name(&obj, "remove")?,
                })
            }
            other => Err(RequestError::UnknownOp(Value::from(other).to_string())),
        }
    }

    /// The request as one JSON line, newline included (what `scx_tt ctl` sends).
    pub fn to_line(&self) -> String {
        let value = match self {
            Request::Status => serde_json::json!({ "op": "status" }),
            Request::SwitchTable { plan } => {
                serde_json::json!({ "op": "switch_table", "plan": plan.to_string_lossy() })
            }
            Request::AdmitFirm {
                task,
                wcet_slots,
                deadline_slots,
            } => serde_json::json!({
                "op": "admit_firm",
                "task": task,
                "wcet_slots": wcet_slots,
                "deadline_slots": deadline_slots,
            }),
            Request::SetPolicy { policy } => {
                serde_json::json!({ "op": "set_policy", "policy": policy.name() })
            }
            Request::AdmitPeriodic { task } => {
                serde_json::json!({ "op": "admit_periodic", "task": task })
            }
            Request::Remove { task } => serde_json::json!({ "op": "remove", "task": task }),
        };
        format!("{value}\n")
    }
}

/// The required `task` field of `op`: a task name.
fn task_name(obj: &Map<String, Value>, op: &'static str) -> Result<String, RequestError> {
    match obj.get("task") {
        None => Err(RequestError::MissingField { op, field: "task" }),
        Some(Value::String(t)) => Ok(t.clone()),
        Some(other) => Err(RequestError::FieldType {
            field: "task",
            value: other.to_string(),
            expected: "a string (the name of a tt task of the plan)",
        }),
    }
}

/// A required field of `admit_firm` holding an integer of at least 1 (slots).
fn positive(obj: &Map<String, Value>, field: &'static str) -> Result<u64, RequestError> {
    match obj.get(field) {
        None => Err(RequestError::MissingField {
            op: "admit_firm",
            field,
        }),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Ok(n),
            _ => Err(RequestError::FieldType {
                field,
                value: v.to_string(),
                expected: "an integer of at least 1 (slots)",
            }),
        },
    }
}

fn only_fields(
    obj: &Map<String, Value>,
    op: &'static str,
    known: &[&str],
    allowed: &'static str,
) -> Result<(), RequestError> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(field) => Err(RequestError::UnknownField {
            op,
            field: field.clone(),
            allowed,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_switch_table_parse() {
        assert_eq!(Request::parse(r#"{"op":"status"}"#), Ok(Request::Status));
        assert_eq!(
            Request::parse(r#" {"plan":"/p/b.json", "op":"switch_table"} "#),
            Ok(Request::SwitchTable {
                plan: PathBuf::from("/p/b.json")
            })
        );
    }

    #[test]
    fn to_line_round_trips_through_parse() {
        for r in [
            Request::Status,
            Request::SwitchTable {
                plan: PathBuf::from("/a b/\"q\".json"),
            },
            Request::AdmitFirm {
                task: "tt-a".into(),
                wcet_slots: 20,
                deadline_slots: 60,
            },
            Request::SetPolicy {
                policy: Policy::Dvfs,
            },
            Request::SetPolicy {
                policy: Policy::DpmDvfs,
            },
            Request::AdmitPeriodic { task: "vm".into() },
            Request::Remove {
                task: "a \"b\"".into(),
            },
        ] {
            let line = r.to_line();
            assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
            assert_eq!(Request::parse(line.trim_end()), Ok(r));
        }
    }

    #[test]
    fn bad_json_names_the_position() {
        let err = Request::parse(r#"{"op":"status""#).unwrap_err();
        assert!(
            matches!(&err, RequestError::Json(m) if m.contains("line 1")),
            "{err}"
        );
    }

    #[test]
    fn a_non_object_is_rejected_with_its_value() {
        let err = Request::parse("[1,2]").unwrap_err();
        assert_eq!(
            err.to_string(),
            "request = [1,2]: must be a JSON object such as {\"op\":\"status\"}"
        );
    }

    #[test]
    fn missing_and_unknown_ops_are_named() {
        assert_eq!(Request::parse("{}"), Err(RequestError::MissingOp));
        let err = Request::parse(r#"{"op":"reboot"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "op = \"reboot\": unknown operation (one of status, switch_table, admit_firm, \
             set_policy, admit_periodic, remove)"
        );
        assert_eq!(
            Request::parse(r#"{"op":7}"#),
            Err(RequestError::UnknownOp("7".into()))
        );
    }

    #[test]
    fn unknown_fields_are_rejected_per_op() {
        let err = Request::parse(r#"{"op":"status","plan":"/x.json"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "plan: unknown field for op status (its fields: op)"
        );
        let err = Request::parse(r#"{"op":"switch_table","plan":"/x","at_slot":3}"#).unwrap_err();
        assert!(
            err.to_string().starts_with("at_slot: unknown field"),
            "{err}"
        );
    }

    #[test]
    fn switch_table_needs_an_absolute_plan_string() {
        assert_eq!(
            Request::parse(r#"{"op":"switch_table"}"#)
                .unwrap_err()
                .to_string(),
            "plan: is required for op switch_table"
        );
        assert_eq!(
            Request::parse(r#"{"op":"switch_table","plan":5}"#)
                .unwrap_err()
                .to_string(),
            "plan = 5: must be a string (the plan file's absolute path)"
        );
        assert_eq!(
            Request::parse(r#"{"op":"switch_table","plan":"b.json"}"#),
            Err(RequestError::RelativePlan("b.json".into()))
        );
    }

    #[test]
    fn admit_firm_parses_and_names_every_bad_field() {
        assert_eq!(
            Request::parse(r#"{"op":"admit_firm","task":"a","wcet_slots":3,"deadline_slots":9}"#),
            Ok(Request::AdmitFirm {
                task: "a".into(),
                wcet_slots: 3,
                deadline_slots: 9
            })
        );
        let err = |line: &str| Request::parse(line).unwrap_err().to_string();
        assert_eq!(
            err(r#"{"op":"admit_firm","wcet_slots":3,"deadline_slots":9}"#),
            "task: is required for op admit_firm"
        );
        assert_eq!(
            err(r#"{"op":"admit_firm","task":"a","deadline_slots":9}"#),
            "wcet_slots: is required for op admit_firm"
        );
        assert_eq!(
            err(r#"{"op":"admit_firm","task":"a","wcet_slots":3}"#),
            "deadline_slots: is required for op admit_firm"
        );
        assert_eq!(
            err(r#"{"op":"admit_firm","task":7,"wcet_slots":3,"deadline_slots":9}"#),
            "task = 7: must be a string (the name of a tt task of the plan)"
        );
        for bad in ["0", "-2", "1.5", "\"3\"", "null"] {
            assert_eq!(
                err(&format!(
                    r#"{{"op":"admit_firm","task":"a","wcet_slots":{bad},"deadline_slots":9}}"#
                )),
                format!("wcet_slots = {bad}: must be an integer of at least 1 (slots)")
            );
            assert_eq!(
                err(&format!(
                    r#"{{"op":"admit_firm","task":"a","wcet_slots":3,"deadline_slots":{bad}}}"#
                )),
                format!("deadline_slots = {bad}: must be an integer of at least 1 (slots)")
            );
        }
        assert_eq!(
            err(r#"{"op":"admit_firm","task":"a","wcet_slots":3,"deadline_slots":9,"cpu":1}"#),
            "cpu: unknown field for op admit_firm (its fields: op, task, wcet_slots, deadline_slots)"
        );
    }

    #[test]
    fn set_policy_parses_a_policy_name_and_names_every_bad_field() {
        assert_eq!(
            Request::parse(r#"{"op":"set_policy","policy":"dvfs"}"#),
            Ok(Request::SetPolicy {
                policy: Policy::Dvfs
            })
        );
        // dpm parses (a policy); the planner refuses it (src/control/online.rs)
        assert_eq!(
            Request::parse(r#"{"op":"set_policy","policy":"dpm"}"#),
            Ok(Request::SetPolicy {
                policy: Policy::Dpm
            })
        );
        let err = |line: &str| Request::parse(line).unwrap_err().to_string();
        assert_eq!(
            err(r#"{"op":"set_policy"}"#),
            "policy: is required for op set_policy"
        );
        for bad in ["\"fast\"", "3", "null", "\"BSS\""] {
            assert_eq!(
                err(&format!(r#"{{"op":"set_policy","policy":{bad}}}"#)),
                format!(
                    "policy = {bad}: must be a policy name: \"bss\" or \"dvfs\" in the kernel path"
                )
            );
        }
        assert_eq!(
            err(r#"{"op":"set_policy","policy":"bss","from_slot":3}"#),
            "from_slot: unknown field for op set_policy (its fields: op, policy)"
        );
    }

    #[test]
    fn an_oversized_line_is_refused_before_parsing() {
        let line = format!(
            r#"{{"op":"status","pad":"{}"}}"#,
            "x".repeat(MAX_REQUEST_BYTES)
        );
        assert_eq!(Request::parse(&line), Err(RequestError::TooLong));
    }

    #[test]
    fn admit_periodic_and_remove_parse_and_name_every_bad_field() {
        assert_eq!(
            Request::parse(r#"{"op":"admit_periodic","task":"vm"}"#),
            Ok(Request::AdmitPeriodic { task: "vm".into() })
        );
        assert_eq!(
            Request::parse(r#"{"op":"remove","task":"a"}"#),
            Ok(Request::Remove { task: "a".into() })
        );
        let err = |line: &str| Request::parse(line).unwrap_err().to_string();
        assert_eq!(
            err(r#"{"op":"admit_periodic"}"#),
            "task: is required for op admit_periodic"
        );
        assert_eq!(err(r#"{"op":"remove"}"#), "task: is required for op remove");
        assert_eq!(
            err(r#"{"op":"remove","task":3}"#),
            "task = 3: must be a string (the name of a tt task of the plan)"
        );
        assert_eq!(
            err(r#"{"op":"admit_periodic","task":"vm","wcet_slots":3}"#),
            "wcet_slots: unknown field for op admit_periodic (its fields: op, task)"
        );
    }
}
