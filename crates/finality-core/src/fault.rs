//! Fault points for crash tests: `FINALITY_FAULT_POINT=<name>` makes the
//! process abort when it reaches that point, as `kill -9` would. Compiled
//! only with the `fault-points` feature (the CLI's tests enable it); in every
//! other build a point is an empty function and no environment is read.

#[cfg(feature = "fault-points")]
use std::sync::OnceLock;

#[cfg(feature = "fault-points")]
static ARMED: OnceLock<Option<String>> = OnceLock::new();

/// Without the `fault-points` feature: nothing.
#[cfg(not(feature = "fault-points"))]
#[inline(always)]
pub fn point(_name: &str) {}

/// Abort here if this point is armed.
#[cfg(feature = "fault-points")]
pub fn point(name: &str) {
    let armed = ARMED.get_or_init(|| std::env::var("FINALITY_FAULT_POINT").ok());
    if armed.as_deref() == Some(name) {
        eprintln!("fault point `{name}` reached: aborting");
        std::process::abort();
    }
}
