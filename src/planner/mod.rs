//! Slot-shifting planner: pure algorithms, no clock, no file, no BPF.
//!
//! - [`offline`]: the EDF table and capacity intervals of one CPU's frame.

pub mod offline;
