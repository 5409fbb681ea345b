//! The wire types of the node API `scx_tt.node/v1` (JSON over HTTP/1.1, docs/cluster.md) and
//! their checks. The Go client's types are `cluster/nodeapi/nodeapi.go`; the two are kept the
//! same field for field.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The value of `api` in `GET /v1/capacity`.
pub const API: &str = "scx_tt.node/v1";

/// The longest request body read (a request is a few hundred bytes).
pub const MAX_BODY: usize = 64 * 1024;

/// The longest task name the node API takes (the control protocol's own limit is checked by
/// the engine as well).
pub const MAX_NAME: usize = 200;

/// A task's timing: the share `util` of one CPU per vCPU, in (0, 1), and the longest time
/// `latency_us` it may wait for the CPU (> 0).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// A share of one CPU per vCPU: 0 < util < 1.
    pub util: f64,
    /// The longest the task may wait for its CPU, microseconds (> 0).
    #[schemars(range(min = 1))]
    pub latency_us: u64,
}

/// The body of `POST /v1/dry-run` and `POST /v1/admit`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// `namespace/name` of the pod or VM; its tasks are named after it.
    pub name: String,
    /// One reservation per vCPU, each on a CPU of its own.
    #[schemars(range(min = 1))]
    pub vcpus: u32,
    pub timing: Timing,
    /// The threads (the control protocol's `select`, e.g. `{"qemu_name":"vm"}`); a simulated
    /// node starts a simulated QEMU process of `vcpus` vCPUs named `name` when it is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<serde_json::Value>,
}

/// The body of `POST /v1/remove`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveRequest {
    pub name: String,
}

/// `POST /v1/dry-run`'s answer; nothing changed on the node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DryRunReply {
    pub admit: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `POST /v1/admit`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdmitReply {
    pub admitted: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `POST /v1/remove`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RemoveReply {
    pub removed: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: u64,
}

/// One managed CPU of `GET /v1/capacity`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cpu {
    pub cpu: u32,
    /// `reserved_slots / frame_slots`.
    pub utilisation: f64,
    pub reserved_slots: u64,
    pub firm_slots: u64,
    pub spare_slots: u64,
    /// The tasks that may own slots there: a pod of one vCPU is `namespace/name`, vCPU `k` of
    /// a larger one `namespace/name/vcpuK`; the plan's own tasks by their names.
    pub tasks: Vec<String>,
}

/// `GET /v1/capacity`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capacity {
    pub api: String,
    pub node: String,
    pub generation: u64,
    pub slot_us: u64,
    pub frame_slots: u64,
    pub cpus: Vec<Cpu>,
}

/// One line of `GET /v1/watch?since=G` (newline-delimited JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    pub generation: u64,
    /// `admitted` or `removed`.
    pub event: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
}

/// A refused value: `{"error":{"field":..,"value":..,"rule":..}}` with HTTP 400.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FieldError {
    pub field: String,
    pub value: String,
    pub rule: String,
}

impl FieldError {
    pub fn new(field: &str, value: impl ToString, rule: &str) -> Self {
        FieldError {
            field: field.into(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }
}

/// The body of an answer other than 200: a field error (400) or a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorReply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<FieldError>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The JSON Schema (draft 2020-12) of every message, generated from these types: the API's
/// versioned contract, committed as docs/node-api.schema.json (a test keeps the two equal).
pub fn schema() -> serde_json::Value {
    let defs: serde_json::Map<String, serde_json::Value> = [
        ("Request", schemars::schema_for!(Request)),
        ("RemoveRequest", schemars::schema_for!(RemoveRequest)),
        ("DryRunReply", schemars::schema_for!(DryRunReply)),
        ("AdmitReply", schemars::schema_for!(AdmitReply)),
        ("RemoveReply", schemars::schema_for!(RemoveReply)),
        ("Capacity", schemars::schema_for!(Capacity)),
        ("Event", schemars::schema_for!(Event)),
        ("ErrorReply", schemars::schema_for!(ErrorReply)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), serde_json::to_value(v).unwrap_or_default()))
    .collect();
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": API,
        "title": "scx_tt node admission API, scx_tt.node/v1 (docs/cluster.md)",
        "endpoints": {
            "GET /v1/capacity": {"200": "Capacity"},
            "POST /v1/dry-run": {"body": "Request", "200": "DryRunReply"},
            "POST /v1/admit": {"body": "Request", "200": "AdmitReply", "409": "ErrorReply"},
            "POST /v1/remove": {"body": "RemoveRequest", "200": "RemoveReply"},
            "GET /v1/watch?since=G": {"200": "Event, one per line", "410": "ErrorReply"},
            "any": {"400": "ErrorReply (error)", "401": "ErrorReply", "422": "ErrorReply", "503": "ErrorReply"}
        },
        "$defs": defs,
    })
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// `body` as a `T`, or the field error naming where it breaks (serde's path and message).
pub fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, FieldError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { "body".into() } else { path };
        let rule = e.inner().to_string();
        // serde names the offending value between backticks: "invalid value: integer `-1`"
        let value = rule
            .split('`')
            .nth(1)
            .filter(|_| !rule.starts_with("unknown field") && !rule.starts_with("missing field"))
            .unwrap_or_default()
            .to_string();
        FieldError { field, value, rule }
    })?;
    de.end()
        .map_err(|e| FieldError::new("body", "", &format!("one JSON object: {e}")))?;
    Ok(value)
}

impl Request {
    /// The node API's own checks, before the engine's: the name, `vcpus`, the timing.
    pub fn check(&self) -> Result<(), FieldError> {
        check_name(&self.name)?;
        if self.vcpus == 0 {
            return Err(FieldError::new("vcpus", self.vcpus, "vcpus >= 1"));
        }
        let u = self.timing.util;
        if !(u > 0.0 && u < 1.0) {
            return Err(FieldError::new(
                "timing.util",
                u,
                "0 < util < 1: a share of one CPU per vCPU",
            ));
        }
        if self.timing.latency_us == 0 {
            return Err(FieldError::new("timing.latency_us", 0, "latency_us > 0"));
        }
        if let Some(s) = &self.select {
            if !s.is_object() {
                return Err(FieldError::new(
                    "select",
                    s,
                    "an object, as the control protocol's select (docs/control.md)",
                ));
            }
        }
        Ok(())
    }
}

/// `namespace/name`: two non-empty parts of printable characters, at most [`MAX_NAME`] bytes.
pub fn check_name(name: &str) -> Result<(), FieldError> {
    let ok = name.len() <= MAX_NAME
        && !name.chars().any(|c| c.is_control() || c.is_whitespace())
        && matches!(name.split_once('/'), Some((ns, n)) if !ns.is_empty() && !n.is_empty() && !n.contains('/'));
    match ok {
        true => Ok(()),
        false => Err(FieldError::new(
            "name",
            name,
            &format!(
                "namespace/name: two non-empty parts, one '/', no spaces or control \
                 characters, at most {MAX_NAME} bytes"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(body: &str) -> Result<Request, FieldError> {
        parse::<Request>(body.as_bytes()).and_then(|r| r.check().map(|_| r))
    }

    #[test]
    fn a_valid_request_parses_and_each_bad_field_is_named() {
        let ok =
            req(r#"{"name":"ns/p","vcpus":2,"timing":{"util":0.25,"latency_us":40000}}"#).unwrap();
        assert_eq!((ok.vcpus, ok.timing.latency_us), (2, 40000));
        for (body, field) in [
            (
                r#"{"name":"p","vcpus":1,"timing":{"util":0.2,"latency_us":1}}"#,
                "name",
            ),
            (
                r#"{"name":"a/b/c","vcpus":1,"timing":{"util":0.2,"latency_us":1}}"#,
                "name",
            ),
            (
                r#"{"name":"/b","vcpus":1,"timing":{"util":0.2,"latency_us":1}}"#,
                "name",
            ),
            (
                r#"{"name":"a/ b","vcpus":1,"timing":{"util":0.2,"latency_us":1}}"#,
                "name",
            ),
            (
                r#"{"name":"a/b","vcpus":0,"timing":{"util":0.2,"latency_us":1}}"#,
                "vcpus",
            ),
            (
                r#"{"name":"a/b","vcpus":-1,"timing":{"util":0.2,"latency_us":1}}"#,
                "vcpus",
            ),
            (
                r#"{"name":"a/b","vcpus":4294967296,"timing":{"util":0.2,"latency_us":1}}"#,
                "vcpus",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":1,"latency_us":1}}"#,
                "timing.util",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":0,"latency_us":1}}"#,
                "timing.util",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":-0.5,"latency_us":1}}"#,
                "timing.util",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":0.5,"latency_us":0}}"#,
                "timing.latency_us",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":0.5,"latency_us":-3}}"#,
                "timing.latency_us",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":0.5,"latency_us":18446744073709551616}}"#,
                "timing.latency_us",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":0.5,"latency_us":5,"x":1}}"#,
                "timing.x",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":0.5,"latency_us":5},"cpu":3}"#,
                "cpu",
            ),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":0.5,"latency_us":5},"select":3}"#,
                "select",
            ),
            (r#"{"name":"a/b","vcpus":1}"#, "body"),
            (
                r#"{"name":"a/b","vcpus":1,"timing":{"util":0.5,"latency_us":5}} {}"#,
                "body",
            ),
            ("[]", "body"),
            ("", "body"),
        ] {
            let e = req(body).expect_err(body);
            assert_eq!(e.field, field, "{body}: {e:?}");
            if body.contains(":-") {
                assert!(e.value.starts_with('-'), "{body}: {e:?}");
            }
            assert!(!e.rule.is_empty(), "{body}: {e:?}");
        }
    }

    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/node-api.schema.json");
        let want = serde_json::to_string_pretty(&schema()).unwrap() + "\n";
        if std::env::var_os("SCX_TT_WRITE_SCHEMA").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "{path} is not the schema of src/node_api/wire.rs: regenerate it with \
             SCX_TT_WRITE_SCHEMA=1 cargo test --release --lib node_api::wire"
        );
        // every field of a request is in it, with its rule where the schema can say it
        let req = &schema()["$defs"]["Request"];
        assert_eq!(req["properties"]["vcpus"]["minimum"], 1, "{req}");
        assert_eq!(req["additionalProperties"], false, "{req}");
    }

    #[test]
    fn a_long_name_is_refused_at_its_limit() {
        let at = format!("ns/{}", "x".repeat(MAX_NAME - 3));
        assert!(check_name(&at).is_ok());
        let over = format!("ns/{}", "x".repeat(MAX_NAME - 2));
        assert_eq!(check_name(&over).unwrap_err().field, "name");
    }
}
