//! The control protocol and its state machine (`tt_core::control`, pure, re-exported here) and,
//! here at the edge, the unix socket that serves it ([`socket`]) and the journal's file
//! ([`journal`]: the core's journal plus `store`, `load`, `set_aside`).

pub use tt_core::control::*;

mod journal_store;
pub mod socket;

/// The control journal: its content and parse (the core's) and its file (here).
pub mod journal {
    pub use super::journal_store::{load, set_aside, store};
    pub use tt_core::control::journal::*;
}
