//! Issue 12, item 4: what makes a plan's memory grow (managed CPUs × frame slots, jobs per frame)
//! is capped, with an error saying how large the plan came out.

use scx_tt::plan::{self, limits};

/// `cpus` managed CPUs 1..=cpus, a frame of `frame` slots, one task of period `period` (wcet 1)
/// on each CPU.
fn plan_text(cpus: u32, frame: u64, period: u64) -> String {
    let managed: Vec<String> = (1..=cpus).map(|c| c.to_string()).collect();
    let tasks: Vec<String> = (1..=cpus)
        .map(|c| {
            format!(
                r#"{{"name":"t{c}","cmd":["/bin/true"],"class":"tt","cpu":{c},"period":{period},"wcet":1}}"#
            )
        })
        .collect();
    format!(
        r#"{{"slot_us":1000,"frame_slots":{frame},"cpus":{{"managed":[{}],"housekeeping":[0]}},"tasks":[{}]}}"#,
        managed.join(","),
        tasks.join(",")
    )
}

/// The reproducer: a 25 KB-class plan that needed more than 2 GiB.
#[test]
fn sixteen_cpus_of_a_million_period_1_jobs_are_refused_with_the_count() {
    let text = plan_text(16, 1_000_000, 1);
    assert!(text.len() < 25_000);
    let e = plan::from_str(&text).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "tasks: the frame holds 16000000 jobs on 16 managed CPUs, above the limit of"
        ),
        "{e}"
    );
}

#[test]
fn cpus_times_frame_is_capped_with_the_product() {
    let cpus = (limits::MAX_CPU_FRAME_SLOTS / 1_000_000 + 1) as u32;
    let text = plan_text(cpus, 1_000_000, 1_000_000);
    let e = plan::from_str(&text).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "frame_slots = 1000000: {cpus} managed CPUs × 1000000 slots = {} CPU slots, above the limit of {}",
            u64::from(cpus) * 1_000_000,
            limits::MAX_CPU_FRAME_SLOTS
        )),
        "{e}"
    );
}

#[test]
fn plans_at_the_limits_load() {
    // exactly at the job limit on one CPU, and at the CPU-slot limit
    let frame = limits::MAX_PLAN_JOBS as u64;
    plan::from_str(&plan_text(1, frame.min(1_000_000), 1)).expect("at the job limit");
    let cpus = (limits::MAX_CPU_FRAME_SLOTS / 1_000_000) as u32;
    plan::from_str(&plan_text(cpus, 1_000_000, 1_000)).expect("at the CPU-slot limit");
}
