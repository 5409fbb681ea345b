//! The build of the frame after next is staggered across CPUs: every CPU still holds the
//! current and the next frame complete at every slot, but the CPUs do not start (and therefore do
//! not finish) their builds in the same slot, so no single `step` pays for every CPU's first,
//! cache-cold build slot. A periodic task admitted on a CPU therefore joins from the first frame
//! that CPU has not started building, which depends on the CPU.

use scx_tt::planner::cpu::JobEvent;
use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::CpuInput;
use scx_tt::planner::{Admission, Freqs, Placement, Planner, PlannerConfig, Policy, Run};

/// `n` jobs in a frame of `frame` slots, one per segment of `frame / n` slots, each needing half
/// its segment and due at the end of the next segment (or the frame end): feasible.
fn jobs(n: u64, frame: u64) -> Vec<Job> {
    let seg = frame / n;
    (0..n)
        .map(|k| Job {
            task: k as usize,
            instance: 0,
            release: k * seg,
            deadline: ((k + 2) * seg).min(frame),
            wcet: (seg / 2).max(1),
        })
        .collect()
}

fn planner(cpus: usize, n: u64, frame: u64, policy: Policy) -> Planner {
    let inputs: Vec<CpuInput> = (0..cpus)
        .map(|_| CpuInput {
            jobs: jobs(n, frame),
            has_be: false,
        })
        .collect();
    let cfg = PlannerConfig {
        policy,
        freqs: Freqs::xeon_default(),
        slot_ns: 1_000_000,
    };
    Planner::new(&inputs, frame, cfg)
}

#[test]
fn cpus_with_the_same_template_finish_their_builds_in_different_slots() {
    // 15 identical CPUs: the build of one frame takes the same number of slots on each, so the
    // slot its horizon grows in is its start offset plus a constant. Without staggering all 15
    // grew in the same slot.
    let (frame, cpus) = (1000, 15);
    let mut p = planner(cpus, 100, frame, Policy::Bss);
    let mut last: Vec<u64> = p.cpus().iter().map(|c| c.horizon_end()).collect();
    let mut growths = 0;
    for s in 0..3 * frame {
        p.step(s, &[]).expect("in order");
        let now: Vec<u64> = p.cpus().iter().map(|c| c.horizon_end()).collect();
        let grown = now.iter().zip(&last).filter(|(a, b)| a > b).count();
        assert!(grown <= 1, "slot {s}: {grown} CPUs completed a build");
        growths += grown;
        last = now;
    }
    // Frames 2, 3 and 4 were completed on every CPU during frames 0, 1 and 2.
    assert_eq!(growths, 3 * cpus);
}

#[test]
fn every_cpu_keeps_the_current_and_next_frame_complete_and_misses_nothing() {
    for (cpus, n, frame) in [
        (1, 2, 2),
        (2, 1, 3),
        (7, 5, 10),
        (15, 10, 60),
        (64, 20, 100),
    ] {
        for policy in Policy::ALL {
            let mut p = planner(cpus, n, frame, policy);
            for s in 0..5 * frame {
                p.step(s, &[]).expect("in order");
                let k = s / frame;
                for (i, c) in p.cpus().iter().enumerate() {
                    let end = c.horizon_end();
                    let ctx = format!("{cpus} CPUs, frame {frame}, {policy}, slot {s}, CPU {i}");
                    assert!(
                        end == (k + 2) * frame || end == (k + 3) * frame,
                        "{ctx}: horizon ends at {end}"
                    );
                    if s % frame == frame - 1 {
                        assert_eq!(end, (k + 3) * frame, "{ctx}: frame k+2 not built in time");
                    }
                    let ivs: Vec<_> = c.intervals().collect();
                    assert!(
                        ivs[0].start <= s && s < ivs[0].end,
                        "{ctx}: current interval"
                    );
                    assert!(
                        ivs.windows(2).all(|w| w[0].end == w[1].start),
                        "{ctx}: intervals not contiguous"
                    );
                    assert_eq!(ivs.last().map(|iv| iv.end), Some(end), "{ctx}: cover");
                }
                let misses = p
                    .events()
                    .iter()
                    .filter(|(_, e)| matches!(e, JobEvent::Miss { .. }))
                    .count();
                assert_eq!(misses, 0, "{cpus} CPUs, frame {frame}, {policy}, slot {s}");
            }
        }
    }
}

/// Slots in `from..to` whose decision on CPU `cpu` runs `task`, stepping `p` through them (and
/// asserting no guaranteed job misses).
fn runs_of(p: &mut Planner, cpu: usize, task: usize, from: u64, to: u64) -> Vec<u64> {
    let mut runs = Vec::new();
    for t in from..to {
        let d = p.step(t, &[]).expect("in order");
        if matches!(d[cpu].run, Run::Job { task: x, .. } if x == task) {
            runs.push(t);
        }
        let misses = p
            .events()
            .iter()
            .filter(|(_, e)| matches!(e, JobEvent::Miss { .. }));
        assert_eq!(misses.count(), 0, "slot {t}");
    }
    runs
}

#[test]
fn a_periodic_task_joins_from_the_first_frame_its_cpu_has_not_started_building() {
    // Admitted after step(s), s in frame k at offset o = s mod F, on CPU i of n: that CPU starts
    // building frame k+2 at offset ⌊i·⌊F/2⌋/n⌋ (stagger_build). Before it, nothing of k+2
    // exists and the whole frame is built with the task: it joins k+2. From it on, the build
    // in progress is finished with the old template (or is done): it joins k+3. The reply's
    // bound is that frame's first slot; the task runs in no slot before it and in each period
    // from it on (wcet 1, period F: once per frame).
    const NEW: usize = 1000;
    for (cpus, n, frame) in [(2, 1, 10), (3, 2, 20), (5, 3, 30), (4, 1, 7)] {
        for i in 0..cpus {
            let offset = i as u64 * (frame / 2) / cpus as u64;
            // before the first step: frames 0 and 1 exist, frame 2 is not started
            let mut p = planner(cpus, n, frame, Policy::Bss);
            let got = p.admit_periodic(NEW, 1, frame, Placement::Only(i));
            assert_eq!(
                got,
                Admission::Accepted {
                    cpu: i,
                    bound: 2 * frame
                }
            );
            for s in 0..2 * frame {
                let ctx =
                    format!("{cpus} CPUs, frame {frame}, CPU {i} (offset {offset}), slot {s}");
                let mut p = planner(cpus, n, frame, Policy::Bss);
                for t in 0..=s {
                    p.step(t, &[]).expect("in order");
                }
                let (k, o) = (s / frame, s % frame);
                let from = if o < offset { k + 2 } else { k + 3 } * frame;
                let got = p.admit_periodic(NEW, 1, frame, Placement::Only(i));
                assert_eq!(
                    got,
                    Admission::Accepted {
                        cpu: i,
                        bound: from
                    },
                    "{ctx}"
                );
                let runs = runs_of(&mut p, i, NEW, s + 1, from + 2 * frame);
                assert_eq!(runs.len(), 2, "{ctx}: ran in {runs:?}");
                assert!(
                    (from..from + frame).contains(&runs[0]) && runs[1] >= from + frame,
                    "{ctx}: from {from}, ran in {runs:?}"
                );
            }
        }
    }
}
