//! `interface` timing of a `tt` task (issue 16 item 2), local thread scheduling and the plan's
//! `server` design (docs/plan-format.md, "`interface` timing", "Local thread scheduling",
//! "`server`"): a task with an interface is exactly the periodic task Γ = (Π, Θ) that
//! `planner::interface::optimal_interface` gives for its workload; every refusal names its path.

use scx_tt::plan::explain::{explain, render_text};
use scx_tt::plan::{
    self, LocalSched, LocalThread, Plan, PlanError, Rule, ServerDesign, Start, ThreadSelector,
};
use scx_tt::planner::interface::{
    optimal_interface, schedulable, Resource, Scheduler, Supply, Task as WTask, Workload,
};
use serde_json::{json, Value};

/// One managed CPU 1; task 0 a periodic `ctrl` (10, 2) pinned to it, task 1 `extra`.
fn plan_with(extra: Value) -> Value {
    json!({
        "slot_us": 1000,
        "cpus": { "managed": [1], "housekeeping": [0] },
        "tasks": [
            { "name": "ctrl", "pid": 10, "class": "tt", "cpu": 1, "period": 10, "wcet": 2 },
            extra
        ]
    })
}

/// A tt task `comp` (pid 20) on CPU 1 with `interface`.
fn component(interface: Value) -> Value {
    json!({ "name": "comp", "pid": 20, "class": "tt", "cpu": 1, "interface": interface })
}

fn load(v: &Value) -> Plan {
    plan::from_str(&v.to_string()).unwrap_or_else(|e| panic!("{e}\n{v}"))
}

fn errors(v: &Value) -> Vec<PlanError> {
    match plan::from_str(&v.to_string()) {
        Ok(_) => panic!("valid: {v}"),
        Err(e) => e.0,
    }
}

/// The error at `path` matching `rule`, whose message is exactly `message`.
fn expect_error(v: &Value, path: &str, message: &str) -> PlanError {
    let errs = errors(v);
    let hit = errs.iter().find(|e| e.path == path).unwrap_or_else(|| {
        panic!(
            "no error at {path}; got {:#?}",
            errs.iter().map(|e| e.to_string()).collect::<Vec<_>>()
        )
    });
    assert_eq!(hit.to_string(), message);
    hit.clone()
}

fn workload(tasks: &[(u64, u64)]) -> Vec<WTask> {
    tasks
        .iter()
        .map(|&(period, wcet)| WTask { period, wcet })
        .collect()
}

fn interface_json(scheduler: &str, supply: Option<&str>, tasks: &[(u64, u64)]) -> Value {
    let mut i = json!({
        "scheduler": scheduler,
        "tasks": tasks.iter().map(|&(p, e)| json!({ "period": p, "wcet": e })).collect::<Vec<_>>(),
    });
    if let Some(s) = supply {
        i["supply"] = json!(s);
    }
    i
}

/// The jobs of task `task` on the plan's only CPU: (release, deadline, wcet).
fn jobs_of(p: &Plan, task: usize) -> Vec<(u64, u64, u64)> {
    p.cpus[0]
        .jobs
        .iter()
        .filter(|j| j.task == task)
        .map(|j| (j.release, j.deadline, j.wcet))
        .collect()
}

#[test]
fn an_interface_task_is_the_periodic_task_of_the_librarys_optimal_interface() {
    // (scheduler, supply, workload)
    type Case = (&'static str, Option<&'static str>, &'static [(u64, u64)]);
    let cases: &[Case] = &[
        ("rm", None, &[(5, 1), (10, 2), (20, 3)]),
        ("edf", None, &[(5, 1), (10, 2), (20, 3)]),
        ("rm", Some("aligned"), &[(5, 1), (10, 2), (20, 3)]),
        ("edf", Some("general"), &[(4, 1), (6, 1)]),
        ("rm", None, &[(7, 1), (12, 2)]),
        ("edf", None, &[(3, 1)]),
        ("rm", Some("aligned"), &[(6, 1), (12, 2), (24, 3)]),
    ];
    for &(scheduler, supply, tasks) in cases {
        let w = Workload::new(&workload(tasks)).expect("workload");
        let want = optimal_interface(
            &w,
            scheduler.parse::<Scheduler>().unwrap(),
            supply.map_or(Supply::General, |s| s.parse::<Supply>().unwrap()),
        )
        .expect("interface");
        let Resource { period, budget } = want.resource;
        let label = format!("{scheduler} {supply:?} {tasks:?}: Γ = ({period}, {budget})");

        let p = load(&plan_with(component(interface_json(
            scheduler, supply, tasks,
        ))));
        let got = p.tasks[1].interface.as_ref().expect("interface kept");
        assert_eq!(got.result, want, "{label}");
        assert_eq!(got.workload.len(), tasks.len(), "{label}");
        // every job of the frame is Γ's: released at kΠ, due at (k+1)Π, Θ slots
        assert_eq!(p.frame_slots % period, 0, "{label}");
        let expected: Vec<_> = (0..p.frame_slots / period)
            .map(|k| (k * period, (k + 1) * period, budget))
            .collect();
        assert_eq!(jobs_of(&p, 1), expected, "{label}");
        // and the plan is the one written with period Π, wcet Θ instead
        let same = load(&plan_with(json!({
            "name": "comp", "pid": 20, "class": "tt", "cpu": 1, "period": period, "wcet": budget
        })));
        assert_eq!(p.frame_slots, same.frame_slots, "{label}");
        assert_eq!(p.cpus[0].jobs, same.cpus[0].jobs, "{label}");
        assert_eq!(p.cpus[0].table, same.cpus[0].table, "{label}");
        assert_eq!(p.cpus[0].intervals, same.cpus[0].intervals, "{label}");
        assert_eq!(same.tasks[1].interface, None);
        // no thread names: FIFO inside the task
        assert_eq!(p.tasks[1].local, None, "{label}");
    }
}

/// The hand-worked example of docs/plan-format.md ("`interface` timing").
#[test]
fn hand_worked_example_rm_5_1_10_2_20_3_is_gamma_3_2() {
    // W = {(5, 1), (10, 2), (20, 3)} under RM, general supply.
    // U_W = 1/5 + 2/10 + 3/20 = 4/20 + 4/20 + 3/20 = 11/20 = 0.55.
    // Γ = (3, 2): d = Π − Θ = 1, sbf(t) = 2y + max(0, t − 2 − 3y) with y = ⌊(t − 1)/3⌋:
    //   sbf(5) = 2·1 + max(0, 5 − 2 − 3) = 2, sbf(10) = 2·3 + max(0, 10 − 2 − 9) = 6,
    //   sbf(20) = 2·6 + max(0, 20 − 2 − 18) = 12.
    // RM test, rbf_i(t) = Σ_{k ≤ i} ⌈t/p_k⌉·e_k, one t per task up to its period:
    //   (5, 1):  rbf(5)  = 1                   ≤ sbf(5)  = 2
    //   (10, 2): rbf(10) = 2·1 + 1·2 = 4       ≤ sbf(10) = 6
    //   (20, 3): rbf(20) = 4·1 + 2·2 + 1·3 = 11 ≤ sbf(20) = 12
    // Bandwidth 2/3, overhead 2/3 − 11/20 = 40/60 − 33/60 = 7/60.
    // (3, 1) is below U_W (1/3 < 11/20); (5, 3), of bandwidth 3/5 < 2/3, fails for (20, 3):
    //   d = 2, sbf(t) = 3y + max(0, t − 4 − 5y), y = ⌊(t − 2)/5⌋: sbf(5, 10, 15, 20) =
    //   (1, 4, 7, 10) against rbf = (1+2+3, 2+2+3, 3+4+3, 4+4+3) = (6, 7, 10, 11).
    let w = Workload::new(&workload(&[(5, 1), (10, 2), (20, 3)])).unwrap();
    let test = |period, budget| {
        schedulable(
            &w,
            Scheduler::Rm,
            Supply::General,
            Resource { period, budget },
        )
        .unwrap()
    };
    assert!(test(3, 2));
    assert!(!test(3, 1));
    assert!(!test(5, 3));

    let v = plan_with(component(json!({
        "scheduler": "rm",
        "tasks": [ { "period": 5, "wcet": 1 }, { "period": 10, "wcet": 2 }, { "period": 20, "wcet": 3 } ]
    })));
    let p = load(&v);
    let i = &p.tasks[1].interface.as_ref().unwrap().result;
    assert_eq!(
        i.resource,
        Resource {
            period: 3,
            budget: 2
        }
    );
    assert_eq!((i.bandwidth.num, i.bandwidth.den), (2, 3));
    let u = i.utilization_exact.unwrap();
    assert_eq!((u.num, u.den), (11, 20));
    assert!((i.overhead - 7.0 / 60.0).abs() < 1e-12, "{}", i.overhead);
    // frame lcm(10, 3) = 30: 10 jobs of comp, [3k, 3k + 3) with 2 slots, and 3 of ctrl
    assert_eq!(p.frame_slots, 30);
    let comp = jobs_of(&p, 1);
    assert_eq!(comp.len(), 10);
    assert!(comp
        .iter()
        .enumerate()
        .all(|(k, &j)| j == (3 * k as u64, 3 * k as u64 + 3, 2)));
    // the EDF table gives each of them exactly 2 slots of its window: 20 + 6 = 26 busy slots
    let c = &p.cpus[0];
    for (id, job) in c.jobs.iter().enumerate() {
        let slots: u64 = c
            .table
            .iter()
            .filter(|r| r.job == id)
            .map(|r| {
                assert!(job.release <= r.start && r.end <= job.deadline);
                r.end - r.start
            })
            .sum();
        assert_eq!(slots, job.wcet);
    }
    let busy: u64 = c.table.iter().map(|r| r.end - r.start).sum();
    assert_eq!(busy, 26);
}

#[test]
fn named_threads_fill_local_scheduling_in_plan_order() {
    let v = plan_with(component(json!({
        "scheduler": "edf",
        "tasks": [
            { "period": 10, "wcet": 2, "thread": "rx" },
            { "period": 5, "wcet": 1, "tid": 4242 },
            { "period": 20, "wcet": 3, "thread": "tx-worker-00001" }
        ]
    })));
    let p = load(&v);
    assert_eq!(
        p.tasks[1].local,
        Some(LocalSched {
            scheduler: Scheduler::Edf,
            threads: vec![
                LocalThread {
                    thread: ThreadSelector::Comm("rx".into()),
                    period: 10,
                    wcet: 2
                },
                LocalThread {
                    thread: ThreadSelector::Tid(4242),
                    period: 5,
                    wcet: 1
                },
                LocalThread {
                    thread: ThreadSelector::Comm("tx-worker-00001".into()),
                    period: 20,
                    wcet: 3
                },
            ],
        })
    );
    // other tasks have none
    assert_eq!(p.tasks[0].local, None);
    // a tids selector: the workload's tids among them
    let v = plan_with(
        json!({ "name": "comp", "tids": [7, 8], "class": "tt", "cpu": 1,
        "interface": { "scheduler": "rm", "tasks": [
            { "period": 4, "wcet": 1, "tid": 8 }, { "period": 8, "wcet": 1, "tid": 7 } ] } }),
    );
    let local = load(&v).tasks[1].local.clone().expect("local");
    assert_eq!(local.scheduler, Scheduler::Rm);
    assert_eq!(local.threads[0].thread, ThreadSelector::Tid(8));
}

#[test]
fn a_vm_interface_names_no_threads_and_has_no_local_scheduling() {
    let v = plan_with(
        json!({ "name": "vm", "qemu": { "name": "guest" }, "class": "tt", "cpu": 1,
        "interface": { "scheduler": "rm", "tasks": [ { "period": 5, "wcet": 1 }, { "period": 10, "wcet": 2 } ] } }),
    );
    let p = load(&v);
    assert!(p.tasks[1].interface.is_some());
    assert_eq!(p.tasks[1].local, None);
    let v = plan_with(
        json!({ "name": "vm", "qemu": { "pid": 77 }, "class": "tt", "cpu": 1,
        "interface": { "scheduler": "rm", "tasks": [
            { "period": 5, "wcet": 1, "thread": "rt-app" }, { "period": 10, "wcet": 2, "tid": 9 } ] } }),
    );
    let msg = "names a thread of a qemu task: a VM's guest orders its tasks with its own \
               scheduler, so a VM's workload names no threads (remove thread and tid)";
    expect_error(
        &v,
        "tasks[1].interface.tasks[0].thread",
        &format!("tasks[1].interface.tasks[0].thread = \"rt-app\": {msg}"),
    );
    expect_error(
        &v,
        "tasks[1].interface.tasks[1].tid",
        &format!("tasks[1].interface.tasks[1].tid = 9: {msg}"),
    );
    // the mix rule is not added on top for a VM
    assert_eq!(errors(&v).len(), 2);
}

#[test]
fn an_interface_task_may_be_admitted_later_as_its_gamma() {
    let mut task = component(interface_json("rm", None, &[(5, 1), (10, 2), (20, 3)]));
    task["start"] = json!("admitted");
    let p = load(&plan_with(task));
    assert_eq!(p.tasks[1].start, Start::Admitted { period: 3, wcet: 2 });
    assert!(jobs_of(&p, 1).is_empty());
}

#[test]
fn field_errors_name_the_path_the_value_and_the_rule_and_are_all_collected() {
    let v = plan_with(component(json!({
        "scheduler": "rm",
        "tasks": [
            { "period": 0, "wcet": 1 },
            { "period": 5, "wcet": 7 },
            { "period": 5, "wcet": 0 },
            { "period": 4294967296u64, "wcet": 1 },
            { "wcet": 1 },
            { "period": 5 }
        ]
    })));
    let p = "tasks[1].interface.tasks";
    expect_error(
        &v,
        &format!("{p}[0].period"),
        &format!("{p}[0].period = 0: must be at least 1"),
    );
    let e = expect_error(
        &v,
        &format!("{p}[1].wcet"),
        &format!("{p}[1].wcet = 7: exceeds the period 5 (implicit deadlines: 1 ≤ wcet ≤ period)"),
    );
    assert_eq!(e.rule, Rule::WcetExceedsPeriod { period: 5 });
    expect_error(
        &v,
        &format!("{p}[2].wcet"),
        &format!("{p}[2].wcet = 0: must be at least 1"),
    );
    expect_error(
        &v,
        &format!("{p}[3].period"),
        &format!(
            "{p}[3].period = 4294967296: is above the cap of 4294967295 slots (the planner's \
             job-size cap)"
        ),
    );
    expect_error(
        &v,
        &format!("{p}[4].period"),
        &format!("{p}[4].period: is required"),
    );
    expect_error(
        &v,
        &format!("{p}[5].wcet"),
        &format!("{p}[5].wcet: is required"),
    );
    assert_eq!(errors(&v).len(), 6, "{:#?}", errors(&v));
    // the same wording as `plan interface` (interface.rs's InterfaceError)
    let lib = Workload::new(&workload(&[(5, 7)])).unwrap_err().to_string();
    assert!(
        lib.ends_with("exceeds the period 5 (implicit deadlines: 1 ≤ wcet ≤ period)"),
        "{lib}"
    );
}

#[test]
fn scheduler_supply_and_task_list_errors() {
    let t = json!([{ "period": 5, "wcet": 1 }]);
    let v = plan_with(component(
        json!({ "scheduler": "fifo", "supply": "late", "tasks": t }),
    ));
    expect_error(
        &v,
        "tasks[1].interface.scheduler",
        "tasks[1].interface.scheduler = \"fifo\": must be \"rm\" or \"edf\" (the component's own scheduler)",
    );
    expect_error(
        &v,
        "tasks[1].interface.supply",
        "tasks[1].interface.supply = \"late\": must be \"general\" or \"aligned\"",
    );
    let v = plan_with(component(json!({ "tasks": t })));
    expect_error(
        &v,
        "tasks[1].interface.scheduler",
        "tasks[1].interface.scheduler: is required",
    );
    let v = plan_with(component(json!({ "scheduler": "rm", "tasks": [] })));
    expect_error(
        &v,
        "tasks[1].interface.tasks",
        "tasks[1].interface.tasks = []: must not be empty",
    );
    let v = plan_with(component(json!({ "scheduler": "rm" })));
    expect_error(
        &v,
        "tasks[1].interface.tasks",
        "tasks[1].interface.tasks: is required",
    );
    // too many tasks: interface.rs's cap (256)
    let many: Vec<Value> = (0..257)
        .map(|_| json!({ "period": 1000, "wcet": 1 }))
        .collect();
    let v = plan_with(component(json!({ "scheduler": "edf", "tasks": many })));
    let e = expect_error(
        &v,
        "tasks[1].interface.tasks",
        "tasks[1].interface.tasks: has 257 tasks, above the interface search's cap of 256",
    );
    assert_eq!(
        e.rule,
        Rule::InterfaceTooManyTasks {
            count: 257,
            limit: scx_tt::planner::interface::MAX_TASKS
        }
    );
}

#[test]
fn a_workload_without_an_interface_is_one_error_with_plan_interfaces_message() {
    // U_W = 1/2 + 2/3 = 7/6 > 1
    let v = plan_with(component(interface_json("edf", None, &[(2, 1), (3, 2)])));
    expect_error(
        &v,
        "tasks[1].interface",
        "tasks[1].interface: tasks: utilization U_W = 7/6 > 1: no resource of one CPU can serve it",
    );
    // {(4, 2), (6, 3)}: U_W = 1, but RM misses on a dedicated CPU (docs/plan-format.md)
    let v = plan_with(component(interface_json("rm", None, &[(4, 2), (6, 3)])));
    let e = expect_error(
        &v,
        "tasks[1].interface",
        "tasks[1].interface: tasks[1] (period 6, wcet 3): not RM-schedulable even on a dedicated \
         CPU (its request bound exceeds t at every scheduling point up to 6): no interface exists",
    );
    // exactly interface.rs's error
    let w = Workload::new(&workload(&[(4, 2), (6, 3)])).unwrap();
    let lib = optimal_interface(&w, Scheduler::Rm, Supply::General).unwrap_err();
    assert_eq!(e.rule, Rule::Interface(lib));
    // aligned supply needs a harmonic workload
    let v = plan_with(component(interface_json(
        "edf",
        Some("aligned"),
        &[(4, 1), (6, 1)],
    )));
    expect_error(
        &v,
        "tasks[1].interface",
        "tasks[1].interface: supply aligned: tasks[0].period = 4 and tasks[1].period = 6 do not \
         divide each other; the aligned supply needs a harmonic workload",
    );
}

#[test]
fn thread_name_errors() {
    let p = "tasks[1].interface.tasks";
    // a mix: each unnamed task is an error
    let v = plan_with(component(json!({ "scheduler": "rm", "tasks": [
        { "period": 5, "wcet": 1 },
        { "period": 10, "wcet": 1, "thread": "b" },
        { "period": 20, "wcet": 1 } ] })));
    let mix = |j: usize| {
        format!(
            "{p}[{j}]: names no thread, but {p}[1] does: either every workload task names its \
             thread (thread or tid) or none does"
        )
    };
    expect_error(&v, &format!("{p}[0]"), &mix(0));
    expect_error(&v, &format!("{p}[2]"), &mix(2));
    assert_eq!(errors(&v).len(), 2);
    // duplicates, both kinds; too long; empty; tid 0; thread and tid together
    let v = plan_with(component(json!({ "scheduler": "rm", "tasks": [
        { "period": 5, "wcet": 1, "thread": "a" },
        { "period": 10, "wcet": 1, "thread": "a" },
        { "period": 20, "wcet": 1, "tid": 3 },
        { "period": 20, "wcet": 1, "tid": 3 },
        { "period": 40, "wcet": 1, "thread": "sixteen-chars-xx" },
        { "period": 40, "wcet": 1, "thread": "" },
        { "period": 40, "wcet": 1, "tid": 0 },
        { "period": 40, "wcet": 1, "thread": "c", "tid": 5 } ] })));
    expect_error(
        &v,
        &format!("{p}[1].thread"),
        &format!("{p}[1].thread = \"a\": appears twice (also at {p}[0].thread)"),
    );
    expect_error(
        &v,
        &format!("{p}[3].tid"),
        &format!("{p}[3].tid = 3: appears twice (also at {p}[2].tid)"),
    );
    expect_error(
        &v,
        &format!("{p}[4].thread"),
        &format!(
            "{p}[4].thread = \"sixteen-chars-xx\": is longer than the kernel's 15-character \
             thread name"
        ),
    );
    expect_error(
        &v,
        &format!("{p}[5].thread"),
        &format!("{p}[5].thread = \"\": must not be empty"),
    );
    expect_error(
        &v,
        &format!("{p}[6].tid"),
        &format!("{p}[6].tid = 0: must be at least 1"),
    );
    expect_error(
        &v,
        &format!("{p}[7]"),
        &format!("{p}[7]: names its thread twice: give one of thread, tid"),
    );
    // a tid outside the task's tids
    let v = plan_with(
        json!({ "name": "comp", "tids": [7, 8], "class": "tt", "cpu": 1,
        "interface": { "scheduler": "rm", "tasks": [ { "period": 4, "wcet": 1, "tid": 9 } ] } }),
    );
    expect_error(
        &v,
        &format!("{p}[0].tid"),
        &format!("{p}[0].tid = 9: is not one of the task's tids ([7,8])"),
    );
}

#[test]
fn interface_is_one_timing_model_and_not_for_be_tasks() {
    let mut task = component(interface_json("rm", None, &[(5, 1)]));
    task["period"] = json!(10);
    task["wcet"] = json!(2);
    let e = expect_error(
        &plan_with(task),
        "tasks[1]",
        "tasks[1]: a tt task needs exactly one timing model (period+wcet, utilization+latency_us, \
         jobs, interface), found period+wcet and interface",
    );
    assert!(matches!(e.rule, Rule::TimingCount(_)));
    for (field, value) in [
        ("utilization", json!(0.5)),
        ("latency_us", json!(1000)),
        ("offset", json!(1)),
        ("jobs", json!([{ "release": 0, "deadline": 5, "wcet": 1 }])),
    ] {
        let mut task = component(interface_json("rm", None, &[(5, 1)]));
        task[field] = value;
        let errs = errors(&plan_with(task));
        assert!(
            errs.iter().any(|e| e.path == "tasks[1]"
                && matches!(e.rule, Rule::TimingCount(_))
                && e.to_string().ends_with("and interface")),
            "{field}: {errs:?}"
        );
    }
    let be = json!({ "name": "b", "comm": "b", "class": "be",
        "interface": { "scheduler": "rm", "tasks": [{ "period": 5, "wcet": 1 }] } });
    expect_error(
        &plan_with(be),
        "tasks[1].interface",
        "tasks[1].interface: is a timing field; a be task has no timing (it runs only in slack)",
    );
}

#[test]
fn unknown_fields_and_nulls_are_refused_with_their_path() {
    let cases = [
        (
            json!({ "scheduler": "rm", "tasks": [{ "period": 5, "wcet": 1, "prio": 3 }] }),
            "tasks[1].interface.tasks[0].prio: ",
            "unknown field `prio`, expected one of `period`, `wcet`, `thread`, `tid`",
        ),
        (
            json!({ "scheduler": "rm", "quantum": 3, "tasks": [{ "period": 5, "wcet": 1 }] }),
            "tasks[1].interface.quantum: ",
            "unknown field `quantum`, expected one of `scheduler`, `supply`, `budget`, `tasks`",
        ),
        (
            json!({ "scheduler": null, "tasks": [{ "period": 5, "wcet": 1 }] }),
            "tasks[1].interface.scheduler: ",
            "invalid type: null",
        ),
        (
            json!({ "scheduler": "rm", "tasks": [[5, 1]] }),
            "tasks[1].interface.tasks[0]: ",
            "invalid type: sequence, expected a JSON object",
        ),
    ];
    for (interface, path, message) in cases {
        let errs = errors(&plan_with(component(interface)));
        assert_eq!(errs.len(), 1, "{errs:?}");
        let shown = errs[0].to_string();
        assert!(
            shown.starts_with(path) && shown.contains(message),
            "{shown}"
        );
    }
}

#[test]
fn server_defaults_to_wcps_and_parses_every_design() {
    let base = plan_with(json!({ "name": "b", "comm": "b", "class": "be" }));
    assert_eq!(load(&base).server, ServerDesign::Wcps);
    for (text, want) in [
        ("ptps", ServerDesign::Ptps),
        ("wcps", ServerDesign::Wcps),
        ("crps", ServerDesign::Crps),
    ] {
        let mut v = base.clone();
        v["server"] = json!(text);
        assert_eq!(load(&v).server, want, "{text}");
    }
    let mut v = base.clone();
    v["server"] = json!("edf");
    let e = expect_error(
        &v,
        "server",
        "server = \"edf\": must be \"ptps\", \"wcps\" or \"crps\" (the server design of unused slot time)",
    );
    assert_eq!(e.rule, Rule::Server);
    // collected with the other field errors
    v["slot_us"] = json!(1);
    let errs = errors(&v);
    assert!(errs.iter().any(|e| e.path == "slot_us"), "{errs:?}");
    assert!(errs.iter().any(|e| e.path == "server"), "{errs:?}");
    v["server"] = json!(3);
    assert!(errors(&v)[0].to_string().starts_with("server: "));
}

#[test]
fn explain_shows_the_workload_gamma_and_the_server_only_when_set() {
    let mut v = plan_with(json!({ "name": "comp", "pid": 20, "class": "tt", "cpu": 1,
        "interface": { "scheduler": "rm", "tasks": [
            { "period": 5, "wcet": 1, "thread": "cam-grab" },
            { "period": 10, "wcet": 2, "tid": 31 },
            { "period": 20, "wcet": 3, "thread": "cam-send" } ] } }));
    let p = load(&v);
    let report = explain(&p);
    let j = serde_json::to_value(&report).unwrap();
    assert!(j.get("server").is_none(), "default server not shown");
    assert!(j["tasks"][0].get("interface").is_none());
    assert_eq!(
        j["tasks"][1]["interface"],
        json!({
            "scheduler": "rm", "supply": "general",
            "workload": [
                { "period": 5, "wcet": 1, "thread": "cam-grab" },
                { "period": 10, "wcet": 2, "tid": 31 },
                { "period": 20, "wcet": 3, "thread": "cam-send" }
            ],
            "period": 3, "budget": 2,
            "bandwidth": 2.0 / 3.0, "bandwidth_exact": "2/3",
            "utilization": 0.55, "utilization_exact": "11/20",
            "overhead": p.tasks[1].interface.as_ref().unwrap().result.overhead
        })
    );
    let text = render_text(&report);
    for want in [
        "  interface: scheduler rm, supply general: Γ = (period 3, budget 2) slots\n",
        "    bandwidth U_Γ = 0.666667 (2/3), U_W = 0.550000 (11/20), overhead U_Γ − U_W = 0.116667\n",
        "    workload (period, wcet):\n      (5, 1) thread \"cam-grab\"\n      (10, 2) tid 31\n      (20, 3) thread \"cam-send\"\n",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    assert!(!text.contains("server"), "{text}");
    v["server"] = json!("ptps");
    let report = explain(&load(&v));
    assert_eq!(serde_json::to_value(&report).unwrap()["server"], "ptps");
    assert!(render_text(&report)
        .contains("\nserver ptps: the unused time of a tt owner's slot is idle\n"));
}

#[test]
fn the_example_plan_has_a_process_with_three_named_rm_threads_and_a_server() {
    let path = format!(
        "{}/schedules/interface-example.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let p = plan::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(p.server, ServerDesign::Wcps);
    let (i, t) = p
        .tasks
        .iter()
        .enumerate()
        .find(|(_, t)| t.interface.is_some())
        .expect("a task with an interface");
    assert!(matches!(t.selector, plan::Selector::Cmd(_)));
    let local = t.local.as_ref().expect("named threads");
    assert_eq!(local.scheduler, Scheduler::Rm);
    assert_eq!(local.threads.len(), 3);
    assert!(local
        .threads
        .iter()
        .all(|x| matches!(x.thread, ThreadSelector::Comm(_))));
    // its jobs are the library's Γ of the same workload
    let workload: Vec<WTask> = local
        .threads
        .iter()
        .map(|x| WTask {
            period: x.period,
            wcet: x.wcet,
        })
        .collect();
    let want = optimal_interface(
        &Workload::new(&workload).unwrap(),
        Scheduler::Rm,
        Supply::General,
    )
    .unwrap()
    .resource;
    let jobs: Vec<_> = p
        .cpus
        .iter()
        .flat_map(|c| &c.jobs)
        .filter(|j| j.task == i)
        .collect();
    assert_eq!(jobs.len() as u64, p.frame_slots / want.period);
    assert!(jobs
        .iter()
        .all(|j| j.deadline - j.release == want.period && j.wcet == want.budget));
}

/// All the interface searches of a plan share one budget (a search's own cap), so a plan of
/// many costly workloads is refused in about two searches' time, not one search per task.
#[test]
fn the_interface_searches_of_a_plan_share_one_work_cap() {
    // periods close to the cap and far from each other: the search hits its own cap
    let costly = interface_json("rm", None, &[(4294967295, 1), (4294967294, 1)]);
    let task = |name: &str| json!({ "name": name, "pid": 30, "class": "tt", "cpu": 1, "interface": costly });
    let mut v = plan_with(task("x"));
    v["tasks"].as_array_mut().unwrap().push(task("y"));
    v["tasks"].as_array_mut().unwrap().push(task("z"));
    let t = std::time::Instant::now();
    let errs = errors(&v);
    let took = t.elapsed();
    let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert_eq!(shown.len(), 3, "{shown:#?}");
    assert!(
        shown[0].starts_with("tasks[1].interface: the search needs more than 67108864"),
        "{}",
        shown[0]
    );
    for (i, s) in shown[1..].iter().enumerate() {
        assert_eq!(
            *s,
            format!(
                "tasks[{}].interface: not computed: the plan's interface searches have taken \
                 67108864 test-point evaluations, at or above the plan's cap of 67108864 (all \
                 searches together); give this task the period and wcet of `scx_tt plan \
                 interface` instead",
                i + 2
            )
        );
        assert!(matches!(errs[i + 1].rule, Rule::InterfaceWorkCap { .. }));
    }
    // one search, not three (one takes 0.5-2.5 s on this machine in release)
    let bound = if cfg!(debug_assertions) { 120 } else { 8 };
    assert!(took < std::time::Duration::from_secs(bound), "{took:?}");
}

/// `interface.budget` (an experiment's Θ): the task gets it instead of Algorithm 1's Θ; 0 and
/// more than Π are refused at its path, naming Π.
#[test]
fn an_interface_budget_replaces_theta_within_one_to_pi() {
    // (4, 1), (8, 2), (16, 4) under RM: Γ from the library (Θ ≥ 2); budgets Θ − 1 and 1 are
    // taken, 0 and Π + 1 refused
    let tasks = json!([
        { "period": 4, "wcet": 1 },
        { "period": 8, "wcet": 2 },
        { "period": 16, "wcet": 4 }
    ]);
    let w = Workload::new(&[
        WTask { period: 4, wcet: 1 },
        WTask { period: 8, wcet: 2 },
        WTask {
            period: 16,
            wcet: 4,
        },
    ])
    .unwrap();
    let gamma = optimal_interface(&w, Scheduler::Rm, Supply::General)
        .unwrap()
        .resource;
    let wcet_of = |budget: u64| {
        let p = load(&plan_with(component(
            json!({ "scheduler": "rm", "budget": budget, "tasks": tasks }),
        )));
        let jobs: Vec<_> = p.cpus[0].jobs.iter().filter(|j| j.task == 1).collect();
        assert!(!jobs.is_empty());
        assert!(jobs.iter().all(|j| j.deadline - j.release == gamma.period));
        jobs[0].wcet
    };
    assert!(gamma.budget >= 2, "{gamma:?}");
    assert_eq!(wcet_of(gamma.budget - 1), gamma.budget - 1);
    assert_eq!(wcet_of(1), 1);
    for bad in [0, gamma.period + 1] {
        let errs = errors(&plan_with(component(
            json!({ "scheduler": "rm", "budget": bad, "tasks": tasks }),
        )));
        assert_eq!(errs.len(), 1, "{errs:?}");
        let shown = errs[0].to_string();
        assert!(
            shown.starts_with(&format!("tasks[1].interface.budget = {bad}: "))
                && shown.contains(&format!("{} (the interface's period Π)", gamma.period)),
            "{shown}"
        );
    }
}
