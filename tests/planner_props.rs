//! Property tests over random UUnifast task sets and arrivals, judged by an EDF feasibility
//! oracle written here (independent of `offline::edf`), plus spare-capacity invariants
//! recomputed from scratch after every slot.

use proptest::prelude::*;
use scx_tt::planner::cpu::{CpuState, UNIT};
use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::CpuInput;
use scx_tt::planner::{
    Admission, Freqs, JobEvent, Observation, Placement, Planner, PlannerConfig, Policy, Run,
};
use std::collections::HashMap;

const SLOT_NS: u64 = 1000;
const FRAME: u64 = 60;
const PERIODS: [u64; 6] = [10, 12, 15, 20, 30, 60];

/// The oracle: can every (release, deadline, slots) job meet its deadline on one CPU from slot
/// `now` on, when slots `[now, blocked_until)` are unavailable? Slot-by-slot preemptive EDF, which
/// is optimal for independent jobs on one processor.
fn edf_feasible(now: u64, blocked_until: u64, jobs: &[(u64, u64, u64)]) -> bool {
    let mut left: Vec<(u64, u64, u64)> = jobs.iter().copied().filter(|j| j.2 > 0).collect();
    let end = left.iter().map(|j| j.1).max().unwrap_or(now);
    let mut t = now;
    while t < end {
        if left.iter().any(|j| j.1 <= t && j.2 > 0) {
            return false;
        }
        if t >= blocked_until {
            let pick = left
                .iter_mut()
                .filter(|j| j.0 <= t && j.2 > 0)
                .min_by_key(|j| j.1);
            if let Some(j) = pick {
                j.2 -= 1;
            }
        }
        t += 1;
    }
    left.iter().all(|j| j.2 == 0)
}

/// Guaranteed work of a CPU as the oracle sees it: true remaining slots (rounded up).
fn live(cpu: &CpuState) -> Vec<(u64, u64, u64)> {
    cpu.live_jobs()
        .map(|j| (j.release, j.deadline, j.rem.div_ceil(UNIT)))
        .collect()
}

/// Property SC-exact, recomputed from scratch: sc(I) = |I ∩ [now,∞)| - Σ committed(I) +
/// min(0, sc(next)), and sc(I_cur) ≥ 0 (Property SC-nonneg).
fn check_sc(cpu: &CpuState, now: u64) -> Result<(), String> {
    let ivs: Vec<_> = cpu.intervals().collect();
    let mut committed: HashMap<u64, i64> = HashMap::new();
    for j in cpu.live_jobs() {
        assert_eq!((j.rem + j.res) % UNIT, 0, "Property Commit");
        *committed.entry(j.deadline).or_default() += ((j.rem + j.res) / UNIT) as i64;
    }
    let mut borrow = 0;
    for iv in ivs.iter().rev() {
        let len = iv.end.saturating_sub(iv.start.max(now)) as i64;
        let want = len - committed.get(&iv.end).copied().unwrap_or(0) + borrow;
        if want != iv.sc {
            return Err(format!(
                "interval {iv:?}: sc {} != recomputed {want}",
                iv.sc
            ));
        }
        borrow = want.min(0);
    }
    // Property Cover: sorted, disjoint, contiguous up to the horizon end.
    for w in ivs.windows(2) {
        if w[0].end != w[1].start || w[0].start >= w[0].end {
            return Err(format!("Property Cover: {:?} then {:?}", w[0], w[1]));
        }
    }
    if ivs.last().map(|i| i.end) != Some(cpu.horizon_end()) {
        return Err("Property Cover: intervals stop before the horizon end".into());
    }
    let first_live = ivs.iter().find(|i| i.end > now).expect("horizon ahead");
    if first_live.sc < 0 {
        return Err(format!(
            "Property SC-nonneg: current interval {first_live:?} has negative sc"
        ));
    }
    Ok(())
}

/// UUnifast (Bini & Buttazzo): n utilizations summing to `u`.
fn uunifast(n: usize, u: f64, r: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    let mut sum = u;
    for (i, &x) in r.iter().enumerate().take(n - 1) {
        let next = sum * x.powf(1.0 / (n - 1 - i) as f64);
        out.push(sum - next);
        sum = next;
    }
    out.push(sum);
    out
}

#[derive(Clone, Debug)]
struct Case {
    jobs: Vec<Job>,
    /// (at_slot, wcet, relative deadline or None for soft)
    arrivals: Vec<(u64, u64, Option<u64>)>,
    /// Periodic tasks added at run time: (at_slot, index into PERIODS, wcet).
    periodic: Vec<(u64, usize, u64)>,
    exec: Vec<f64>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..6,
        0.2f64..0.9,
        prop::collection::vec(0.0f64..1.0, 6),
        prop::collection::vec(0usize..PERIODS.len(), 6),
        prop::collection::vec(
            (
                0u64..3 * FRAME,
                1u64..8,
                prop::option::weighted(0.85, 1u64..FRAME),
            ),
            0..12,
        ),
        prop::collection::vec(0.2f64..=1.0, 16),
        prop::collection::vec((0u64..2 * FRAME, 0usize..PERIODS.len(), 1u64..6), 0..3),
    )
        .prop_map(|(n, u, r, pi, arrivals, exec, periodic)| {
            let us = uunifast(n, u, &r);
            let mut jobs = Vec::new();
            for (t, &ut) in us.iter().enumerate() {
                let p = PERIODS[pi[t]];
                let c = ((ut * p as f64).round() as u64).clamp(1, p);
                for k in 0..FRAME / p {
                    jobs.push(Job {
                        task: t,
                        instance: k as u32,
                        release: k * p,
                        deadline: (k + 1) * p,
                        wcet: c,
                    });
                }
            }
            Case {
                jobs,
                arrivals,
                periodic,
                exec,
            }
        })
        .prop_filter("frame must be feasible", |c| {
            let j: Vec<_> = c
                .jobs
                .iter()
                .map(|j| (j.release, j.deadline, j.wcet))
                .collect();
            edf_feasible(0, 0, &j)
        })
}

#[derive(Default, Debug)]
struct Tally {
    accepted: u64,
    accepted_infeasible: u64,
    rejected: u64,
    rejected_feasible: u64,
    periodic_mismatch: u64,
}

/// Runs one case for 6 frames; returns the tally or the first violated property.
fn run(c: &Case, policy: Policy) -> Result<Tally, String> {
    let mut p = Planner::new(
        &[CpuInput {
            jobs: c.jobs.clone(),
            has_be: true,
        }],
        FRAME,
        PlannerConfig {
            policy,
            freqs: Freqs::xeon_default(),
            slot_ns: SLOT_NS,
        },
    );
    let mut tally = Tally::default();
    let mut actual: HashMap<usize, u64> = HashMap::new();
    let wcet_of = |t: usize, extra: &HashMap<usize, u64>| -> u64 {
        extra
            .get(&t)
            .copied()
            .or_else(|| c.jobs.iter().find(|j| j.task == t).map(|j| j.wcet))
            .unwrap_or(1)
    };
    let mut extra: HashMap<usize, u64> = HashMap::new();
    let mut obs = vec![Observation {
        ran_ns: 0,
        done: false,
    }];
    // The frame template as the test knows it: plan jobs plus accepted periodic tasks.
    let mut template: Vec<(u64, u64, u64)> = c
        .jobs
        .iter()
        .map(|j| (j.release, j.deadline, j.wcet))
        .collect();
    for slot in 0..6 * FRAME {
        let d = p
            .step(slot, if slot == 0 { &[] } else { &obs })
            .map_err(|e| e.to_string())?[0];
        for &(_, e) in p.events() {
            match e {
                // Properties Safe-freq and Safe-idle (policy.rs): no guaranteed job misses.
                JobEvent::Miss { .. } => return Err(format!("{e:?} at slot {slot}")),
                // every observation here is a whole slot or a completion: nothing can be lost
                JobEvent::Lost { .. } => return Err(format!("{e:?} at slot {slot}")),
                JobEvent::Completed { task, .. }
                | JobEvent::Overrun { task, .. }
                | JobEvent::SoftCompleted { task }
                | JobEvent::SoftCutOff { task } => {
                    actual.remove(&task);
                }
            }
        }
        obs[0] = match d.run {
            Run::Job { task, .. } | Run::Soft { task } => {
                let w = wcet_of(task, &extra);
                let k = c.exec[task % c.exec.len()];
                let left = actual
                    .entry(task)
                    .or_insert_with(|| (((w * UNIT) as f64 * k).ceil() as u64).clamp(1, w * UNIT));
                let f = d.freq_ppm as u64;
                if *left <= f {
                    *left = 0;
                    Observation {
                        ran_ns: SLOT_NS,
                        done: true,
                    }
                } else {
                    *left -= f;
                    Observation {
                        ran_ns: SLOT_NS,
                        done: false,
                    }
                }
            }
            _ => Observation {
                ran_ns: 0,
                done: false,
            },
        };
        let now = slot + 1;
        check_sc(&p.cpus()[0], now).map_err(|e| format!("slot {slot} ({policy}): {e}"))?;
        for (i, &(at, pi, wcet)) in c.periodic.iter().enumerate() {
            if at != slot {
                continue;
            }
            let task = 200 + i;
            let period = PERIODS[pi];
            let wcet = wcet.min(period);
            let mut with: Vec<_> = template.clone();
            with.extend((0..FRAME / period).map(|k| (k * period, (k + 1) * period, wcet)));
            let feasible = edf_feasible(0, 0, &with);
            let accepted = matches!(
                p.admit_periodic(task, wcet, period, Placement::Any),
                Admission::Accepted { .. }
            );
            if accepted != feasible {
                tally.periodic_mismatch += 1;
            }
            if accepted {
                extra.insert(task, wcet);
                template = with;
            }
        }
        for (i, &(at, wcet, dl)) in c.arrivals.iter().enumerate() {
            if at != slot {
                continue;
            }
            let task = 100 + i;
            extra.insert(task, wcet);
            let Some(rel) = dl else {
                p.submit_soft(task, wcet, None);
                continue;
            };
            let cpu = &p.cpus()[0];
            let mut jobs = live(cpu);
            jobs.push((now, now + rel, wcet));
            // A DPM idle period may be ended early for an admission: no slot is blocked.
            let feasible = edf_feasible(now, now, &jobs);
            match p.admit_firm(task, wcet, now + rel, Placement::Any) {
                Admission::Accepted { .. } => {
                    tally.accepted += 1;
                    if !feasible {
                        tally.accepted_infeasible += 1;
                    }
                }
                Admission::Rejected(_) => {
                    tally.rejected += 1;
                    if feasible {
                        tally.rejected_feasible += 1;
                    }
                }
            }
        }
    }
    Ok(tally)
}

fn check_policy(policy: Policy, exact: bool) {
    let total = std::cell::RefCell::new(Tally::default());
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 200,
        ..ProptestConfig::default()
    });
    let result = runner.run(&case(), |c| {
        let t = run(&c, policy).map_err(TestCaseError::fail)?;
        prop_assert_eq!(t.accepted_infeasible, 0, "accepted an infeasible job");
        prop_assert_eq!(
            t.periodic_mismatch,
            0,
            "periodic admission disagrees with the oracle"
        );
        if exact {
            prop_assert_eq!(t.rejected_feasible, 0, "rejected a feasible job");
        }
        let mut sum = total.borrow_mut();
        sum.accepted += t.accepted;
        sum.rejected += t.rejected;
        sum.rejected_feasible += t.rejected_feasible;
        Ok(())
    });
    let total = total.into_inner();
    let feasible = total.accepted + total.rejected_feasible;
    eprintln!(
        "{policy}: accepted {} rejected {} of which EDF-feasible {} (rate {:.4} of feasible)",
        total.accepted,
        total.rejected,
        total.rejected_feasible,
        total.rejected_feasible as f64 / feasible.max(1) as f64
    );
    if let Err(e) = result {
        panic!("{policy}: {e}");
    }
}

#[test]
fn bss_never_misses_and_admission_is_exact() {
    check_policy(Policy::Bss, true);
}

#[test]
fn dpm_never_misses_and_admission_is_exact() {
    check_policy(Policy::Dpm, true);
}

#[test]
fn dvfs_never_misses_and_never_accepts_an_infeasible_job() {
    check_policy(Policy::Dvfs, false);
}

#[test]
fn dpm_dvfs_never_misses_and_never_accepts_an_infeasible_job() {
    check_policy(Policy::DpmDvfs, false);
}

#[test]
fn oracle_detects_overload_and_blocking() {
    // Two 2-slot jobs due at 3: 4 > 3 slots.
    assert!(!edf_feasible(0, 0, &[(0, 3, 2), (0, 3, 2)]));
    assert!(edf_feasible(0, 0, &[(0, 3, 2), (0, 4, 2)]));
    // Blocking slots 0-1 leaves 2 slots before 4: one 2-slot job fits, not 3.
    assert!(edf_feasible(0, 2, &[(0, 4, 2)]));
    assert!(!edf_feasible(0, 2, &[(0, 4, 3)]));
    // A release after the blocked part is respected.
    assert!(!edf_feasible(0, 0, &[(3, 5, 3)]));
}
