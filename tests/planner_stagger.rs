//! The build of the frame after next is staggered across CPUs: every CPU still holds the
//! current and the next frame complete at every slot, but the CPUs do not start (and therefore do
//! not finish) their builds in the same slot, so no single `step` pays for every CPU's first,
//! cache-cold build slot.

use scx_tt::planner::cpu::JobEvent;
use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::CpuInput;
use scx_tt::planner::{Freqs, Planner, PlannerConfig, Policy};

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
