//! Fault points for crash tests: `FINALITY_FAULT_POINT=<name>` makes the
//! process abort when it reaches that point, as a kill -9 would. Read once;
//! unset in production, where a point costs one branch.

use std::sync::OnceLock;

static POINT: OnceLock<Option<String>> = OnceLock::new();

pub(crate) fn point(name: &str) {
    let armed = POINT.get_or_init(|| std::env::var("FINALITY_FAULT_POINT").ok());
    if armed.as_deref() == Some(name) {
        eprintln!("fault point `{name}` reached: aborting");
        std::process::abort();
    }
}
