//! The VM tests, one module per scenario folder `tests/vm/scenarios/NAME/` (guest.sh, its plans,
//! check.rs: this module); tests/vm/scenarios/README.md says how to add one. They boot a
//! sched_ext kernel under QEMU and are `#[ignore]`d, so a plain `cargo test` runs only the
//! checks that need no VM; `make test-vm` runs the smoke tests first
//! (`cargo test --release --test vm smoke -- --ignored --nocapture`), then the others one VM at
//! a time. docs/vm-harness.md lists every test and its tolerances.

mod common;
#[path = "vm/harness/mod.rs"]
mod harness;
#[path = "vm/plan_files.rs"]
mod plan_files;
#[path = "vm/planner_checks.rs"]
mod planner_checks;
#[path = "vm/witness/mod.rs"]
mod witness;

#[path = "vm/scenarios/adaptive/check.rs"]
mod adaptive;
#[path = "vm/scenarios/adaptive_restart/check.rs"]
mod adaptive_restart;
#[path = "vm/scenarios/admit/check.rs"]
mod admit;
#[path = "vm/scenarios/completion/check.rs"]
mod completion;
#[path = "vm/scenarios/compositional/check.rs"]
mod compositional;
#[path = "vm/scenarios/cpuperf/check.rs"]
mod cpuperf;
#[path = "vm/scenarios/delivery/check.rs"]
mod delivery;
#[path = "vm/scenarios/demos/check.rs"]
mod demos;
#[path = "vm/scenarios/demos_golden/check.rs"]
mod demos_golden;
#[path = "vm/scenarios/demos_power/check.rs"]
mod demos_power;
#[path = "vm/scenarios/demos_seq/check.rs"]
mod demos_seq;
#[path = "vm/scenarios/demos_seq_power/check.rs"]
mod demos_seq_power;
#[path = "vm/scenarios/errors/check.rs"]
mod errors;
#[path = "vm/scenarios/exiting/check.rs"]
mod exiting;
#[path = "vm/scenarios/faults/check.rs"]
mod faults;
#[path = "vm/scenarios/freq/check.rs"]
mod freq;
#[path = "vm/scenarios/multicore/check.rs"]
mod multicore;
#[path = "vm/scenarios/node_api/check.rs"]
mod node_api;
#[path = "vm/scenarios/planner/check.rs"]
mod planner;
#[path = "vm/scenarios/planner_admit/check.rs"]
mod planner_admit;
#[path = "vm/scenarios/planner_dpm/check.rs"]
mod planner_dpm;
#[path = "vm/scenarios/planner_dvfs/check.rs"]
mod planner_dvfs;
#[path = "vm/scenarios/planner_loop/check.rs"]
mod planner_loop;
#[path = "vm/scenarios/planner_threads/check.rs"]
mod planner_threads;
#[path = "vm/scenarios/preempt/check.rs"]
mod preempt;
#[path = "vm/scenarios/restart/check.rs"]
mod restart;
#[path = "vm/scenarios/resume/check.rs"]
mod resume;
#[path = "vm/scenarios/scale/check.rs"]
mod scale;
#[path = "vm/scenarios/semantics/check.rs"]
mod semantics;
#[path = "vm/scenarios/servers/check.rs"]
mod servers;
#[path = "vm/scenarios/signals/check.rs"]
mod signals;
#[path = "vm/scenarios/smoke/check.rs"]
mod smoke;
#[path = "vm/scenarios/startup/check.rs"]
mod startup;
#[path = "vm/scenarios/switch/check.rs"]
mod switch;
