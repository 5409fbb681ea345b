//! Property tests of whole plans (`plan::from_str`) over random periodic task sets:
//!
//! - a valid plan's tables give every job exactly its wcet inside its window, on the task's CPU;
//! - a plan rejected as infeasible really is: the demand-bound oracle agrees for the CPU named;
//! - the derived table, written back as an explicit `table`, validates to the same table, and
//!   dropping one of its ranges is rejected naming the task that lost slots.

use proptest::prelude::*;
use scx_tt::plan::{self, Class, Plan, Rule};
use serde_json::{json, Value};

const PERIODS: [u64; 8] = [2, 3, 4, 5, 6, 8, 10, 12];

#[derive(Clone, Debug)]
struct Spec {
    period: u64,
    wcet: u64,
    offset: u64,
    deadline: u64,
    cpu: Option<u32>,
}

fn spec(pinned: bool) -> impl Strategy<Value = Spec> {
    (0..PERIODS.len(), 0u64..100, 0u64..100, 0u64..100, 1u32..=3).prop_map(
        move |(p, w, o, d, cpu)| {
            let period = PERIODS[p];
            let deadline = 1 + d % period;
            let offset = o % (period - deadline + 1);
            Spec {
                period,
                wcet: 1 + w % deadline,
                offset,
                deadline,
                cpu: (pinned || cpu == 3).then_some(cpu),
            }
        },
    )
}

/// A plan text of random tasks on managed CPUs 1..=3 and whether every task is pinned.
fn plan_json() -> impl Strategy<Value = (Value, bool)> {
    any::<bool>().prop_flat_map(|pinned| {
        proptest::collection::vec(spec(pinned), 1..8).prop_map(move |specs| {
            let tasks: Vec<Value> = specs
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let mut t = json!({
                        "name": format!("t{i}"), "pid": 100 + i, "class": "tt",
                        "period": s.period, "wcet": s.wcet, "offset": s.offset,
                        "deadline": s.deadline
                    });
                    if let Some(c) = s.cpu {
                        t["cpu"] = json!(c);
                    }
                    t
                })
                .collect();
            let plan = json!({
                "slot_us": 1000,
                "cpus": { "managed": [1, 2, 3], "housekeeping": [0] },
                "tasks": tasks
            });
            (plan, pinned)
        })
    })
}

/// Demand-bound oracle (see tests/plan_offline_props.rs).
fn feasible(jobs: &[(u64, u64, u64)], frame: u64) -> bool {
    (0..=frame).all(|t1| {
        (t1..=frame).all(|t2| {
            let demand: u64 = jobs
                .iter()
                .filter(|j| t1 <= j.0 && j.1 <= t2)
                .map(|j| j.2)
                .sum();
            demand <= t2 - t1
        })
    })
}

fn check_tables(p: &Plan) -> Result<(), TestCaseError> {
    for c in &p.cpus {
        let mut owner = vec![None; p.frame_slots as usize];
        for r in &c.table {
            for s in r.start..r.end {
                prop_assert!(owner[s as usize].is_none(), "slot {} twice", s);
                owner[s as usize] = Some(r.job);
            }
        }
        for (j, job) in c.jobs.iter().enumerate() {
            prop_assert_eq!(p.tasks[job.task].cpu, Some(c.cpu));
            let got = (job.release..job.deadline)
                .filter(|&s| owner[s as usize] == Some(j))
                .count() as u64;
            prop_assert_eq!(got, job.wcet);
            prop_assert_eq!(
                owner.iter().filter(|&&o| o == Some(j)).count() as u64,
                job.wcet
            );
        }
    }
    Ok(())
}

/// The plan's own table as an explicit `table`, every task pinned where it was placed.
fn with_explicit_table(mut v: Value, p: &Plan) -> Value {
    for (i, t) in p.tasks.iter().enumerate() {
        v["tasks"][i]["cpu"] = json!(t.cpu);
    }
    v["table"] = Value::Array(
        p.cpus
            .iter()
            .map(|c| {
                let ranges: Vec<Value> = c
                    .table
                    .iter()
                    .map(|r| {
                        json!({ "start": r.start, "end": r.end,
                                "task": p.tasks[c.jobs[r.job].task].name })
                    })
                    .collect();
                json!({ "cpu": c.cpu, "ranges": ranges })
            })
            .collect(),
    );
    v
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 500,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn valid_plans_give_every_job_its_wcet_in_window((v, pinned) in plan_json()) {
        match plan::from_str(&v.to_string()) {
            Ok(p) => {
                prop_assert!(p.tasks.iter().all(|t| t.class == Class::Tt && t.cpu.is_some()));
                check_tables(&p)?;
            }
            Err(errs) => {
                for e in errs.iter() {
                    let Rule::Infeasible { cpu, .. } = e.rule else {
                        return Err(TestCaseError::fail(format!("unexpected error {e}")));
                    };
                    if pinned {
                        // Every task is pinned: rebuild the CPU's jobs and ask the oracle.
                        let frame = v["tasks"].as_array().unwrap().iter()
                            .map(|t| t["period"].as_u64().unwrap())
                            .fold(1, |a, b| a / gcd(a, b) * b);
                        let jobs: Vec<(u64, u64, u64)> = v["tasks"].as_array().unwrap().iter()
                            .filter(|t| t["cpu"] == json!(cpu))
                            .flat_map(|t| {
                                let (p, w, o, d) = (t["period"].as_u64().unwrap(),
                                    t["wcet"].as_u64().unwrap(), t["offset"].as_u64().unwrap(),
                                    t["deadline"].as_u64().unwrap());
                                (0..frame / p).map(move |k| (k * p + o, k * p + o + d, w))
                            })
                            .collect();
                        prop_assert!(!feasible(&jobs, frame), "cpu {} is feasible: {}", cpu, e);
                    }
                }
            }
        }
    }

    #[test]
    fn derived_table_round_trips_as_explicit_table((v, _) in plan_json()) {
        let Ok(p) = plan::from_str(&v.to_string()) else { return Ok(()) };
        let explicit = with_explicit_table(v, &p);
        let q = plan::from_str(&explicit.to_string());
        prop_assert!(q.is_ok(), "{}", q.err().map(|e| e.to_string()).unwrap_or_default());
        if let Ok(q) = q {
            for (a, b) in p.cpus.iter().zip(&q.cpus) {
                prop_assert_eq!(&a.table, &b.table);
                prop_assert_eq!(&a.intervals, &b.intervals);
            }
        }
        // Dropping one range takes slots from a job: rejected, naming that job's task.
        if let Some(c) = p.cpus.iter().position(|c| !c.table.is_empty()) {
            let mut broken = explicit.clone();
            let removed = broken["table"][c]["ranges"].as_array_mut().unwrap().remove(0);
            let errs = plan::from_str(&broken.to_string()).expect_err("a job lost slots");
            let task = p.tasks.iter().position(|t| t.name == removed["task"]).unwrap();
            let path = format!("tasks[{task}]");
            prop_assert!(
                errs.iter().any(|e| e.path == path && matches!(e.rule, Rule::TableWcet { .. })),
                "{}", errs
            );
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
