//! [`events_from_sim`]: the power policies' event stream of a simulator run, rebuilt from its
//! schedule log and the configuration.

use super::{slice_cpus, Event, ProcId, Timed};
use crate::demos::config::{Config, Slice};
use crate::demos::cpuset::CpuSet;
use crate::demos::sim::{process_models, LogLine, ProcessModel, SimOptions, SimResult};
use std::collections::HashMap;

/// Rebuilds the [`Event`]s of a [`crate::demos::simulate`] run from its schedule log: the simulator
/// reports process starts only, the rest follows from DEmOS's semantics (docs/demos.md).
///
/// - Windows start at `0, l0, l0+l1, ...` up to `result.end_ms` (inclusive unless every process
///   exited, then only if a process starts then); a window ends when the next one starts.
/// - A log line belongs to the slice of its window with the same CPUs (an error when two slices
///   of a window run on the same CPUs). Per slice, the SC partition's processes start at the
///   window start, one after the other, in configuration order; the rest are BE, from the
///   partition's cursor.
/// - A run ends at its budget, at its job's completion (`TT_SIM_WORK_MS`, tracked across
///   activations as the simulator does) or at the window end. An SC partition is done when its
///   last run ends (at once without a run); BE starts when every slice's SC is done, strictly
///   before the window end and the end of the run.
/// - Check: every line must start where the previous run of its slice ended (the first SC line
///   at the window start, the first BE line at the BE start); a log that does not fit is an
///   error naming the line (a process whose command appears twice in a slice's partitions can
///   be mistaken for the other).
///
/// Order at one instant: window end, the processes it stops (slice order); window start, SC
/// start; SC process ends and starts (slice order); BE start; BE process ends and starts.
pub fn events_from_sim(
    config: &Config,
    opts: &SimOptions,
    result: &SimResult,
) -> Result<Vec<Timed>, String> {
    let mut rb = Rebuild::new(config, opts, result);
    let log = &result.log;
    let end = result.end_ms;
    let mut li = 0;
    let (mut t0, mut w) = (0u64, 0usize);
    if config.windows.is_empty() {
        return Err("no window".into());
    }
    loop {
        if t0 > end
            || (t0 == end && result.all_exited && log.get(li).is_none_or(|l| l.time_ms != t0))
        {
            break;
        }
        let t1 = t0 + config.windows[w].length;
        let first = li;
        while li < log.len() && log[li].time_ms < t1 {
            li += 1;
        }
        if !rb.window(w, t0, &log[first..li])? {
            break;
        }
        t0 = t1;
        w = (w + 1) % config.windows.len();
    }
    if li < log.len() {
        return Err(format!("log line after the end of the run: {}", log[li]));
    }
    Ok(rb.into_timed())
}

/// The rebuild under way: the configuration and the run, the slices' CPUs, the processes'
/// progress, the BE cursors and the events so far.
struct Rebuild<'a> {
    config: &'a Config,
    result: &'a SimResult,
    cpus: Vec<Vec<CpuSet>>,
    index: HashMap<&'a str, usize>,
    models: Vec<Vec<ProcessModel>>,
    runs: Vec<Vec<RunState>>,
    be_cursor: Vec<usize>,
    // (time, group, slice rank, seq, event)
    evs: Vec<(u64, u8, usize, u8, Event)>,
}

/// The window being rebuilt: its index, start and end, the end of the run within it
/// (`horizon`), and the processes running at its end, which it stops.
struct Win {
    w: usize,
    t0: u64,
    t1: u64,
    horizon: u64,
    running_at_end: Vec<(usize, ProcId)>,
}

impl<'a> Rebuild<'a> {
    /// A rebuild before the first window: no process has run, every BE cursor at 0.
    fn new(config: &'a Config, opts: &SimOptions, result: &'a SimResult) -> Rebuild<'a> {
        Rebuild {
            config,
            result,
            cpus: slice_cpus(config, opts.all_cpus),
            index: config.partition_index(),
            models: process_models(config),
            runs: config
                .partitions
                .iter()
                .map(|p| vec![RunState::default(); p.processes.len()])
                .collect(),
            be_cursor: vec![0usize; config.partitions.len()],
            evs: Vec::new(),
        }
    }

    /// The events of window `w` starting at `t0` from its log `lines`; `false` when the run
    /// ends before the window does.
    fn window(&mut self, w: usize, t0: u64, lines: &[LogLine]) -> Result<bool, String> {
        let config = self.config;
        let end = self.result.end_ms;
        let t1 = t0 + config.windows[w].length;
        let mut win = Win {
            w,
            t0,
            t1,
            horizon: t1.min(end),
            running_at_end: Vec::new(),
        };
        if let Some(l) = lines.iter().find(|l| l.time_ms < t0) {
            return Err(format!("log line before its window start {t0}: {l}"));
        }
        self.evs
            .push((t0, 1, 0, 0, Event::WindowStart { window: w }));
        self.evs.push((t0, 1, 0, 1, Event::ScStart { window: w }));
        self.check_slices(w, lines)?;
        let slices = config.windows[w].slices();
        let wc = &self.cpus[w];
        let own: Vec<Vec<&LogLine>> = wc
            .iter()
            .map(|c| lines.iter().filter(|l| l.cpus == *c).collect())
            .collect();
        // per slice: the index of its first BE line, the SC end (None: not done)
        let mut sc_end: Vec<Option<u64>> = Vec::new();
        let mut be_from: Vec<usize> = Vec::new();
        for (s, slice) in slices.iter().enumerate() {
            let (done, k) = self.sc_runs(&mut win, s, slice, &own[s]);
            sc_end.push(done);
            be_from.push(k);
        }
        let be_start = sc_end
            .iter()
            .try_fold(t0, |m, e| e.map(|e| m.max(e)))
            // at the window start BE starts within the window start (also at the time limit)
            .filter(|&b| b < win.horizon || b == t0);
        if let Some(b) = be_start {
            self.evs.push((b, 3, 0, 0, Event::BeStart { window: w }));
        }
        for (s, slice) in slices.iter().enumerate() {
            self.be_runs(&mut win, s, slice, &own[s][be_from[s]..], be_start)?;
        }
        if t1 > end {
            return Ok(false);
        }
        self.end_window(win);
        Ok(true)
    }

    /// Refuses two slices of window `w` on the same CPUs and a log line on CPUs of no slice.
    fn check_slices(&self, w: usize, lines: &[LogLine]) -> Result<(), String> {
        let slices = self.config.windows[w].slices();
        let wc = &self.cpus[w];
        for (a, ca) in wc.iter().enumerate() {
            if wc[..a].contains(ca) {
                return Err(format!(
                    "{}: two slices of window #{w} run on CPUs {ca}: their processes cannot be \
                     told apart in the log",
                    slices[a].path
                ));
            }
        }
        if let Some(l) = lines.iter().find(|l| !wc.contains(&l.cpus)) {
            return Err(format!("log line on CPUs of no slice of window #{w}: {l}"));
        }
        Ok(())
    }

    /// The SC runs of slice `s` from its log lines `own`: the SC partition's processes from the
    /// window start, one after the other, in configuration order. Returns the SC end (`None`:
    /// not done) and the index of the slice's first BE line.
    fn sc_runs(
        &mut self,
        win: &mut Win,
        s: usize,
        slice: &Slice,
        own: &[&LogLine],
    ) -> (Option<u64>, usize) {
        let config = self.config;
        let mut k = 0;
        let mut at = win.t0;
        let mut done = Some(win.t0);
        if let Some(p) = slice.sc_partition.as_deref().map(|n| self.index[n]) {
            let procs = &config.partitions[p].processes;
            let mut next = 0;
            while k < own.len() && own[k].time_ms == at {
                let Some(i) = (next..procs.len()).find(|&i| procs[i].cmd == own[k].cmd) else {
                    break;
                };
                let proc = ProcId {
                    partition: p,
                    process: i,
                };
                at = self.run(win, s, proc, own[k], 2);
                next = i + 1;
                k += 1;
            }
            done = (at < win.t1).then_some(at);
        }
        (done, k)
    }

    /// The BE runs of slice `s` from its log lines after the SC ones (`rest`): from the BE
    /// start, the BE partition's processes from its cursor, each where the previous run ended.
    fn be_runs(
        &mut self,
        win: &mut Win,
        s: usize,
        slice: &Slice,
        rest: &[&LogLine],
        be_start: Option<u64>,
    ) -> Result<(), String> {
        let config = self.config;
        let Some(first_be) = rest.first() else {
            return Ok(());
        };
        let (Some(b), Some(q)) = (
            be_start,
            slice.be_partition.as_deref().map(|n| self.index[n]),
        ) else {
            return Err(format!(
                "log line of slice {} that is not its SC partition's next process and no \
                 BE can start: {first_be}",
                slice.path
            ));
        };
        let procs = &config.partitions[q].processes;
        let n = procs.len();
        let mut at = b;
        for l in rest {
            if l.time_ms != at {
                return Err(format!(
                    "log line of slice {} at {} where its previous run ends at {at}: {l}",
                    slice.path, l.time_ms
                ));
            }
            let Some(i) = (0..n)
                .map(|d| (self.be_cursor[q] + d) % n)
                .find(|&i| procs[i].cmd == l.cmd)
            else {
                return Err(format!(
                    "log line of slice {} matches no process of its BE partition: {l}",
                    slice.path
                ));
            };
            let proc = ProcId {
                partition: q,
                process: i,
            };
            let stop = self.run(win, s, proc, l, 4);
            // the cursor stays on a process cut with budget left, else moves past it
            self.be_cursor[q] = if stop == win.t1 && l.time_ms + l.budget > win.t1 {
                i
            } else {
                (i + 1) % n
            };
            at = stop;
        }
        Ok(())
    }

    /// The run of `proc` on slice `s` that log line `l` starts (event group 2: SC, 4: BE): its
    /// start, its end before the horizon or its stop at the window end. Returns when it stops.
    fn run(&mut self, win: &mut Win, s: usize, proc: ProcId, l: &LogLine, group: u8) -> u64 {
        let stop = run_end(&self.models, &self.runs, proc, l.time_ms, l.budget, win.t1);
        account(
            &self.models,
            &mut self.runs,
            proc,
            l.time_ms,
            stop.min(win.horizon),
        );
        push_run(
            &mut self.evs,
            win.w,
            s,
            proc,
            self.cpus[win.w][s],
            self.config.partitions[proc.partition].processes[proc.process].frequency,
            l.time_ms,
            group,
        );
        if stop < win.horizon {
            self.evs.push((
                stop,
                group,
                s,
                0,
                Event::ProcessEnd {
                    window: win.w,
                    slice: s,
                    proc,
                },
            ));
        } else if stop >= win.t1 && win.t1 <= self.result.end_ms {
            win.running_at_end.push((s, proc));
        }
        stop
    }

    /// The window end and the ends of the processes it stops (slice order).
    fn end_window(&mut self, win: Win) {
        let (w, t1) = (win.w, win.t1);
        self.evs.push((t1, 0, 0, 0, Event::WindowEnd { window: w }));
        for (s, proc) in win.running_at_end {
            self.evs.push((
                t1,
                0,
                s + 1,
                0,
                Event::ProcessEnd {
                    window: w,
                    slice: s,
                    proc,
                },
            ));
        }
    }

    /// The events in order, after [`Event::Init`] at 0.
    fn into_timed(mut self) -> Vec<Timed> {
        self.evs.sort_by_key(|e| (e.0, e.1, e.2, e.3));
        let mut out = vec![Timed {
            time_ms: 0,
            event: Event::Init,
        }];
        out.extend(self.evs.into_iter().map(|e| Timed {
            time_ms: e.0,
            event: e.4,
        }));
        out
    }
}

#[allow(clippy::too_many_arguments)]
fn push_run(
    evs: &mut Vec<(u64, u8, usize, u8, Event)>,
    window: usize,
    slice: usize,
    proc: ProcId,
    cpus: CpuSet,
    freq_mhz: Option<f64>,
    t: u64,
    group: u8,
) {
    evs.push((
        t,
        group,
        slice,
        1,
        Event::ProcessStart {
            window,
            slice,
            proc,
            cpus,
            freq_mhz,
        },
    ));
}

#[derive(Clone, Debug, Default)]
struct RunState {
    progress: u64,
    executed: u64,
    exited: bool,
}

/// When a run of `proc` from `start` with `budget` stops: its budget, its job's completion
/// (before an exit; a tie completes, as the simulator) or the window end `t1`.
fn run_end(
    models: &[Vec<ProcessModel>],
    runs: &[Vec<RunState>],
    proc: ProcId,
    start: u64,
    budget: u64,
    t1: u64,
) -> u64 {
    let m = models[proc.partition][proc.process];
    let st = &runs[proc.partition][proc.process];
    let mut stop = (start + budget).min(t1);
    if !st.exited {
        if let Some(w) = m.work_ms {
            let done = start + w.saturating_sub(st.progress);
            let exit = m.exit_ms.map(|e| start + e.saturating_sub(st.executed));
            if exit.is_none_or(|x| done <= x) {
                stop = stop.min(done);
            }
        }
    }
    stop
}

/// Charges a run `[start, stop)` to `proc` as the simulator's `account`.
fn account(
    models: &[Vec<ProcessModel>],
    runs: &mut [Vec<RunState>],
    proc: ProcId,
    start: u64,
    stop: u64,
) {
    let m = models[proc.partition][proc.process];
    let st = &mut runs[proc.partition][proc.process];
    if st.exited || stop <= start {
        return;
    }
    let exit = m.exit_ms.map(|e| start + e.saturating_sub(st.executed));
    let until = exit.map_or(stop, |x| x.min(stop));
    let ran = until - start;
    st.executed += ran;
    st.progress += ran;
    if let Some(w) = m.work_ms {
        if st.progress >= w {
            st.progress = 0;
        }
    }
    if exit.is_some_and(|x| x <= stop) {
        st.exited = true;
    }
}
