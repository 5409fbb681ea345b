//! Reading the trace: ftrace lines → events, and which threads are the clock and per-CPU kernel threads.

/// One scheduling event of the kernel's trace.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Switch {
        prev_pid: u32,
        prev_comm: String,
        /// `R`/`R+` = preempted while runnable; anything else = blocked or exiting.
        prev_state: String,
        next_pid: u32,
        next_comm: String,
        /// the kernel's prio of the next task: below 100 in the RT or deadline class (a task
        /// priority-inherited from an RT waiter is there too, out of sched_ext's hands)
        next_prio: u32,
    },
    Wakeup {
        pid: u32,
        /// the CPU the task was woken onto (`target_cpu`)
        target: u32,
    },
    /// `sched_migrate_task`: the kernel moved `pid` from `orig` to `dest` (diagnostics only:
    /// how a foreign task reached a managed CPU)
    Migrate {
        pid: u32,
        orig: u32,
        dest: u32,
    },
    Fork {
        parent: u32,
        child: u32,
    },
    /// `witness_mark TEXT` of the guest (ftrace's trace_marker): `pause` / `resume` bracket a
    /// window the scenario takes the scheduler away on purpose (a restart), not judged.
    Mark(String),
    /// A BPF timer's hrtimer expired on the event's CPU (`hrtimer_expire_entry` with
    /// `function=bpf_timer_cb`): the moment the scheduler's slot or guard-band callback ran, as
    /// the kernel saw it.
    Timer,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub ts_ns: u64,
    pub cpu: u32,
    pub kind: Kind,
}

/// `seconds.micros` of the trace clock, in ns.
pub(super) fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let sec: u64 = sec.parse().ok()?;
    let frac_ns: u64 = format!("{frac:0<9}").parse().ok()?;
    sec.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// The value of `key=` in `s`, up to the next ` next_key=` (or the end): comms may hold spaces.
pub(super) fn field<'a>(s: &'a str, key: &str, next: Option<&str>) -> Option<&'a str> {
    let start = s.find(&format!("{key}="))? + key.len() + 1;
    let rest = &s[start..];
    let end = match next {
        Some(n) => rest.find(&format!(" {n}="))?,
        None => rest.len(),
    };
    Some(rest[..end].trim())
}

pub(super) fn num(s: &str, key: &str, next: Option<&str>) -> Option<u32> {
    field(s, key, next)?.parse().ok()
}

/// One line of ftrace's text output; `Ok(None)` for events the witness does not use.
pub fn parse_line(line: &str) -> std::result::Result<Option<Event>, String> {
    let bad = || format!("not an ftrace event line: {line:?}");
    // "<comm>-<pid> [CPU] FLAGS TS: EVENT: FIELDS"
    let (head, rest) = if let Some((head, text)) = line.split_once(": tracing_mark_write: ") {
        (head, format!("mark: {}", text.trim()))
    } else if let Some((head, args)) = line.split_once(": hrtimer_expire_entry: ") {
        (head, format!("hrtimer: {}", args.trim()))
    } else {
        let (head, rest) = line.split_once(": sched_").ok_or_else(bad)?;
        (head, rest.to_string())
    };
    let mut toks = head.split_whitespace().rev();
    let ts = toks.next().unwrap_or("");
    let ts_ns = parse_ts(ts).ok_or_else(bad)?;
    let _flags = toks.next();
    let cpu = toks
        .next()
        .and_then(|t| t.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
        .ok_or_else(bad)?;
    let (name, args) = rest.split_once(": ").ok_or_else(bad)?;
    let kind = match name {
        "mark" => match args.strip_prefix("tt-witness ") {
            Some(m) => Kind::Mark(m.to_string()),
            None => return Ok(None),
        },
        "hrtimer" => match field(args, "function", Some("now")) {
            Some("bpf_timer_cb") => Kind::Timer,
            Some(_) => return Ok(None),
            None => return Err(bad()),
        },
        "switch" => Kind::Switch {
            prev_comm: field(args, "prev_comm", Some("prev_pid"))
                .ok_or_else(bad)?
                .into(),
            prev_pid: num(args, "prev_pid", Some("prev_prio")).ok_or_else(bad)?,
            prev_state: field(args, "prev_state", None)
                .and_then(|v| v.split(" ==>").next())
                .ok_or_else(bad)?
                .into(),
            next_comm: field(args, "next_comm", Some("next_pid"))
                .ok_or_else(bad)?
                .into(),
            next_pid: num(args, "next_pid", Some("next_prio")).ok_or_else(bad)?,
            next_prio: field(args, "next_prio", None)
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .ok_or_else(bad)?,
        },
        "wakeup" | "wakeup_new" => Kind::Wakeup {
            pid: num(args, "pid", Some("prio")).ok_or_else(bad)?,
            target: field(args, "target_cpu", None)
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .ok_or_else(bad)?,
        },
        "migrate_task" => Kind::Migrate {
            pid: num(args, "pid", Some("prio")).ok_or_else(bad)?,
            orig: num(args, "orig_cpu", Some("dest_cpu")).ok_or_else(bad)?,
            dest: field(args, "dest_cpu", None)
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .ok_or_else(bad)?,
        },
        "process_fork" => Kind::Fork {
            parent: num(args, "pid", Some("child_comm")).ok_or_else(bad)?,
            child: num(args, "child_pid", None).ok_or_else(bad)?,
        },
        _ => return Ok(None),
    };
    Ok(Some(Event { ts_ns, cpu, kind }))
}

pub fn parse(text: &str) -> std::result::Result<Vec<Event>, String> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(e) = parse_line(line).map_err(|e| format!("line {}: {e}", i + 1))? {
            events.push(e);
        }
    }
    // per-CPU buffers are merged by time stamp; keep that order (stable for equal stamps)
    events.sort_by_key(|e| e.ts_ns);
    Ok(events)
}

/// scx_tt's slot clock thread of `cpu` (`--slot-clock rt`, src/sched/rt_clock.rs): `tt-clock/1`.
/// Judged before the per-CPU kthread rule, which its name would otherwise pass.
pub fn is_clock_thread_of(comm: &str, cpu: u32) -> bool {
    comm.strip_prefix("tt-clock/")
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n == cpu)
}

/// A per-CPU kernel thread of `cpu` by its name: `ksoftirqd/1`, `migration/1`, `kworker/1:2H`.
pub fn is_percpu_kthread_of(comm: &str, cpu: u32) -> bool {
    let Some((_, tail)) = comm.rsplit_once('/') else {
        return false;
    };
    let n = tail.split(':').next().unwrap_or("");
    n.parse::<u32>().is_ok_and(|n| n == cpu)
}
