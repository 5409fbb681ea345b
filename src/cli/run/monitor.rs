//! `scx_tt --monitor SECS`: prints a running scx_tt's statistics every SECS seconds, read from
//! its stats socket with scx_stats' client (src/metrics.rs). Loads nothing and needs no plan;
//! waits for a run that has not started yet and for the next one when a run ends, as scx's
//! `--monitor` does, until SIGINT/SIGTERM.

use anyhow::Result;
use scx_tt::metrics;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long one request may take before the monitor gives up on it and tries again.
const REQUEST_TIMEOUT_MS: u64 = 2_000;

pub fn run(socket: &Path, secs: f64) -> Result<i32> {
    let period = Duration::from_secs_f64(secs);
    // whether the last request was answered; `None` before the first attempt
    let mut up: Option<bool> = None;
    let mut next = Instant::now();
    loop {
        match metrics::request(socket, REQUEST_TIMEOUT_MS) {
            Ok(m) => {
                println!("{}", m.line());
                up = Some(true);
            }
            Err(e) => {
                // one line per change, not one per attempt
                match up {
                    None => eprintln!(
                        "scx_tt: --monitor: no running scx_tt at {} yet ({}); waiting",
                        socket.display(),
                        e.root_cause()
                    ),
                    Some(true) => eprintln!(
                        "scx_tt: --monitor: the run at {} went away; waiting for the next one",
                        socket.display()
                    ),
                    Some(false) => {}
                }
                up = Some(false);
            }
        }
        next += period;
        let now = Instant::now();
        match next.checked_duration_since(now) {
            Some(wait) => std::thread::sleep(wait),
            None => next = now,
        }
    }
}
