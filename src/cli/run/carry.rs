//! The BPF counters of a run over restarts: each scheduler a restart loads counts from zero, so
//! the run keeps the totals of the schedulers that already exited and adds the current one's.
#![cfg_attr(not(feature = "bpf"), allow(dead_code))]

use scx_tt::accounting::{CpuCounters, ProgStats, TaskCounters};
use std::collections::BTreeMap;

/// Per task (plan order), per managed CPU, per BPF program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    pub tasks: Vec<TaskCounters>,
    pub cpus: BTreeMap<u32, CpuCounters>,
    pub progs: Vec<ProgStats>,
}

impl Counters {
    /// The sum of `self` (schedulers that exited) and `now` (the current one).
    pub fn plus(&self, now: &Counters) -> Counters {
        let n = self.tasks.len().max(now.tasks.len());
        let tasks = (0..n)
            .map(|i| {
                let (a, b) = (self.tasks.get(i), now.tasks.get(i));
                add_task(
                    a.copied().unwrap_or_default(),
                    b.copied().unwrap_or_default(),
                )
            })
            .collect();
        let mut cpus = self.cpus.clone();
        for (&cpu, c) in &now.cpus {
            let sum = cpus.get(&cpu).copied().unwrap_or_default() + *c;
            cpus.insert(cpu, sum);
        }
        let mut progs = self.progs.clone();
        for p in &now.progs {
            match progs.iter_mut().find(|q| q.name == p.name) {
                Some(q) => {
                    q.run_cnt += p.run_cnt;
                    q.run_time_ns += p.run_time_ns;
                    q.ns_per_run = q.run_time_ns.checked_div(q.run_cnt).unwrap_or(0);
                }
                None => progs.push(p.clone()),
            }
        }
        Counters { tasks, cpus, progs }
    }
}

fn add_task(a: TaskCounters, b: TaskCounters) -> TaskCounters {
    // every field named: a counter added to the struct must be summed here too
    let TaskCounters {
        run_ns,
        inside_ns,
        jobs_done,
        jobs_carried,
        reclaimed_ns,
    } = b;
    TaskCounters {
        run_ns: a.run_ns + run_ns,
        inside_ns: a.inside_ns + inside_ns,
        jobs_done: a.jobs_done + jobs_done,
        jobs_carried: a.jobs_carried + jobs_carried,
        reclaimed_ns: a.reclaimed_ns + reclaimed_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(name: &str, run_cnt: u64, run_time_ns: u64) -> ProgStats {
        ProgStats {
            name: name.into(),
            run_cnt,
            run_time_ns,
            ns_per_run: run_time_ns.checked_div(run_cnt).unwrap_or(0),
        }
    }

    #[test]
    fn counters_of_two_schedulers_add_up_per_task_cpu_and_program() {
        let cpu = |ticks, tick_cost_ns| CpuCounters {
            ticks,
            tick_cost_ns,
            ..CpuCounters::default()
        };
        let before = Counters {
            tasks: vec![TaskCounters {
                run_ns: 10,
                inside_ns: 8,
                jobs_done: 2,
                jobs_carried: 1,
                reclaimed_ns: 0,
            }],
            cpus: BTreeMap::from([(1, cpu(100, 1_000))]),
            progs: vec![prog("dispatch", 10, 1_000)],
        };
        let now = Counters {
            tasks: vec![
                TaskCounters {
                    run_ns: 5,
                    inside_ns: 5,
                    jobs_done: 3,
                    jobs_carried: 2,
                    reclaimed_ns: 0,
                },
                TaskCounters {
                    run_ns: 1,
                    inside_ns: 0,
                    jobs_done: 0,
                    jobs_carried: 0,
                    reclaimed_ns: 0,
                },
            ],
            cpus: BTreeMap::from([(1, cpu(50, 2_000)), (2, cpu(7, 70))]),
            progs: vec![prog("dispatch", 30, 1_000), prog("enqueue", 1, 9)],
        };
        let sum = before.plus(&now);
        assert_eq!(
            sum.tasks,
            vec![
                TaskCounters {
                    run_ns: 15,
                    inside_ns: 13,
                    jobs_done: 5,
                    jobs_carried: 3,
                    reclaimed_ns: 0,
                },
                TaskCounters {
                    run_ns: 1,
                    inside_ns: 0,
                    jobs_done: 0,
                    jobs_carried: 0,
                    reclaimed_ns: 0,
                }
            ]
        );
        assert_eq!(sum.cpus[&1], cpu(150, 3_000));
        assert_eq!(sum.cpus[&2], cpu(7, 70));
        // 40 runs in 2000 ns: 50 ns per run over both schedulers
        assert_eq!(
            sum.progs,
            vec![prog("dispatch", 40, 2_000), prog("enqueue", 1, 9)]
        );
        assert_eq!(Counters::default().plus(&now), now);
    }
}
