//! Fault points for crash tests: `FINALITY_FAULT_POINT=<name>` makes the
//! process abort when it reaches that point, as `kill -9` would. The
//! variable is read once; unset (production), a point costs one comparison.

use std::sync::OnceLock;

static ARMED: OnceLock<Option<String>> = OnceLock::new();

/// Abort here if this point is armed.
pub fn point(name: &str) {
    let armed = ARMED.get_or_init(|| std::env::var("FINALITY_FAULT_POINT").ok());
    if armed.as_deref() == Some(name) {
        eprintln!("fault point `{name}` reached: aborting");
        std::process::abort();
    }
}
