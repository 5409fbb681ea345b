//! Differential test: the planner against a slow, obviously-correct reference simulator that
//! keeps no spare capacities at all. Every slot the reference rebuilds the as-late-as-possible
//! schedule of all remaining guaranteed work from scratch (backwards from the horizon end, latest
//! deadline first) and reads its decisions off it:
//! - a slot is *free* iff the ALAP schedule leaves it empty (slot shifting's `sc(I_cur) > 0`);
//! - bss: soft job if one is queued and the slot is free, else the EDF job, else be/idle;
//! - dpm: the same, but with nothing ready the CPU sleeps for the run of free slots from now
//!   (Algorithm 2's duration);
//! - a firm job (c, d) is accepted iff the ALAP schedule has ≥ c free slots in [now, d); a DPM
//!   idle period goes on iff those c slots also exist in [idle_until, d).
//!
//! Jobs run exactly their WCET, so both sides see identical observations.

use proptest::prelude::*;
use scx_tt::planner::offline::Job;
use scx_tt::planner::runtime::CpuInput;
use scx_tt::planner::{
    Admission, Freqs, JobEvent, Observation, Placement, Planner, PlannerConfig, Policy, Run,
};

const FRAME: u64 = 40;
const PERIODS: [u64; 4] = [8, 10, 20, 40];

#[derive(Clone, Debug)]
struct RefJob {
    task: usize,
    release: u64,
    deadline: u64,
    left: u64,
}

struct Reference {
    template: Vec<Job>,
    jobs: Vec<RefJob>,
    soft: std::collections::VecDeque<(usize, u64)>,
    idle_until: u64,
    frames: u64,
    policy: Policy,
}

impl Reference {
    fn new(mut template: Vec<Job>, policy: Policy) -> Self {
        template.sort_by_key(|j| (j.release, j.deadline));
        let mut r = Reference {
            template,
            jobs: Vec::new(),
            soft: Default::default(),
            idle_until: 0,
            frames: 0,
            policy,
        };
        r.add_frame();
        r.add_frame();
        r
    }

    fn add_frame(&mut self) {
        let base = self.frames * FRAME;
        for j in &self.template {
            self.jobs.push(RefJob {
                task: j.task,
                release: base + j.release,
                deadline: base + j.deadline,
                left: j.wcet,
            });
        }
        self.frames += 1;
    }

    fn horizon(&self) -> u64 {
        self.frames * FRAME
    }

    /// `free[t - now]`: slot t is empty in the ALAP schedule of all remaining work.
    fn alap_free(&self, now: u64) -> Vec<bool> {
        let end = self.horizon();
        let mut left: Vec<(u64, u64)> = self.jobs.iter().map(|j| (j.deadline, j.left)).collect();
        let mut free = vec![true; (end - now) as usize];
        for t in (now..end).rev() {
            let pick = left
                .iter_mut()
                .filter(|(d, l)| *d > t && *l > 0)
                .max_by_key(|(d, _)| *d);
            if let Some((_, l)) = pick {
                *l -= 1;
                free[(t - now) as usize] = false;
            }
        }
        free
    }

    /// Decides slot `s`: (run, idle_until).
    fn decide(&mut self, s: u64) -> (Run, Option<u64>) {
        if s > 0 && s.is_multiple_of(FRAME) {
            self.add_frame();
        }
        self.jobs.retain(|j| j.left > 0);
        if s < self.idle_until {
            return (Run::Idle, Some(self.idle_until));
        }
        let free = self.alap_free(s);
        if let Some(&(task, _)) = self.soft.front() {
            if free[0] {
                let front = self.soft.front_mut().unwrap();
                front.1 -= 1;
                if front.1 == 0 {
                    self.soft.pop_front();
                }
                return (Run::Soft { task }, None);
            }
        }
        let edf = self
            .jobs
            .iter_mut()
            .filter(|j| j.release <= s && j.left > 0)
            .min_by_key(|j| j.deadline);
        if let Some(j) = edf {
            j.left -= 1;
            return (
                Run::Job {
                    task: j.task,
                    kind: if j.task >= 100 {
                        scx_tt::planner::JobKind::Firm
                    } else {
                        scx_tt::planner::JobKind::Periodic
                    },
                    job: 0,
                },
                None,
            );
        }
        match self.policy {
            Policy::Dpm => {
                let run = free.iter().take_while(|f| **f).count() as u64;
                self.idle_until = s + run.max(1);
                (Run::Idle, Some(self.idle_until))
            }
            _ => (Run::Be, None),
        }
    }

    fn admit(&mut self, now: u64, task: usize, c: u64, d: u64) -> bool {
        let d = d.min(self.horizon());
        if d <= now {
            return false;
        }
        let free = self.alap_free(now);
        let in_window = |from: u64| {
            free[(from - now) as usize..(d - now) as usize]
                .iter()
                .filter(|f| **f)
                .count() as u64
        };
        if in_window(now) < c {
            return false;
        }
        if self.idle_until > now && (self.idle_until >= d || in_window(self.idle_until) < c) {
            self.idle_until = now;
        }
        self.jobs.push(RefJob {
            task,
            release: now,
            deadline: d,
            left: c,
        });
        true
    }
}

fn tasks() -> impl Strategy<Value = Vec<Job>> {
    prop::collection::vec((0usize..PERIODS.len(), 1u64..5), 1..5).prop_map(|ts| {
        let mut jobs = Vec::new();
        let mut demand = 0;
        for (t, &(pi, c)) in ts.iter().enumerate() {
            let p = PERIODS[pi];
            let c = c.min(p);
            if demand + c * (FRAME / p) > FRAME * 8 / 10 {
                continue;
            }
            demand += c * (FRAME / p);
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
        jobs
    })
}

fn differ(
    jobs: Vec<Job>,
    arrivals: &[(u64, u64, Option<u64>)],
    policy: Policy,
) -> Result<(), String> {
    let mut p = Planner::new(
        &[CpuInput {
            jobs: jobs.clone(),
            has_be: true,
        }],
        FRAME,
        PlannerConfig {
            policy,
            freqs: Freqs::max_only(),
            slot_ns: 1000,
        },
    );
    let mut r = Reference::new(jobs, policy);
    let mut obs = [Observation {
        ran_ns: 1000,
        done: false,
    }];
    let mut left: std::collections::HashMap<usize, u64> = Default::default();
    let wcets: std::collections::HashMap<usize, u64> =
        r.template.iter().map(|j| (j.task, j.wcet)).collect();
    let mut extra: std::collections::HashMap<usize, u64> = Default::default();
    for s in 0..4 * FRAME {
        let d = p.step(s, &obs).map_err(|e| e.to_string())?[0];
        if let Some(e) = p
            .events()
            .iter()
            .find(|e| matches!(e.1, JobEvent::Miss { .. }))
        {
            return Err(format!("slot {s}: {e:?}"));
        }
        let want = r.decide(s);
        // The reference has no job numbers: compare who runs, not which instance.
        let run = match d.run {
            Run::Job { task, kind, .. } => Run::Job { task, kind, job: 0 },
            other => other,
        };
        if (run, d.idle_until) != want {
            return Err(format!(
                "slot {s}: planner {:?}/{:?}, reference {want:?}",
                d.run, d.idle_until
            ));
        }
        obs[0] = match d.run {
            Run::Job { task, .. } | Run::Soft { task } => {
                let l = left
                    .entry(task)
                    .or_insert_with(|| extra.get(&task).or(wcets.get(&task)).copied().unwrap_or(1));
                *l -= 1;
                let done = *l == 0;
                if done {
                    left.remove(&task);
                }
                Observation { ran_ns: 1000, done }
            }
            _ => Observation {
                ran_ns: 0,
                done: false,
            },
        };
        for (i, &(at, c, dl)) in arrivals.iter().enumerate() {
            if at != s {
                continue;
            }
            let task = 100 + i;
            extra.insert(task, c);
            match dl {
                None => {
                    p.submit_soft(task, c, None);
                    r.soft.push_back((task, c));
                }
                Some(rel) => {
                    let got = matches!(
                        p.admit_firm(task, c, s + rel, Placement::Any),
                        Admission::Accepted { .. }
                    );
                    let want = r.admit(s + 1, task, c, s + rel);
                    if got != want {
                        return Err(format!(
                            "slot {s}: firm ({c}, {}) planner {got}, reference {want}",
                            s + rel
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn bss_matches_the_reference_slot_by_slot(
        jobs in tasks(),
        arrivals in prop::collection::vec((0u64..3 * FRAME, 1u64..6, prop::option::weighted(0.8, 2u64..FRAME)), 0..10),
    ) {
        differ(jobs, &arrivals, Policy::Bss).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn dpm_matches_the_reference_slot_by_slot(
        jobs in tasks(),
        arrivals in prop::collection::vec((0u64..3 * FRAME, 1u64..6, prop::option::weighted(0.8, 2u64..FRAME)), 0..10),
    ) {
        differ(jobs, &arrivals, Policy::Dpm).map_err(TestCaseError::fail)?;
    }
}
