//! `scx_tt plan check|explain|gen`.

use anyhow::Context;
use clap::Subcommand;
use scx_tt::plan::cpus::{format_cpu_list, read_online_cpus, ONLINE_CPUS_PATH};
use scx_tt::plan::explain::{explain, render_text};
use scx_tt::plan::{self, LoadError, Plan};
use std::path::PathBuf;

/// Exit code for an invalid plan.
const EXIT_INVALID: i32 = 2;

#[derive(Subcommand, Debug)]
pub enum PlanCmd {
    /// Validate plan files; print a summary or the errors (exit 2 when any is invalid).
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Per CPU: jobs, capacity intervals with spare capacity, and the offline table.
    Explain {
        file: PathBuf,
        /// The stable JSON report of docs/plan-explain.md instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: PlanCmd) -> anyhow::Result<i32> {
    match cmd {
        PlanCmd::Check { files } => check(&files),
        PlanCmd::Explain { file, json } => {
            let Some(plan) = load(&file)? else {
                return Ok(EXIT_INVALID);
            };
            let report = explain(&plan);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", render_text(&report));
            }
            Ok(0)
        }
    }
}

/// The plan, or `None` after printing its errors; an unreadable file is an error.
fn load(file: &PathBuf) -> anyhow::Result<Option<Plan>> {
    match plan::from_file(file) {
        Ok(p) => Ok(Some(p)),
        Err(LoadError::Invalid { path, errors }) => {
            eprintln!("{}: invalid plan:", path.display());
            for e in errors.iter() {
                eprintln!("  {e}");
            }
            Ok(None)
        }
        Err(e @ LoadError::Io { .. }) => Err(e).context("loading the plan"),
    }
}

fn check(files: &[PathBuf]) -> anyhow::Result<i32> {
    let online = read_online_cpus();
    if let Err(e) = &online {
        eprintln!("warning: cannot read {ONLINE_CPUS_PATH}: {e}; CPUs are not checked");
    }
    let mut code = 0;
    for file in files {
        let Some(plan) = load(file)? else {
            code = EXIT_INVALID;
            continue;
        };
        println!("{}: ok", file.display());
        print!("{}", summary(&plan));
        if let Ok(online) = &online {
            if let Err(errs) = plan.check_cpus_exist(online) {
                for e in errs.iter() {
                    eprintln!("  warning: {e}");
                }
                eprintln!(
                    "  warning: this machine has CPUs {}; running this plan here will fail",
                    format_cpu_list(online)
                );
            }
        }
    }
    Ok(code)
}

fn summary(plan: &Plan) -> String {
    let tt = plan
        .tasks
        .iter()
        .filter(|t| t.class == scx_tt::plan::Class::Tt)
        .count();
    let mut s = format!(
        "  {} tasks ({tt} tt, {} be), frame {} slots x {} us, managed CPUs {}, housekeeping {}\n",
        plan.tasks.len(),
        plan.tasks.len() - tt,
        plan.frame_slots,
        plan.slot_us,
        format_cpu_list(&plan.managed),
        format_cpu_list(&plan.housekeeping),
    );
    for c in &plan.cpus {
        let busy: u64 = c.jobs.iter().map(|j| j.wcet).sum();
        s += &format!(
            "  cpu {}: {} jobs, utilization {:.3}, {} free slots per frame\n",
            c.cpu,
            c.jobs.len(),
            busy as f64 / plan.frame_slots as f64,
            plan.frame_slots - busy,
        );
    }
    s
}
