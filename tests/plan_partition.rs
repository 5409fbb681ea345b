//! Partitioning of `tt` tasks without `cpu`: worst-fit decreasing by utilization
//! (docs/plan-format.md, "Partitioning"), worked by hand.

use scx_tt::plan;
use serde_json::json;

fn cpus_of(plan_json: serde_json::Value) -> Vec<(String, Option<u32>)> {
    let p = plan::from_str(&plan_json.to_string()).unwrap_or_else(|e| panic!("{e}"));
    p.tasks.into_iter().map(|t| (t.name, t.cpu)).collect()
}

fn tt(name: &str, period: u64, wcet: u64) -> serde_json::Value {
    json!({ "name": name, "comm": name, "class": "tt", "period": period, "wcet": wcet })
}

#[test]
fn worst_fit_decreasing_balances_demand_after_pinned_tasks() {
    // Frame lcm(10, 20, 5, 10) = 20. Demand per frame: a 2·5 = 10, b 1·8 = 8, c 4·1 = 4,
    // d (pinned to 2) 2·1 = 2. Start: cpu1 0, cpu2 2.
    // a (10) -> cpu1 (0 < 2): cpu1 10. b (8) -> cpu2 (2 < 10): cpu2 10.
    // c (4) -> tie 10 = 10, earlier in cpus.managed wins: cpu1.
    let mut d = tt("d", 10, 1);
    d["cpu"] = json!(2);
    let got = cpus_of(json!({
        "slot_us": 1000,
        "cpus": { "managed": [1, 2], "housekeeping": [0] },
        "tasks": [tt("a", 10, 5), tt("b", 20, 8), tt("c", 5, 1), d,
                  { "name": "e", "comm": "e", "class": "be" }]
    }));
    let want = [
        ("a", Some(1)),
        ("b", Some(2)),
        ("c", Some(1)),
        ("d", Some(2)),
        ("e", None),
    ];
    let want: Vec<(String, Option<u32>)> = want.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    assert_eq!(got, want);
}

#[test]
fn equal_demand_goes_in_task_order_and_follows_managed_order() {
    // Three tasks of demand 2 on managed [3, 1] (order as written): x -> 3, y -> 1, z -> 3.
    let got = cpus_of(json!({
        "slot_us": 1000,
        "cpus": { "managed": [3, 1], "housekeeping": [0] },
        "tasks": [tt("x", 4, 2), tt("y", 4, 2), tt("z", 4, 2)]
    }));
    let cpus: Vec<Option<u32>> = got.into_iter().map(|x| x.1).collect();
    assert_eq!(cpus, vec![Some(3), Some(1), Some(3)]);
}
