//! `scx_tt ctl --socket PATH status | switch-table PLAN.json | admit-firm ... | set-policy
//! NAME | admit-periodic --task NAME | remove --task NAME`: one request to a running
//! `scx_tt --table plan.json --control PATH` (docs/control.md). Prints the reply line.
//! Exit codes: 0 the reply says ok (admit-firm, admit-periodic: accepted), 1 an error reply, 2
//! the socket cannot be reached (or gives no reply), 3 admit-firm or admit-periodic rejected.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use scx_tt::adaptive::AdaptiveBounds;
use scx_tt::control::request::{
    Admit, AdmitClass, AdmitFirm, AdmitSelector, AfterJob, SetPolicy, SwitchTable, TaskArg,
};
use scx_tt::control::Request;
use scx_tt::planner::Policy;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct CtlArgs {
    /// The control socket of a running `scx_tt --table PLAN.json --control PATH`.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// How long to wait for the reply, seconds (0.001 to 86400).
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = super::args::timeout_secs)]
    pub timeout_s: f64,
    #[command(subcommand)]
    pub cmd: CtlCmd,
}

#[derive(Subcommand, Debug)]
pub enum CtlCmd {
    /// The current slot, the frame length, the plan in force and a pending switch's slot.
    Status,
    /// Switch to PLAN.json's table at the next frame start (same slot length, CPUs, frame
    /// and tasks; only the timing may differ).
    SwitchTable {
        /// The new plan; sent as an absolute path.
        #[arg(value_name = "PLAN.json")]
        plan: PathBuf,
    },
    /// Planner mode (`--planner bss|dvfs|dpm|dpm+dvfs`): admit a firm job of WCET slots for tt task NAME, due
    /// DEADLINE slots after the current slot. Exit 0 accepted, 3 rejected.
    AdmitFirm {
        /// A tt task of the plan (the job runs in its threads, on its CPU).
        #[arg(long, value_name = "NAME")]
        task: String,
        #[arg(long, value_name = "N")]
        wcet_slots: u64,
        #[arg(long, value_name = "D")]
        deadline_slots: u64,
    },
    /// Planner mode: decide the slots from the planner's next undecided one on under POLICY
    /// (bss, dvfs, dpm or dpm+dvfs); the reply names that slot (`from_slot`).
    SetPolicy {
        #[arg(value_name = "POLICY")]
        policy: Policy,
    },
    /// Planner mode: admit tt task NAME, declared `"start": "admitted"` in the plan, with its
    /// plan timing on its CPU (exact EDF test of that CPU's frame). Exit 0 accepted (the reply
    /// names the first slot it runs in, `from_slot`), 3 rejected.
    AdmitPeriodic {
        /// A task of the plan declared `"start": "admitted"`.
        #[arg(long, value_name = "NAME")]
        task: String,
    },
    /// Planner mode: tt task NAME owns no slot from the planner's next undecided slot on (the
    /// reply's `from_slot`); its capacity is free for admissions at once.
    Remove {
        #[arg(long, value_name = "NAME")]
        task: String,
    },
    /// Planner mode: admit a task the plan does not name, by its threads and its timing (a
    /// QEMU VM: one task per vCPU thread, all or none). Exit 0 accepted (per task: CPU, first
    /// slot, timing), 3 rejected with the planner's reason.
    Admit(Box<AdmitArgs>),
    /// Sends the protocol's request lines (docs/control.md, one JSON object per line) read from
    /// standard input over one connection, each after the previous one's reply, and prints the
    /// replies in order. Blank lines and lines starting with `#` are skipped. Exit 0 when
    /// every reply says ok, 3 when any admission was rejected (and none failed), 1 when any
    /// reply is an error, 2 when the socket cannot be reached or stops answering.
    Batch {
        /// Also print, on standard error, each request's round trip as this client measured it
        /// (from the write of the request to the read of its reply's last byte) and at the end
        /// their count, p50, p99 and max in microseconds.
        #[arg(long)]
        timing: bool,
    },
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("select").required(true)
    .args(["pid", "tids", "comm", "cgroup", "qemu"])))]
pub struct AdmitArgs {
    /// The task's name (unique in the run; `NAME/vcpuN` per vCPU of a VM).
    #[arg(long, value_name = "NAME")]
    name: String,
    /// Every thread of process PID.
    #[arg(long, value_name = "PID")]
    pid: Option<u32>,
    /// These threads (comma separated).
    #[arg(long, value_name = "TID,...", value_delimiter = ',')]
    tids: Option<Vec<u32>>,
    /// The threads named COMM.
    #[arg(long, value_name = "COMM")]
    comm: Option<String>,
    /// The threads of cgroup v2 PATH.
    #[arg(long, value_name = "PATH")]
    cgroup: Option<String>,
    /// A QEMU process by pid or by its `-name`: its vCPU threads (`CPU n/KVM`, `CPU n/TCG`).
    #[arg(long, value_name = "PID|NAME")]
    qemu: Option<String>,
    /// tt (default): owns slots by the timing below; be: runs in the slack of the managed CPUs
    /// (of --cpu if given), no timing; adaptive: no timing, needs --cpu, runs as be there until
    /// the supervisor grants it a reservation from its observed period and consumption
    /// (docs/adaptive.md), within the --adaptive-* bounds.
    #[arg(long, value_name = "CLASS", default_value = "tt", value_parser = ["tt", "be", "adaptive"])]
    class: String,
    /// Slots per period (must divide the frame) ...
    #[arg(long, value_name = "P", requires = "wcet_slots", conflicts_with_all = ["util", "latency_us"])]
    period_slots: Option<u64>,
    /// ... and slots of each period the task owns (with --deadline-slots and no
    /// --period-slots: the slots of an aperiodic task's one job).
    #[arg(long, value_name = "W")]
    wcet_slots: Option<u64>,
    /// With --period-slots: each job's release after its period's start (default 0).
    #[arg(long, value_name = "O", requires = "period_slots")]
    offset_slots: Option<u64>,
    /// With --period-slots: each job's relative deadline (default the period; offset +
    /// deadline <= period). Without: an aperiodic task's one job has its --wcet-slots before
    /// D slots from now.
    #[arg(long, value_name = "D", requires = "wcet_slots", conflicts_with_all = ["util", "latency_us"])]
    deadline_slots: Option<u64>,
    /// An aperiodic task: once its job has had its slots, its threads run as a be task on the
    /// same CPU (be, the default) or leave the managed CPUs (leave).
    #[arg(long, value_name = "be|leave", requires = "deadline_slots", conflicts_with = "period_slots", value_parser = ["be", "leave"])]
    after: Option<String>,
    /// Or: the share of a CPU per task (vCPU), in (0, 1) ...
    #[arg(long, value_name = "U", requires = "latency_us")]
    util: Option<f64>,
    /// ... and the longest it may wait for the CPU, us.
    #[arg(long, value_name = "L", requires = "util")]
    latency_us: Option<u64>,
    /// The managed CPU (default: the least loaded, siblings apart).
    #[arg(long, value_name = "CPU")]
    cpu: Option<u32>,
    /// Adaptive: the shortest period it may be given, us (default 5000).
    #[arg(long, value_name = "US")]
    adaptive_period_min_us: Option<u64>,
    /// Adaptive: the longest period, us (default 500000).
    #[arg(long, value_name = "US")]
    adaptive_period_max_us: Option<u64>,
    /// Adaptive: the most bandwidth (budget/period) it may be given, in (0, 1] (default 0.9).
    #[arg(long, value_name = "B")]
    adaptive_max_bandwidth: Option<f64>,
    /// Adaptive: the least bandwidth the supervisor may compress it to (default 0).
    #[arg(long, value_name = "B")]
    adaptive_min_bandwidth: Option<f64>,
    /// Adaptive: the percentile p of the consumption samples, in (0, 1] (default 0.9375).
    #[arg(long, value_name = "P")]
    adaptive_percentile: Option<f64>,
    /// Adaptive: consumption samples in the percentile's window (default 16).
    #[arg(long, value_name = "N")]
    adaptive_window: Option<usize>,
    /// Adaptive: the spread factor x of the budget (1 + x) * percentile, in [0, 10] (default
    /// 0.15).
    #[arg(long, value_name = "X")]
    adaptive_spread: Option<f64>,
    /// Adaptive: the sampling period of the controller, us (default 1000000; at least the
    /// longest period).
    #[arg(long, value_name = "US")]
    adaptive_sampling_us: Option<u64>,
}

impl AdmitArgs {
    fn request(self) -> Admit {
        let select = if let Some(p) = self.pid {
            AdmitSelector::Pid(p)
        } else if let Some(t) = self.tids {
            AdmitSelector::Tids(t)
        } else if let Some(c) = self.comm {
            AdmitSelector::Comm(c)
        } else if let Some(c) = self.cgroup {
            AdmitSelector::Cgroup(c)
        } else {
            let q = self.qemu.unwrap_or_default();
            match q.parse() {
                Ok(pid) => AdmitSelector::QemuPid(pid),
                Err(_) => AdmitSelector::QemuName(q),
            }
        };
        Admit {
            name: self.name,
            select: Some(select),
            class: match self.class.as_str() {
                "be" => AdmitClass::Be,
                "adaptive" => AdmitClass::Adaptive,
                _ => AdmitClass::Tt,
            },
            period_slots: self.period_slots,
            wcet_slots: self.wcet_slots,
            offset_slots: self.offset_slots,
            deadline_slots: self.deadline_slots,
            after: self.after.map(|a| match a.as_str() {
                "leave" => AfterJob::Leave,
                _ => AfterJob::Be,
            }),
            util: self.util,
            latency_us: self.latency_us,
            cpu: self.cpu,
            adaptive: Some(AdaptiveBounds {
                period_min_us: self.adaptive_period_min_us,
                period_max_us: self.adaptive_period_max_us,
                max_bandwidth: self.adaptive_max_bandwidth,
                min_bandwidth: self.adaptive_min_bandwidth,
                percentile: self.adaptive_percentile,
                window: self.adaptive_window,
                spread: self.adaptive_spread,
                sampling_us: self.adaptive_sampling_us,
            })
            .filter(|b| *b != AdaptiveBounds::default())
            .map(Box::new),
            dry_run: false,
            vcpus: None,
            cpus: None,
        }
    }
}

pub fn run(args: CtlArgs) -> Result<i32> {
    let admission = matches!(
        args.cmd,
        CtlCmd::AdmitFirm { .. } | CtlCmd::AdmitPeriodic { .. } | CtlCmd::Admit(_)
    );
    let request = match args.cmd {
        CtlCmd::Batch { timing } => return batch(&args.socket, args.timeout_s, timing),
        CtlCmd::Status => Request::Status,
        CtlCmd::SwitchTable { plan } => Request::SwitchTable(SwitchTable {
            plan: std::path::absolute(&plan)
                .with_context(|| format!("making {} absolute", plan.display()))?,
        }),
        CtlCmd::AdmitFirm {
            task,
            wcet_slots,
            deadline_slots,
        } => Request::AdmitFirm(AdmitFirm {
            task,
            wcet_slots,
            deadline_slots,
        }),
        CtlCmd::SetPolicy { policy } => Request::SetPolicy(SetPolicy { policy }),
        CtlCmd::AdmitPeriodic { task } => Request::AdmitPeriodic(TaskArg { task }),
        CtlCmd::Remove { task } => Request::Remove(TaskArg { task }),
        CtlCmd::Admit(a) => Request::Admit(a.request()),
    };
    let line = request.to_line().context("encoding the request")?;
    let stream = match connect(&args.socket, args.timeout_s) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let mut reader = BufReader::new(&stream);
    let reply = match exchange(&stream, &mut reader, &line) {
        Ok(r) => r,
        Err((what, e)) => return Ok(unreachable(&args.socket, what, e)),
    };
    print_reply(&reply);
    Ok(exit_code(&reply, admission))
}

/// `ctl batch`: stdin's request lines over one connection, each after the previous reply.
fn batch(socket: &Path, timeout_s: f64, timing: bool) -> Result<i32> {
    let stream = match connect(socket, timeout_s) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let mut reader = BufReader::new(&stream);
    let (mut failed, mut rejected) = (false, false);
    let mut rtts = Vec::new();
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.with_context(|| format!("reading standard input, line {}", n + 1))?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let sent = std::time::Instant::now();
        let reply = match exchange(&stream, &mut reader, &format!("{line}\n")) {
            Ok(r) => r,
            Err((what, e)) => {
                eprintln!("scx_tt ctl batch: at input line {}:", n + 1);
                return Ok(unreachable(socket, what, e));
            }
        };
        let rtt_us = sent.elapsed().as_micros() as u64;
        print_reply(&reply);
        if timing {
            eprintln!("scx_tt ctl batch: line {}: round trip {rtt_us} us", n + 1);
            rtts.push(rtt_us);
        }
        // whether the request was an admission is the reply's to say: `accepted` is set
        match exit_code(&reply, true) {
            0 => {}
            3 => rejected = true,
            _ => failed = true,
        }
    }
    if timing {
        eprintln!("scx_tt ctl batch: {}", rtt_summary(&mut rtts));
    }
    Ok(match (failed, rejected) {
        (true, _) => 1,
        (false, true) => 3,
        _ => 0,
    })
}

/// `round trips N, p50 X us, p99 Y us, max Z us` (nearest rank; `round trips 0` for none).
fn rtt_summary(rtts: &mut [u64]) -> String {
    rtts.sort_unstable();
    let rank = |p: f64| {
        let i = ((rtts.len() as f64 * p).ceil() as usize).saturating_sub(1);
        rtts.get(i).copied().unwrap_or(0)
    };
    match rtts.last() {
        None => "round trips 0".into(),
        Some(max) => format!(
            "round trips {}, p50 {} us, p99 {} us, max {max} us",
            rtts.len(),
            rank(0.5),
            rank(0.99)
        ),
    }
}

/// A connection to `socket` with `timeout_s` on every read and write; `Err`: the exit code,
/// once the cause is printed.
fn connect(socket: &Path, timeout_s: f64) -> Result<UnixStream, i32> {
    let stream = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!(
                "scx_tt ctl: {}: {e}: only root, scx_tt's user and the members of the group \
                 scx_tt was started with (--control-group) may use its control socket",
                socket.display()
            );
            return Err(2);
        }
        Err(e) => return Err(unreachable(socket, "cannot reach", e)),
    };
    let timeout = Duration::from_secs_f64(timeout_s.max(0.001));
    if let Err(e) = stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
    {
        return Err(unreachable(socket, "cannot configure", e));
    }
    Ok(stream)
}

/// Writes request `line` and reads its reply line; `Err`: (what failed, why).
fn exchange(
    stream: &UnixStream,
    reader: &mut BufReader<&UnixStream>,
    line: &str,
) -> Result<String, (&'static str, std::io::Error)> {
    // a write that fails may still have a reply to read: a refused peer gets one line and
    // is closed before its request is read
    let written = (&*stream).write_all(line.as_bytes());
    let mut reply = String::new();
    match reader.read_line(&mut reply) {
        Ok(0) | Err(_) if written.is_err() => Err(("cannot write to", written.unwrap_err())),
        Ok(0) => Err((
            "no reply from",
            std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
        )),
        Ok(_) => Ok(reply),
        Err(e) => Err(("no reply from", e)),
    }
}

/// Prints why the socket failed; the exit code 2.
fn unreachable(socket: &Path, what: &str, e: std::io::Error) -> i32 {
    eprintln!(
        "scx_tt ctl: {what} the control socket {}: {e} (is `scx_tt --table PLAN.json \
         --control {}` running?)",
        socket.display(),
        socket.display()
    );
    2
}

fn print_reply(line: &str) {
    print!("{line}");
    if !line.ends_with('\n') {
        println!();
    }
}

/// 0 the reply says ok, 3 an admission rejected, 1 an error (or no protocol reply).
fn exit_code(line: &str, admission: bool) -> i32 {
    let reply = serde_json::from_str::<serde_json::Value>(line).ok();
    let ok = reply
        .as_ref()
        .and_then(|v| v.get("ok").and_then(serde_json::Value::as_bool));
    let accepted = reply
        .as_ref()
        .and_then(|v| v.get("accepted").and_then(serde_json::Value::as_bool));
    match ok {
        Some(true) if admission && accepted == Some(false) => 3,
        Some(true) => 0,
        Some(false) => 1,
        None => {
            eprintln!("scx_tt ctl: the reply is not a control protocol reply");
            1
        }
    }
}
