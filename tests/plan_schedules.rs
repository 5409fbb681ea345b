//! Every file in `schedules/` is a valid plan, and the named examples have the shape the README
//! and the VM harness rely on.

use scx_tt::plan::{self, Class, Plan, Selector};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schedules")
}

fn load(name: &str) -> Plan {
    plan::from_file(dir().join(name)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_schedule_validates() {
    let mut n = 0;
    for entry in std::fs::read_dir(dir()).expect("schedules/") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            if let Err(e) = plan::from_file(&path) {
                panic!("{e}");
            }
            n += 1;
        }
    }
    assert!(n >= 3, "only {n} plans in schedules/");
}

#[test]
fn demo_has_two_managed_one_housekeeping_three_spawned_tt_one_be() {
    let p = load("demo.json");
    assert_eq!((p.managed.len(), p.housekeeping.len()), (2, 1));
    let tt: Vec<_> = p.tasks.iter().filter(|t| t.class == Class::Tt).collect();
    assert_eq!(tt.len(), 3);
    assert!(tt.iter().all(|t| matches!(t.selector, Selector::Cmd(_))));
    assert_eq!(p.tasks.iter().filter(|t| t.class == Class::Be).count(), 1);
    // The demo VM boots with 3 vCPUs: every CPU of the plan must exist there.
    assert!(p.check_cpus_exist(&[0, 1, 2]).is_ok());
}

#[test]
fn vm_example_uses_the_vm_model_and_qemu_selectors() {
    let text = std::fs::read_to_string(dir().join("vm-example.json")).expect("read");
    assert!(text.contains("\"utilization\"") && text.contains("\"latency_us\""));
    let p = load("vm-example.json");
    assert!(p
        .tasks
        .iter()
        .all(|t| matches!(t.selector, Selector::Qemu(_))));
    // vm-rt: slot 1 ms, L = 20 slots, U = 0.4: T = ⌊20 / 1.2⌋ = 16, C = ⌈6.4⌉ = 7.
    let rt = p
        .cpus
        .iter()
        .flat_map(|c| &c.jobs)
        .find(|j| p.tasks[j.task].name == "vm-rt")
        .expect("vm-rt has jobs");
    assert_eq!((rt.deadline - rt.release, rt.wcet), (16, 7));
}

#[test]
fn generated_example_uses_the_papers_ranges() {
    let text = std::fs::read_to_string(dir().join("generated.json")).expect("read");
    let raw = plan::parse_raw(&text).expect("parses");
    for t in raw.tasks.expect("tasks") {
        let (period, wcet) = (t.period.expect("period"), t.wcet.expect("wcet"));
        assert!((15..=50).contains(&period), "period {period}");
        assert!((1..=15).contains(&wcet), "wcet {wcet}");
    }
}
