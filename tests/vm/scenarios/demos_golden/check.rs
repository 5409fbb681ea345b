//! VM test, issue 18 item 3 (kernel half): DEmOS's golden configurations whose SC work the
//! plan states exactly (tests/demos/ 01, 03 and 07; tests/demos_trace_log.rs) on the kernel
//! path, in one boot (`-smp 3`: 07 has two slices; CPU 0 housekeeping). The copies in this
//! folder move every CPU one up (0 -> 1, 1 -> 2) and are otherwise the golden files. Each is
//! imported with `scx_tt plan import --demos` at its own slot (the gcd: 01 5 ms, 03 and 07
//! 1 ms; major frame 10 ms) and run for 3 s; `dummy` is a busy loop.
//!
//! Checked, per configuration:
//!   - the copy is the golden file with the CPUs moved, and the import succeeds;
//!   - the SC schedule log of the kernel run (`simulate --demos --from-trace` of its trace)
//!     equals DEmOS's own (`simulate --demos --sc-only`) line for line in every frame whose
//!     slots all have a trace record (a tick more than a slot late leaves none: TCG; at least
//!     [`MIN_JUDGED_FRAMES`] judged); the golden log's SC lines (DEmOS's `-t 20`, CPUs moved)
//!     are DEmOS's own first 20 ms, and their first frame is the kernel's every judged frame;
//!   - each logged start from the second second on, against the kernel's switch trace (the
//!     witness): the process's thread ran before it (more than [`EARLY_NS`]) although a BPF
//!     timer fired on its CPU in time to stop it (from the end of its task's last slot, plus
//!     the witness's kick allowance `KICK_NS`) for at most [`EARLY_SHARE`] of them (a thread
//!     that ran on because no timer fired, a vCPU the host did not run, is counted apart), and
//!     first runs at most [`START_P99_NS`] after it at the 99th percentile, [`START_MAX_NS`]
//!     at worst;
//!   - the witness's own checks (each SC process only in its slots, nothing foreign on the
//!     managed CPUs, be work never over a waiting owner) and a clean exit.

use crate::harness::{self, Checks, Vm, VmOutput};
use crate::witness;
use scx_tt::trace::SlotRecord;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// (run, golden configuration)
const CONFIGS: [(&str, &str); 3] = [
    ("g01", "01-one-sc-budget-below-window"),
    ("g03", "03-two-sc-processes"),
    ("g07", "07-be-after-all-sc"),
];
/// The major frame of the three configurations (one 10 ms window).
const FRAME_MS: u64 = 10;
/// A logged start that the thread's first run may follow by, at the 99th percentile: TCG at
/// `-smp 3` on a loaded 2-core host, 1 and 5 ms slots (measured over 12 configuration runs in
/// four boots: p99 0.24-1.74 ms in most, 10.1 and 23.8 ms in two 5 ms-slot runs whose slot
/// ticks came up to 11 ms late at p99).
const START_P99_NS: u64 = 12_000_000;
/// ... and at worst (a host stall; measured 0.65-53.6 ms, above 11 ms in three runs).
const START_MAX_NS: u64 = 30_000_000;
/// Frames of a run (290 in 3 s) whose SC log must be judged: those without a skipped slot
/// (measured: 01 278-292, 03 164-279, 07 46-135).
const MIN_JUDGED_FRAMES: u64 = 30;
/// A tt task's run time outside its slots that the scheduler is charged with, share of its
/// run time (timing; the witness's default is 5 %). With 1 ms slots at `-smp 3` on 2 host
/// cores this is the kick latency of TCG against a 1 ms slot, not the scheduler: measured up
/// to 19.7 % (docs/vm-harness.md), then 25.1, 29.0 and 25.4 % for g07 in three boots of a
/// fresh-clone CI run here (calibration factor 0.85-0.90, 281-350 late skips of ~3000 ticks
/// per CPU, `higher_waits` 0: nothing of the scheduler's changed path ran).
const OUTSIDE_SHARE: f64 = 0.35;
/// A thread running this long before its logged start is an early start: its last slot's end
/// was enforced more than a slot late (a host stall; 0-2 of 180-380 starts measured).
const EARLY_NS: u64 = 100_000;
/// Early starts allowed, share of the starts (timing): those a late timer explains are not
/// counted (see `check_starts`).
const EARLY_SHARE: f64 = 0.02;
/// Logged starts from 1 s on that must be judged (timing: of about 200 a run per SC process,
/// a start in a frame with a skipped slot is not judged; 07 at `-smp 3`, three busy vCPUs on
/// two host cores, measured 40 and 70 in frames 52 of 291 judged).
const MIN_STARTS: usize = 20;

/// The golden file's text with every `cpu: N` / `cpus=N` one higher (the copies' CPUs).
fn moved(text: &str) -> String {
    text.lines()
        .map(|l| {
            let l = l.replace("cpu: 1", "cpu: 2").replace("cpu: 0", "cpu: 1");
            l.replace("cpus=1", "cpus=2").replace("cpus=0", "cpus=1")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// (whole frames in `trace`, the frames with a (CPU, slot) without a record among them): a
/// slot whose tick came more than a slot late has no record, and its frame is not judged.
fn frames_judged(trace: &[SlotRecord], slot_us: u64) -> (u64, BTreeSet<u64>) {
    let frame_slots = (FRAME_MS * 1000 / slot_us.max(1)).max(1);
    let frames = trace.iter().map(|r| r.slot + 1).max().unwrap_or(0) / frame_slots;
    let have: BTreeSet<(u32, u64)> = trace.iter().map(|r| (r.cpu, r.slot)).collect();
    let cpus: BTreeSet<u32> = trace.iter().map(|r| r.cpu).collect();
    let skipped = (0..frames * frame_slots)
        .filter(|s| cpus.iter().any(|c| !have.contains(&(*c, *s))))
        .map(|s| s / frame_slots)
        .collect();
    (frames, skipped)
}

/// (time ms, cpu, cmd) of a schedule log line.
fn parse(line: &str) -> Option<(u64, u32, String)> {
    let (t, rest) = line.split_once(": ")?;
    let cpu = rest
        .strip_prefix("cpus=")?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    let cmd = rest.split("cmd='").nth(1)?.split("' budget=").next()?;
    Some((t.trim().parse().ok()?, cpu, cmd.to_string()))
}

/// The task name of the plan `plan` whose command is DEmOS's `cmd`.
fn task_of(plan: &serde_json::Value, cmd: &str) -> Option<String> {
    let tail = format!("&& {cmd}");
    plan["tasks"].as_array()?.iter().find_map(|t| {
        let last = t["cmd"].as_array()?.last()?.as_str()?;
        last.ends_with(&tail)
            .then(|| t["name"].as_str().map(str::to_string))
            .flatten()
    })
}

fn check_config(out: &VmOutput, c: &mut Checks, run: &str, cfg: &str) {
    println!("=== {run}: tests/demos/{cfg}.yaml");
    let read = |p: &str| std::fs::read_to_string(harness::repo().join(p)).unwrap_or_default();
    let golden = read(&format!("tests/demos/{cfg}.yaml"));
    let copy = read(&format!("tests/vm/scenarios/demos_golden/{cfg}.yaml"));
    c.check(
        !golden.is_empty() && moved(&golden) == copy.trim_end(),
        format!("{run}: the copy is tests/demos/{cfg}.yaml with the CPUs one up"),
    );
    let import = out.file(&format!("{run}.import.err")).unwrap_or_default();
    println!("--- import:\n{}", import.trim());
    c.check(
        out.number(&format!("{run}_import_rc")).ok() == Some(0),
        format!("{run}: plan import --demos succeeds"),
    );
    let summary = match out.summary(&format!("{run}.json")) {
        Ok(s) => s,
        Err(e) => return c.check(false, format!("{run}: summary: {e}")),
    };
    summary.print(cfg);
    let trace: Vec<SlotRecord> = match out.records(&format!("{run}.trace.jsonl")) {
        Ok(t) => t,
        Err(e) => return c.check(false, format!("{run}: trace: {e}")),
    };
    let (frames, skipped) = frames_judged(&trace, summary.slot_us);
    println!(
        "  {frames} whole frames in the trace, {} with a slot without a record (a tick more than \
         a slot late: not judged)",
        skipped.len()
    );
    let judged = |t: u64| t / FRAME_MS < frames && !skipped.contains(&(t / FRAME_MS));
    let within = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| parse(l).is_some_and(|(t, _, _)| judged(t)))
            .map(str::to_string)
            .collect()
    };
    let sim = within(&out.file(&format!("{run}.sim.log")).unwrap_or_default());
    let kernel = within(&out.file(&format!("{run}.kernel.log")).unwrap_or_default());
    let first_diff = sim.iter().zip(&kernel).position(|(a, b)| a != b);
    println!(
        "  SC log lines within the run: simulate --demos --sc-only {}, the kernel's {}; first \
         difference at line {first_diff:?}",
        sim.len(),
        kernel.len()
    );
    let judged_frames = frames.saturating_sub(skipped.len() as u64);
    c.check(
        out.number(&format!("{run}_sim_rc")).ok() == Some(0)
            && out.number(&format!("{run}_kernel_log_rc")).ok() == Some(0)
            && sim.len() as u64 >= judged_frames
            && sim == kernel,
        format!(
            "{run}: the kernel run's SC schedule log equals DEmOS's own line for line ({} lines \
             in {judged_frames} judged frames)",
            kernel.len()
        ),
    );
    c.check_timing(
        judged_frames >= MIN_JUDGED_FRAMES,
        format!(
            "{run}: frames judged {judged_frames} of {frames} >= {MIN_JUDGED_FRAMES} (the rest \
             had a skipped slot)"
        ),
    );
    // DEmOS's golden log (`-t 20`): its SC lines are DEmOS's own first 20 ms, and its first
    // frame (repeated by the second) is the kernel log's every judged frame
    let log = moved(&read(&format!("tests/demos/{cfg}.log")));
    // the SC commands of DEmOS's own whole log, not only of the judged frames: on a host slow
    // enough that every frame had a skipped slot (a CI run's g03), judged lines are none, and
    // the golden file's comparison does not depend on the kernel
    let sim_all = out.file(&format!("{run}.sim.log")).unwrap_or_default();
    let sc_cmds: Vec<String> = sim_all.lines().filter_map(|l| Some(parse(l)?.2)).collect();
    let golden_sc: Vec<&str> = log
        .lines()
        .filter(|l| parse(l).is_some_and(|(_, _, cmd)| sc_cmds.contains(&cmd)))
        .collect();
    let sim_20: Vec<&str> = sim_all
        .lines()
        .filter(|l| parse(l).is_some_and(|(t, _, _)| t <= 20))
        .collect();
    // (frame, (time in the frame, cpu, cmd)) of log lines
    let by_frame = |lines: &[&str]| -> BTreeMap<u64, Vec<(u64, u32, String)>> {
        let mut m: BTreeMap<u64, Vec<(u64, u32, String)>> = BTreeMap::new();
        for (t, cpu, cmd) in lines.iter().filter_map(|l| parse(l)) {
            m.entry(t / FRAME_MS)
                .or_default()
                .push((t % FRAME_MS, cpu, cmd));
        }
        m
    };
    let golden_frames = by_frame(&golden_sc);
    let pattern = golden_frames.get(&0).cloned().unwrap_or_default();
    let kernel_frames = by_frame(&kernel.iter().map(String::as_str).collect::<Vec<_>>());
    let differing = (0..frames)
        .filter(|f| !skipped.contains(f))
        .filter(|f| kernel_frames.get(f).unwrap_or(&Vec::new()) != &pattern)
        .count();
    println!("  golden SC lines (CPUs one up): {golden_sc:?}");
    c.check(
        !pattern.is_empty()
            && golden_frames.get(&1) == Some(&pattern)
            && golden_sc == sim_20
            && differing == 0,
        format!(
            "{run}: tests/demos/{cfg}.log's SC lines ({}) are DEmOS's own first 20 ms, and its \
             first frame is the kernel log's in every judged frame ({differing} of \
             {judged_frames} differ)",
            golden_sc.len()
        ),
    );
    check_starts(out, c, run, &summary, &kernel);
    let bounds = witness::Bounds {
        outside_share: OUTSIDE_SHARE,
        ..witness::Bounds::default()
    };
    witness::check(c, out, run, &bounds);
    out.check_clean_exit(c, run);
}

/// The first clock event of `fires` ([`witness::clock_events`]) on `cpu` at or after `t` after
/// which the CPU went on taking interrupts: its next one came within a slot and the kick
/// allowance. A CPU whose slot clock then stayed silent for longer (every slot has an event)
/// was not running: a vCPU the host did not run, which cannot act on a kick either.
fn first_live_fire(fires: &HashMap<u32, Vec<u64>>, cpu: u32, t: u64, slot_ns: u64) -> Option<u64> {
    let first = witness::first_fire(fires, cpu, t)?;
    let v = fires.get(&cpu)?;
    v[v.partition_point(|&x| x < first)..]
        .windows(2)
        .find(|w| w[1] <= w[0] + slot_ns + witness::KICK_NS)
        .map(|w| w[0])
}

/// The plan's slot grid and table (`slot_us`, `frame_slots`, `table`), for the owner of a slot.
struct Grid {
    t0_ns: u64,
    slot_ns: u64,
    frame_slots: u64,
    /// (cpu, task, start, end) of the table's ranges, in slots of the frame
    ranges: Vec<(u32, String, u64, u64)>,
}

impl Grid {
    fn of(plan: &serde_json::Value, t0_ns: u64) -> Grid {
        let mut ranges = Vec::new();
        for row in plan["table"].as_array().into_iter().flatten() {
            let cpu = row["cpu"].as_u64().unwrap_or(u64::MAX) as u32;
            for r in row["ranges"].as_array().into_iter().flatten() {
                if let (Some(s), Some(e), Some(t)) =
                    (r["start"].as_u64(), r["end"].as_u64(), r["task"].as_str())
                {
                    ranges.push((cpu, t.to_string(), s, e));
                }
            }
        }
        Grid {
            t0_ns,
            slot_ns: plan["slot_us"].as_u64().unwrap_or(0) * 1000,
            frame_slots: plan["frame_slots"].as_u64().unwrap_or(0),
            ranges,
        }
    }

    fn owns(&self, cpu: u32, task: &str, slot: u64) -> bool {
        let k = slot % self.frame_slots.max(1);
        self.ranges
            .iter()
            .any(|(c, t, s, e)| *c == cpu && t == task && (*s..*e).contains(&k))
    }

    /// The end of the last slot before the one holding `at` that `task` owns on `cpu`, within
    /// one frame back (None: a grid the plan does not give, or none).
    fn last_owned_end(&self, cpu: u32, task: &str, at: u64) -> Option<u64> {
        if self.slot_ns == 0 || self.frame_slots == 0 || at < self.t0_ns {
            return None;
        }
        let k = (at - self.t0_ns) / self.slot_ns;
        (k.saturating_sub(self.frame_slots)..k)
            .rev()
            .find(|&j| self.owns(cpu, task, j))
            .map(|j| self.t0_ns + (j + 1) * self.slot_ns)
    }
}

/// Each logged start from 1 s on against the witness.
fn check_starts(
    out: &VmOutput,
    c: &mut Checks,
    run: &str,
    summary: &harness::Summary,
    kernel: &[String],
) {
    let events = match out
        .file(&format!("{run}.witness"))
        .and_then(|t| witness::parse(&t).map_err(|e| e.to_string()))
    {
        Ok(e) => e,
        Err(e) => return c.check(false, format!("{run}: witness: {e}")),
    };
    let plan: serde_json::Value = match out.json(&format!("{run}.plan.json")) {
        Ok(p) => p,
        Err(e) => return c.check(false, format!("{run}: plan: {e}")),
    };
    let segments = witness::segments(&events, summary.t0_ns + summary.duration_ns);
    let pid_of = |cmd: &str| -> Option<u32> {
        let name = task_of(&plan, cmd)?;
        let task = summary.tasks.iter().find(|t| t.name == name)?;
        task.tids.first().copied()
    };
    let fires = witness::clock_events(&events);
    let grid = Grid::of(&plan, summary.t0_ns);
    let (mut delays, mut early, mut late_tick, mut unknown) = (Vec::new(), Vec::new(), 0, 0);
    for (t, cpu, cmd) in kernel
        .iter()
        .filter_map(|l| parse(l))
        .filter(|l| l.0 >= 1000)
    {
        let (Some(pid), Some(task)) = (pid_of(&cmd), task_of(&plan, &cmd)) else {
            unknown += 1;
            continue;
        };
        let at = summary.t0_ns + t * 1_000_000;
        // its first run from the logged start on (or one that began before it)
        let first = segments
            .iter()
            .filter(|g| g.pid == pid && g.cpu == cpu && g.end > at)
            .map(|g| g.start)
            .min();
        match first {
            Some(s) if s + EARLY_NS < at => {
                // it ran on from before its start: since the end of its task's last slot
                // before it (or since it started, if later), the scheduler had to stop it by
                // the first BPF timer that fired on the CPU then, plus the kick (the witness's
                // rule for a run outside the slots), if the CPU was running after that timer
                let from = grid.last_owned_end(cpu, &task, at).unwrap_or(s).max(s);
                let explained = first_live_fire(&fires, cpu, from, grid.slot_ns)
                    .map_or(u64::MAX, |f| f.saturating_add(witness::KICK_NS));
                if explained.saturating_add(EARLY_NS) >= at {
                    late_tick += 1;
                } else {
                    // (cpu, logged ms, ran before it ms, its timer after the task's slot ms)
                    early.push((
                        cpu,
                        t,
                        (at - s) / 1000,
                        (explained - witness::KICK_NS - from) / 1000,
                    ));
                }
            }
            Some(s) => delays.push(s.saturating_sub(at)),
            None => delays.push(u64::MAX),
        }
    }
    delays.sort_unstable();
    let pct = |p: f64| -> u64 {
        delays
            .get(((delays.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(u64::MAX)
    };
    let (p50, p99, max) = (pct(0.5), pct(0.99), pct(1.0));
    let ms = |ns: u64| ns as f64 / 1e6;
    println!(
        "  logged starts vs the witness ({} starts from 1 s): first run after the logged time \
         p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; ran before it: {late_tick} through a late \
         timer (no BPF timer fired on the CPU from the end of the task's last slot until the \
         start less {:.1} ms, or the CPU took no timer for over a slot after it, by the kernel's \
         trace: not judged), {} the scheduler's {:?} \
         (cpu, ms, us run before, us from the slot's end to the timer); {unknown} of no task",
        delays.len(),
        ms(p50),
        ms(p99),
        ms(max),
        ms(witness::KICK_NS + EARLY_NS),
        early.len(),
        &early[..early.len().min(4)]
    );
    c.check(
        unknown == 0,
        format!(
            "{run}: every logged SC start from 1 s is one of a task of the plan ({} starts, \
             {unknown} of no task)",
            delays.len()
        ),
    );
    // how many starts there are to judge depends on the host: a late tick skips slots, and
    // the schedule log has no line for a skipped slot's start
    c.check_timing(
        delays.len() >= MIN_STARTS,
        format!(
            "{run}: logged SC starts from 1 s to judge: {} >= {MIN_STARTS}",
            delays.len()
        ),
    );
    let early = early.len();
    c.check_timing(
        early as f64 <= EARLY_SHARE * delays.len() as f64,
        format!(
            "{run}: logged starts whose thread already ran before them although a BPF timer \
             fired in time to stop it: {early} <= {:.0} % of {}",
            EARLY_SHARE * 100.0,
            delays.len()
        ),
    );
    c.check_timing(
        p99 <= START_P99_NS && max <= START_MAX_NS,
        format!(
            "{run}: the SC processes start on time: p99 {:.3} ms <= {:.1} ms, max {:.3} ms <= \
             {:.1} ms",
            ms(p99),
            ms(START_P99_NS),
            ms(max),
            ms(START_MAX_NS)
        ),
    );
}

fn check(out: &VmOutput, c: &mut Checks) {
    for (run, cfg) in CONFIGS {
        check_config(out, c, run, cfg);
    }
}

#[test]
#[ignore = "boots a VM: make test-vm"]
fn demos_golden_configurations_run_their_sc_schedule_on_the_kernel_path() {
    Vm::new("demos_golden").smp(3).timeout_s(400).check(check);
}
