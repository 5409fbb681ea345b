//! The planner (`tt_core::planner`, pure) and, here at the edge, how the planner thread and the
//! control thread share it ([`shared`]: a lock, the wall clock and the late-slot accounting).

pub use tt_core::planner::*;

pub mod pool;
pub mod shared;
