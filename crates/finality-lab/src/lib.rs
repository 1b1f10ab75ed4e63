//! The lab: what finality is demonstrated, compared, tuned, broken and
//! measured with. Each module is one subcommand of the `finality` binary,
//! whose `main` only parses flags and calls `run` here.
//!
//! # Layout
//! - [`demo`]: `finality demo`, simulated payments end to end on virtual time.
//! - [`simulate`]: `finality simulate`, schedules compared on the real
//!   engine and an in-memory store, on virtual time.
//! - [`tune`]: `finality tune`, a schedule recommended from recorded history.
//! - [`chaos`]: `finality chaos`, the fault run with every payment checked.
//! - [`bench`]: `finality bench` (`docs/PERFORMANCE.md`).
#![forbid(unsafe_code)]

pub mod bench;
pub mod chaos;
pub mod demo;
pub mod simulate;
pub mod tune;
