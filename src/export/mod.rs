//! Exports of a run's files to other tools' formats (`scx_tt trace export`).
//!
//! - [`perfetto`]: a slot trace (and optionally the run's summary, planner log or simulate
//!   report) as a Perfetto protobuf trace (docs/perfetto.md).

pub mod perfetto;
