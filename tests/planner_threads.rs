//! The kernel path's step on helper threads (`scx_tt --planner-threads`,
//! `KernelPlanner::set_step_exec` with the edge's `StepPool`): slot by slot, the same writes,
//! DPM idle periods, late counts and admission answers as the same planner on one thread, under
//! every kernel-path policy, open loop and closed loop (observations with early completions and
//! short runs), with firm admissions and a policy swap between slots. The helper must have run
//! shards (else the test proves nothing about them): the run is repeated, up to 20 s, until one
//! has (on a loaded host the planner thread may take every shard of a run first).

use scx_tt::abi::entry_task;
use scx_tt::plan::{gen, Plan};
use scx_tt::planner::kernel_path::{FirmJob, KernelPathConfig, KernelPlanner, SlotObs};
use scx_tt::planner::pool::{SharedPool, StepPool};
use scx_tt::planner::{Freqs, Policy};
use scx_tt::sched::config::SchedConfig;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A generated plan of 8 managed CPUs (the first seed that gives one).
fn plan() -> Plan {
    (1..=50)
        .find_map(|seed| {
            gen::generate(&gen::GenParams {
                tasks: 24,
                util: 4.0,
                cpus: 8,
                wcet: (1, 6),
                period: (10, 60),
                seed,
                slot_us: 1000,
                frame_slots: Some(120),
                cmd: vec!["/bin/true".into()],
            })
            .ok()
        })
        .expect("a generated plan of 8 CPUs")
        .plan
}

fn planner(plan: &Plan, policy: Policy, closed: bool) -> KernelPlanner {
    let online: Vec<u32> = (0..=8).collect();
    let table = SchedConfig::from_plan(plan, 0, &online)
        .expect("config")
        .entries();
    let cfg = KernelPathConfig {
        policy,
        lead: 2,
        frame_slots: plan.frame_slots,
        slot_ns: plan.slot_us * 1000,
        freqs: Freqs::xeon_default(),
    };
    let mut p = KernelPlanner::new(&plan.planner_inputs(), plan.tasks.len(), cfg, table)
        .expect("planner mode");
    if closed {
        p.close_loop();
    }
    p
}

/// xorshift64: the observations' and admissions' draws.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One run of `plan` under `policy` on one thread and on the pool side by side; panics at the
/// first difference.
fn compare(plan: &Plan, policy: Policy, closed: bool, pool: &Arc<StepPool>) {
    let what = format!("{policy} closed={closed}");
    let mut one = planner(plan, policy, closed);
    let mut two = planner(plan, policy, closed);
    // every slot cut in two (8 CPUs are visited or due in most)
    two.set_step_exec(Box::new(SharedPool(pool.clone())), 2, 2);
    let (n, frame) = (plan.managed.len(), plan.frame_slots);
    let mut table = SchedConfig::from_plan(plan, 0, &(0..=8).collect::<Vec<u32>>())
        .expect("config")
        .entries();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ frame);
    let slot_ns = plan.slot_us * 1000;
    for cur in 0..4 * frame {
        let (a, b) = (one.advance(Some(cur)), two.advance(Some(cur)));
        let (a, b) = (a.expect("in order"), b.expect("in order"));
        assert_eq!(a, b, "{what}: the advance at slot {cur}");
        for w in &a.writes {
            if let Some(task) = w.task {
                table[w.cpu * frame as usize + w.frame_slot as usize] = task;
            }
        }
        if closed {
            // slot `cur` as BPF would publish it: its owner ran all of it, part of it, or
            // completed its job early
            for cpu in 0..n {
                let entry = table[cpu * frame as usize + (cur % frame) as usize];
                let owner_ns = match rng.next(3) {
                    0 => slot_ns,
                    _ => rng.next(slot_ns + 1),
                };
                let obs = SlotObs::Seen {
                    owner: entry_task(entry),
                    done: rng.next(4) == 0,
                    owner_ns,
                    avail_ns: owner_ns,
                };
                let (wa, wb) = (
                    one.observe(cpu, cur, obs, Some(cur)),
                    two.observe(cpu, cur, obs, Some(cur)),
                );
                assert_eq!(
                    wa, wb,
                    "{what}: the rewrites of observing CPU {cpu} slot {cur}"
                );
            }
        }
        if cur % 17 == 5 {
            let job = FirmJob {
                task: rng.next(plan.tasks.len() as u64) as usize,
                cpu: rng.next(n as u64) as usize,
                wcet: 1 + rng.next(4),
                deadline_slots: 5 + rng.next(40),
            };
            assert_eq!(
                one.admit_firm(&job, cur),
                two.admit_firm(&job, cur),
                "{what}: the admission of {job:?} at slot {cur}"
            );
        }
        if cur == 2 * frame + 3 {
            let to = match policy {
                Policy::Bss => Policy::Dvfs,
                _ => Policy::Bss,
            };
            assert_eq!(
                one.set_policy(to).is_ok(),
                two.set_policy(to).is_ok(),
                "{what}: the swap to {to}"
            );
        }
    }
}

#[test]
fn the_kernel_path_on_helper_threads_writes_what_one_thread_writes() {
    let plan = plan();
    assert_eq!(plan.managed.len(), 8);
    let pool = Arc::new(StepPool::new(1, Duration::from_secs(5), |_| {}).expect("threads"));
    let t0 = Instant::now();
    let mut runs = 0;
    loop {
        for policy in [Policy::Bss, Policy::Dvfs, Policy::Dpm, Policy::DpmDvfs] {
            for closed in [false, true] {
                compare(&plan, policy, closed, &pool);
            }
        }
        runs += 1;
        if pool.lent() > 0 || t0.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    assert!(
        pool.lent() > 0,
        "the helper ran no shard in {runs} runs ({:?}): the pooled path was not exercised",
        t0.elapsed()
    );
}
