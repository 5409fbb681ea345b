//! The plan format is described three times: `docs/plan.schema.json`, `docs/plan-format.md` and
//! the raw Rust types (`plan::raw`). These tests keep them in agreement, and keep
//! `docs/plan-explain.md` in agreement with `plan explain --json`.

mod common;

use common::read_repo;
use scx_tt::plan::{self, explain::explain, raw::FIELDS};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

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
    let schema: Value =
        serde_json::from_str(&read_repo("docs/plan.schema.json")).expect("schema JSON");
    assert_eq!(schema_objects(&schema), rust_objects());
}

#[test]
fn schema_rejects_unknown_fields_everywhere() {
    let schema: Value =
        serde_json::from_str(&read_repo("docs/plan.schema.json")).expect("schema JSON");
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
    let doc = read_repo("docs/plan-format.md");
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
    let doc = read_repo("docs/plan-explain.md");
    let mut all = BTreeSet::new();
    for file in [
        "schedules/demo.json",
        "schedules/vm-example.json",
        "schedules/interface-example.json",
    ] {
        let p = plan::from_file(format!("{}/{file}", env!("CARGO_MANIFEST_DIR"))).expect(file);
        let v = serde_json::to_value(explain(&p)).expect("explain serializes");
        keys(&v, &mut all);
    }
    assert!(all.contains("intervals") && all.contains("sc"));
    assert!(all.contains("server") && all.contains("workload") && all.contains("overhead"));
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
    let schema: Value =
        serde_json::from_str(&read_repo("docs/plan.schema.json")).expect("schema JSON");
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

/// The subset of JSON Schema (2020-12) that docs/plan.schema.json uses, enough to tell whether
/// a document is accepted: `$ref` (local), `type`, `enum`, `const`, number and length bounds,
/// `pattern` (a `^` prefix only), `items`, `minItems`/`maxItems`, `uniqueItems`, `properties`,
/// `additionalProperties: false`, `required`, `oneOf`, `anyOf`, `not`, `if`/`then`/`else`.
/// Errors are JSON pointers with the keyword that failed.
fn schema_errors(root: &Value, schema: &Value, v: &Value, at: &str, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        return;
    };
    let mut fail = |what: &str| out.push(format!("{at}: {what}"));
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let def = r.strip_prefix("#/$defs/").expect("local $ref");
        schema_errors(root, &root["$defs"][def], v, at, out);
        return;
    }
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "integer" => v.is_u64() || v.is_i64(),
            "number" => v.is_number(),
            other => panic!("type {other} not supported"),
        };
        if !ok {
            fail(&format!("type {t}"));
            return;
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            fail("enum");
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            fail("const");
        }
    }
    if let Some(x) = v.as_f64() {
        if num("minimum").is_some_and(|m| x < m) {
            fail("minimum");
        }
        if num("maximum").is_some_and(|m| x > m) {
            fail("maximum");
        }
        if num("exclusiveMinimum").is_some_and(|m| x <= m) {
            fail("exclusiveMinimum");
        }
        if num("exclusiveMaximum").is_some_and(|m| x >= m) {
            fail("exclusiveMaximum");
        }
    }
    if let Some(x) = v.as_str() {
        let len = x.chars().count() as f64;
        if num("minLength").is_some_and(|m| len < m) {
            fail("minLength");
        }
        if num("maxLength").is_some_and(|m| len > m) {
            fail("maxLength");
        }
        if let Some(p) = s.get("pattern").and_then(Value::as_str) {
            let prefix = p.strip_prefix('^').expect("pattern ^prefix");
            if !x.starts_with(prefix) {
                fail("pattern");
            }
        }
    }
    if let Some(a) = v.as_array() {
        let len = a.len() as f64;
        if num("minItems").is_some_and(|m| len < m) {
            fail("minItems");
        }
        if num("maxItems").is_some_and(|m| len > m) {
            fail("maxItems");
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true))
            && (1..a.len()).any(|i| a[..i].contains(&a[i]))
        {
            fail("uniqueItems");
        }
        if let Some(items) = s.get("items") {
            for (i, x) in a.iter().enumerate() {
                schema_errors(root, items, x, &format!("{at}/{i}"), out);
            }
        }
    }
    if let Some(o) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for (k, x) in o {
            match props.and_then(|p| p.get(k)) {
                Some(p) => schema_errors(root, p, x, &format!("{at}/{k}"), out),
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    out.push(format!("{at}/{k}: additionalProperties"))
                }
                None => {}
            }
        }
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !o.contains_key(r.as_str().expect("required names")) {
                out.push(format!("{at}: required {r}"));
            }
        }
    }
    let accepts = |sub: &Value| {
        let mut e = Vec::new();
        schema_errors(root, sub, v, at, &mut e);
        e.is_empty()
    };
    if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
        let n = one.iter().filter(|x| accepts(x)).count();
        if n != 1 {
            out.push(format!("{at}: oneOf matched {n}"));
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        if !any.iter().any(accepts) {
            out.push(format!("{at}: anyOf"));
        }
    }
    if let Some(not) = s.get("not") {
        if accepts(not) {
            out.push(format!("{at}: not"));
        }
    }
    if let Some(cond) = s.get("if") {
        let branch = if accepts(cond) { "then" } else { "else" };
        if let Some(b) = s.get(branch) {
            schema_errors(root, b, v, at, out);
        }
    }
}

fn schema_verdict(doc: &Value) -> Vec<String> {
    let schema: Value =
        serde_json::from_str(&read_repo("docs/plan.schema.json")).expect("schema JSON");
    let mut out = Vec::new();
    schema_errors(&schema, &schema, doc, "", &mut out);
    out
}

#[test]
fn the_schema_accepts_every_plan_of_schedules() {
    let dir = format!("{}/schedules", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("schedules/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
            assert_eq!(
                schema_verdict(&doc),
                Vec::<String>::new(),
                "{}",
                path.display()
            );
            n += 1;
        }
    }
    assert!(n >= 4, "{n}");
}

/// Plans the schema must accept or refuse, each next to what `plan check` says: the schema
/// refuses what it can see (field shapes, one timing model); cross-field rules are plan check's.
#[test]
fn schema_cases_for_interface_timing_and_server() {
    use serde_json::json;
    let base = || {
        json!({
            "slot_us": 1000,
            "cpus": { "managed": [1], "housekeeping": [0] },
            "server": "crps",
            "tasks": [
                { "name": "comp", "pid": 20, "class": "tt", "cpu": 1, "start": "table",
                  "completion": "yield",
                  "interface": { "scheduler": "edf", "supply": "general", "tasks": [
                      { "period": 5, "wcet": 1, "thread": "a" },
                      { "period": 10, "wcet": 2, "tid": 7 } ] } },
                { "name": "vm", "qemu": { "name": "g" }, "class": "tt",
                  "interface": { "scheduler": "rm", "tasks": [ { "period": 4, "wcet": 1 } ] } },
                { "name": "b", "comm": "b", "class": "be" }
            ]
        })
    };
    type Edit = fn(&mut Value);
    let cases: &[(&str, Edit, bool)] = &[
        ("every new field", |_| {}, true),
        (
            "supply aligned",
            |v| v["tasks"][1]["interface"]["supply"] = json!("aligned"),
            true,
        ),
        ("server ptps", |v| v["server"] = json!("ptps"), true),
        ("server wcps", |v| v["server"] = json!("wcps"), true),
        ("unknown server", |v| v["server"] = json!("edf"), false),
        (
            "interface and period",
            |v| v["tasks"][0]["period"] = json!(10),
            false,
        ),
        (
            "interface and jobs",
            |v| v["tasks"][0]["jobs"] = json!([{ "release": 0, "deadline": 5, "wcet": 1 }]),
            false,
        ),
        (
            "interface on be",
            |v| {
                v["tasks"][2]["interface"] =
                    json!({ "scheduler": "rm", "tasks": [{ "period": 4, "wcet": 1 }] })
            },
            false,
        ),
        (
            "unknown scheduler",
            |v| v["tasks"][0]["interface"]["scheduler"] = json!("fifo"),
            false,
        ),
        (
            "no scheduler",
            |v| {
                v["tasks"][0]["interface"]
                    .as_object_mut()
                    .unwrap()
                    .remove("scheduler");
            },
            false,
        ),
        (
            "unknown supply",
            |v| v["tasks"][0]["interface"]["supply"] = json!("late"),
            false,
        ),
        (
            "empty workload",
            |v| v["tasks"][0]["interface"]["tasks"] = json!([]),
            false,
        ),
        (
            "wcet 0",
            |v| v["tasks"][0]["interface"]["tasks"][0]["wcet"] = json!(0),
            false,
        ),
        (
            "period 0",
            |v| v["tasks"][0]["interface"]["tasks"][0]["period"] = json!(0),
            false,
        ),
        (
            "thread and tid",
            |v| v["tasks"][0]["interface"]["tasks"][0]["tid"] = json!(3),
            false,
        ),
        (
            "long thread",
            |v| v["tasks"][0]["interface"]["tasks"][0]["thread"] = json!("sixteen-chars-xx"),
            false,
        ),
        (
            "unknown workload field",
            |v| v["tasks"][0]["interface"]["tasks"][0]["prio"] = json!(1),
            false,
        ),
        (
            "unknown interface field",
            |v| v["tasks"][0]["interface"]["quantum"] = json!(1),
            false,
        ),
        (
            "an interface budget",
            |v| v["tasks"][0]["interface"]["budget"] = json!(1),
            true,
        ),
        (
            "an interface budget of 0",
            |v| v["tasks"][0]["interface"]["budget"] = json!(0),
            false,
        ),
    ];
    for (name, edit, accepted) in cases {
        let mut doc = base();
        edit(&mut doc);
        let errors = schema_verdict(&doc);
        assert_eq!(
            errors.is_empty(),
            *accepted,
            "{name}: schema says {errors:?}"
        );
        let checked = plan::from_str(&doc.to_string());
        assert_eq!(
            checked.is_ok(),
            *accepted,
            "{name}: plan check says {checked:?}"
        );
    }
}
