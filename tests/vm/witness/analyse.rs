//! The judgement of every judged slot: owners, foreign time, be starts over a runnable owner.

use super::*;

impl Frame {
    pub(super) fn analyse_judged(&self, events: &[Event]) -> Report {
        let mut r = Report {
            events: events.len(),
            ..Report::default()
        };
        // the task of every thread: found at start, or forked by a thread of the task
        let mut task_of = self.tids.clone();
        for e in events {
            if let Kind::Fork { parent, child } = e.kind {
                if let Some(t) = task_of.get(&parent).cloned() {
                    task_of.insert(child, t);
                }
            }
        }
        let class = |pid: u32, at: u64| -> Option<(&str, &String)> {
            let t = task_of.get(&pid)?;
            if self
                .joining
                .get(t)
                .is_some_and(|&(from, until)| at >= from && at < until)
            {
                return Some(("leaving", t));
            }
            if self.joined.get(t).is_some_and(|&j| at < j)
                || self.left.get(t).is_some_and(|&(_, until)| at >= until)
            {
                return None;
            }
            if self.left.get(t).is_some_and(|&(from, _)| at >= from) {
                return Some(("leaving", t));
            }
            Some((self.tasks.get(t)?.0.as_str(), t))
        };
        for name in self.tasks.iter().filter(|t| t.1 .0 == "tt").map(|t| t.0) {
            r.tt.insert(name.clone(), TaskFig::default());
        }
        let managed: HashSet<u32> = self.managed.iter().copied().collect();
        let fires = clock_events(events);
        r.bpf_timers = events.iter().filter(|e| e.kind == Kind::Timer).count();
        r.timers = fires.values().map(Vec::len).sum();
        for e in events {
            if let Kind::Switch { next_comm, .. } = &e.kind {
                if is_clock_thread_of(next_comm, e.cpu) {
                    *r.clock_runs.entry(e.cpu).or_default() += 1;
                }
            }
        }
        // how late the scheduler's timer came after each recorded boundary (a slot's start)
        let tick_late = |cpu: u32, slot: u64| -> u64 {
            self.tick_fire(&fires, cpu, slot)
                .map_or(0, |t| t.saturating_sub(self.slot_start(slot)))
        };
        let mut keys: Vec<_> = self.owners.keys().copied().collect();
        keys.sort();
        for &(cpu, slot) in &keys {
            if slot > 0 && self.tick_fire(&fires, cpu, slot).is_some() {
                r.tick_late.push(tick_late(cpu, slot));
            }
        }
        let mut foreign: BTreeMap<(u32, String, u32), u64> = BTreeMap::new();
        let mut higher: BTreeMap<(u32, String, u32), u64> = BTreeMap::new();
        // (cpu, pid) -> (segment start, first judged piece) per foreign run
        let mut foreign_runs: BTreeMap<(u32, u32), Vec<(u64, u64)>> = BTreeMap::new();
        let mut owner_ns: HashMap<(u32, u64), u64> = HashMap::new();
        for seg in segments(events, self.end_ns) {
            let on_managed = managed.contains(&seg.cpu);
            for (slot, a, b) in self.pieces(seg.start, seg.end) {
                let ns = b - a;
                // only slots with a record are judged (not those a late tick skipped, nor a
                // restart's gap, when no scheduler was attached)
                if on_managed && !self.owners.contains_key(&(seg.cpu, slot)) {
                    continue;
                }
                match class(seg.pid, a) {
                    Some(("tt", t)) => {
                        let f = r.tt.get_mut(t).expect("tt task");
                        let own_cpu = self.tasks.get(t).and_then(|x| x.1);
                        if !on_managed
                            && !own_cpu.is_some_and(|c| self.owners.contains_key(&(c, slot)))
                        {
                            continue;
                        }
                        f.run_ns += ns;
                        let owner = self.owners.get(&(seg.cpu, slot));
                        if !on_managed {
                            f.off_managed_ns += ns;
                        } else if owner.is_some_and(|o| o.as_ref() == Some(t)) {
                            f.inside_ns += ns;
                            *owner_ns.entry((seg.cpu, slot)).or_default() += ns;
                        } else if owner.is_some() {
                            f.outside_ns += ns;
                            // the ending owner past its boundary, until the scheduler's
                            // timer (guard band or slot tick) fired and a kick's time after
                            // (a run that crossed the boundary, of the slot before's owner; a
                            // timer later than the slot explains nothing)
                            let bnd = self.slot_start(slot);
                            let ended = slot > 0
                                && a == bnd
                                && self.owners.get(&(seg.cpu, slot - 1)) == Some(&Some(t.clone()));
                            let fire =
                                first_fire(&fires, seg.cpu, bnd.saturating_sub(self.guard_ns))
                                    .filter(|&x| x < self.slot_start(slot + 1));
                            if let (true, Some(fire)) = (ended, fire) {
                                let until = fire.max(bnd) + KICK_NS;
                                f.late_timer_ns += b.min(until) - a;
                                if b > fire {
                                    r.kick.push(b - fire);
                                }
                            }
                        }
                    }
                    // a be-class task owns a slot only as an adaptive task holding a
                    // reservation (docs/adaptive.md): its run there is the record's owner time
                    Some((_, t)) => {
                        if on_managed && self.owners.get(&(seg.cpu, slot)) == Some(&Some(t.clone()))
                        {
                            *owner_ns.entry((seg.cpu, slot)).or_default() += ns;
                        }
                    }
                    None if !on_managed || seg.pid == 0 => {}
                    None if is_clock_thread_of(&seg.comm, seg.cpu) => {
                        *r.clock_ns.entry(seg.cpu).or_default() += ns
                    }
                    None if is_percpu_kthread_of(&seg.comm, seg.cpu) => {
                        *r.kthread_ns.entry(seg.cpu).or_default() += ns
                    }
                    None if self.kthreads.contains(&seg.pid) => {
                        *r.other_kthread_ns.entry(seg.cpu).or_default() += ns
                    }
                    None if self.allowed.contains(&seg.pid) => {
                        *r.allowed_ns.entry(seg.cpu).or_default() += ns
                    }
                    None if seg.comm == "scx_tt" => *r.loader_ns.entry(seg.cpu).or_default() += ns,
                    // switched in in the RT or deadline class: out of sched_ext's hands (an
                    // RT task whose affinity allows the CPU, or a task priority-inherited
                    // from an RT waiter and pulled here by RT balancing; BPF sends it away
                    // as soon as it is back in sched_ext: its `evictions`)
                    None if seg.prio < 100 => {
                        *r.higher_class_ns.entry(seg.cpu).or_default() += ns;
                        *higher
                            .entry((seg.cpu, seg.comm.clone(), seg.pid))
                            .or_default() += ns;
                    }
                    None => {
                        *r.foreign_ns.entry(seg.cpu).or_default() += ns;
                        *foreign
                            .entry((seg.cpu, seg.comm.clone(), seg.pid))
                            .or_default() += ns;
                        let runs = foreign_runs.entry((seg.cpu, seg.pid)).or_default();
                        if runs.last().is_none_or(|&(s, _)| s != seg.start) {
                            runs.push((seg.start, a));
                        }
                    }
                }
            }
        }
        for &cpu in &self.managed {
            r.foreign_ns.entry(cpu).or_default();
        }
        let mut top: Vec<_> = higher.into_iter().collect();
        top.sort_by_key(|x| std::cmp::Reverse(x.1));
        r.higher_class_top = top
            .into_iter()
            .take(5)
            .map(|((c, comm, pid), ns)| (c, comm, pid, ns))
            .collect();
        let mut top: Vec<_> = foreign.into_iter().collect();
        top.sort_by_key(|x| std::cmp::Reverse(x.1));
        r.foreign_top = top
            .into_iter()
            .take(5)
            .map(|((c, comm, pid), ns)| (c, comm, pid, ns))
            .collect();
        r.foreign_how = r
            .foreign_top
            .iter()
            .map(|(cpu, comm, pid, _)| {
                let runs = &foreign_runs[&(*cpu, *pid)];
                self.foreign_how(events, *cpu, comm, *pid, runs)
            })
            .collect();
        // record agreement
        let mut switches: HashMap<(u32, u64), u64> = HashMap::new();
        for e in events {
            if matches!(e.kind, Kind::Switch { .. })
                && e.ts_ns >= self.t0_ns
                && e.ts_ns < self.end_ns
            {
                *switches.entry((e.cpu, self.slot_of(e.ts_ns))).or_default() += 1;
            }
        }
        let mut keys: Vec<_> = self.ran_ns.keys().copied().collect();
        keys.sort();
        for k in keys {
            let w = owner_ns.get(&k).copied().unwrap_or(0);
            let d = self.ran_ns[&k] as i64 - w as i64;
            if k.1 == 0 {
                r.slot0.push((k.0, d));
            } else {
                r.diffs.push((
                    k.0,
                    k.1,
                    d,
                    switches.get(&k).copied().unwrap_or(0),
                    tick_late(k.0, k.1) + tick_late(k.0, k.1 + 1),
                ));
            }
        }
        // slots of the window without a record
        let last = self.slot_of(self.end_ns.max(self.t0_ns + 1) - 1);
        for &cpu in &self.managed {
            r.unrecorded_slots += (0..last)
                .filter(|s| !self.owners.contains_key(&(cpu, *s)))
                .count();
        }
        self.be_starts(events, &task_of, &fires, &mut r);
        r
    }

    /// Replays the events: who waits runnable, and every switch to a be thread on a managed CPU.
    pub(super) fn be_starts(
        &self,
        events: &[Event],
        task_of: &HashMap<u32, String>,
        fires: &HashMap<u32, Vec<u64>>,
        r: &mut Report,
    ) {
        let mut state: HashMap<u32, State> = HashMap::new();
        // (a tt start: index into tt_over_owner, else into be_over_owner; cpu)
        let mut pending: Option<(bool, usize, u32)> = None;
        let managed: HashSet<u32> = self.managed.iter().copied().collect();
        for e in events {
            match &e.kind {
                Kind::Wakeup { pid, .. } => {
                    let s = state.entry(*pid).or_insert(State::Blocked);
                    if *s == State::Blocked {
                        *s = State::Waiting(e.ts_ns);
                    }
                }
                Kind::Fork { .. } | Kind::Mark(_) | Kind::Timer | Kind::Migrate { .. } => {}
                Kind::Switch {
                    prev_pid,
                    prev_state,
                    next_pid,
                    next_comm: _,
                    ..
                } => {
                    if let Some((tt, i, cpu)) = pending {
                        if cpu == e.cpu {
                            let b = if tt {
                                &mut r.tt_over_owner[i]
                            } else {
                                &mut r.be_over_owner[i]
                            };
                            b.ran_ns = e.ts_ns - b.ts_ns;
                            pending = None;
                        }
                    }
                    let prev = if prev_state.starts_with('R') {
                        State::Waiting(e.ts_ns)
                    } else {
                        State::Blocked
                    };
                    if *prev_pid != 0 {
                        state.insert(*prev_pid, prev);
                    }
                    state.insert(*next_pid, State::Running);
                    if !managed.contains(&e.cpu) || e.ts_ns < self.t0_ns || e.ts_ns >= self.end_ns {
                        continue;
                    }
                    let Some(be) = task_of.get(next_pid) else {
                        continue;
                    };
                    let class = self.tasks.get(be).map(|t| t.0.as_str());
                    let is_tt = class == Some("tt");
                    if class != Some("be") && !is_tt {
                        continue;
                    }
                    let slot = self.slot_of(e.ts_ns);
                    let Some(Some(owner)) = self.owners.get(&(e.cpu, slot)) else {
                        continue;
                    };
                    if is_tt && owner == be {
                        continue;
                    }
                    // an owner whose threads are not (yet, or any more) in the plan does not
                    // wait for its slot: joining, before it joined, leaving or left
                    let t = e.ts_ns;
                    if self
                        .joining
                        .get(owner)
                        .is_some_and(|&(a, b)| t >= a && t < b)
                        || self.joined.get(owner).is_some_and(|&j| t < j)
                        || self.left.get(owner).is_some_and(|&(a, _)| t >= a)
                    {
                        continue;
                    }
                    // the owner waits when one of its threads is runnable and none runs
                    let mut since: Option<u64> = None;
                    let mut running = false;
                    for (pid, t) in task_of {
                        if t != owner {
                            continue;
                        }
                        match state.get(pid) {
                            Some(State::Running) => running = true,
                            Some(State::Waiting(s)) => {
                                since = Some(since.map_or(*s, |x: u64| x.min(*s)))
                            }
                            _ => {}
                        }
                    }
                    let Some(since) = since.filter(|_| !running) else {
                        continue;
                    };
                    let waited = e.ts_ns - since;
                    let over = self.done.get(owner).is_some_and(|w| {
                        w.iter().any(|&(from, to)| from <= e.ts_ns && e.ts_ns < to)
                    });
                    if over {
                        if !is_tt {
                            r.be_after_done += 1;
                        }
                        continue;
                    }
                    let be_class = self.be_class.get(owner).is_some_and(|w| {
                        w.iter().any(|&(from, to)| from <= e.ts_ns && e.ts_ns < to)
                    });
                    if be_class {
                        if !is_tt {
                            r.be_over_be_class += 1;
                        }
                        continue;
                    }
                    // the slot's tick: the kernel's timer trace, else the record's lateness
                    let start = self.slot_start(slot);
                    let tick = match self.tick_fire(fires, e.cpu, slot) {
                        Some(t) => t,
                        None => start + self.late_ns.get(&(e.cpu, slot)).copied().unwrap_or(0),
                    };
                    if e.ts_ns < tick {
                        if !is_tt {
                            r.be_before_tick += 1;
                        }
                        continue;
                    }
                    if waited < RACE_NS {
                        if !is_tt {
                            r.be_near_race += 1;
                        }
                        continue;
                    }
                    if !is_tt
                        && self.be_class.get(be).is_some_and(|w| {
                            !w.iter().any(|&(from, to)| from <= e.ts_ns && e.ts_ns < to)
                        })
                    {
                        r.adaptive_in_tt += 1;
                        continue;
                    }
                    let list = if is_tt {
                        &mut r.tt_over_owner
                    } else {
                        &mut r.be_over_owner
                    };
                    list.push(BeStart {
                        cpu: e.cpu,
                        slot,
                        ts_ns: e.ts_ns,
                        be: be.clone(),
                        owner: owner.clone(),
                        owner_waited_ns: waited,
                        ran_ns: 0,
                    });
                    pending = Some((is_tt, list.len() - 1, e.cpu));
                }
            }
        }
    }
}
