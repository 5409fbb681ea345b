//! The plan format is described three times: `docs/plan.schema.json`, `docs/plan-format.md` and
//! the raw Rust types (`plan::raw`). These tests keep them in agreement, and keep
//! `docs/plan-explain.md` in agreement with `plan explain --json`.

use scx_tt::plan::{self, explain::explain, raw::FIELDS};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn read(path: &str) -> String {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// Property names of every object schema: the root as "plan", each `$defs` entry by its name.
fn schema_objects(schema: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let props = |v: &Value| -> Option<BTreeSet<String>> {
        Some(v.get("properties")?.as_object()?.keys().cloned().collect())
    };
    out.insert("plan".to_string(), props(schema).expect("root properties"));
    for (name, def) in schema["$defs"].as_object().expect("$defs") {
        if let Some(p) = props(def) {
            out.insert(name.clone(), p);
        }
    }
    out
}

fn rust_objects() -> BTreeMap<String, BTreeSet<String>> {
    FIELDS
        .iter()
        .map(|(k, f)| (k.to_string(), f.iter().map(|s| s.to_string()).collect()))
        .collect()
}

#[test]
fn schema_properties_equal_the_rust_fields() {
    let schema: Value = serde_json::from_str(&read("docs/plan.schema.json")).expect("schema JSON");
    assert_eq!(schema_objects(&schema), rust_objects());
}

#[test]
fn schema_rejects_unknown_fields_everywhere() {
    let schema: Value = serde_json::from_str(&read("docs/plan.schema.json")).expect("schema JSON");
    let mut objects = vec![("plan".to_string(), &schema)];
    for (name, def) in schema["$defs"].as_object().expect("$defs") {
        if def.get("properties").is_some() {
            objects.push((name.clone(), def));
        }
    }
    for (name, o) in objects {
        assert_eq!(
            o.get("additionalProperties"),
            Some(&Value::Bool(false)),
            "{name}"
        );
    }
}

#[test]
fn every_field_is_documented() {
    let doc = read("docs/plan-format.md");
    for (kind, fields) in FIELDS {
        for f in *fields {
            assert!(
                doc.contains(&format!("`{f}`")),
                "field {f} of {kind} is not mentioned as `{f}` in docs/plan-format.md"
            );
        }
    }
}

fn keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

#[test]
fn explain_json_fields_are_documented() {
    let doc = read("docs/plan-explain.md");
    let mut all = BTreeSet::new();
    for file in ["schedules/demo.json", "schedules/vm-example.json"] {
        let p = plan::from_file(format!("{}/{file}", env!("CARGO_MANIFEST_DIR"))).expect(file);
        let v = serde_json::to_value(explain(&p)).expect("explain serializes");
        keys(&v, &mut all);
    }
    assert!(all.contains("intervals") && all.contains("sc"));
    for k in all {
        assert!(
            doc.contains(&format!("`{k}`")) || doc.contains(&format!("\"{k}\"")),
            "explain field {k} is not documented in docs/plan-explain.md"
        );
    }
}

/// The schema's bounds that come from the BPF scheduler (`plan::limits`) are its constants.
#[test]
fn schema_bounds_are_the_bpf_limits() {
    use scx_tt::abi::{MAX_CPUS, MAX_PLAN_THREADS, MAX_TASKS};
    let schema: Value = serde_json::from_str(&read("docs/plan.schema.json")).expect("schema JSON");
    let d = &schema["$defs"];
    assert_eq!(schema["properties"]["tasks"]["maxItems"], MAX_TASKS);
    assert_eq!(d["cpu_list"]["items"]["maximum"], MAX_CPUS - 1);
    assert_eq!(d["task"]["properties"]["cpu"]["maximum"], MAX_CPUS - 1);
    assert_eq!(d["cpu_table"]["properties"]["cpu"]["maximum"], MAX_CPUS - 1);
    assert_eq!(
        d["task"]["properties"]["tids"]["maxItems"],
        MAX_PLAN_THREADS
    );
}
