//! How a failed provider call is classified. The class, not the error text,
//! decides what the engine does next.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// 429 or the provider's own "slow down": wait (honouring Retry-After),
    /// without spending one of the payment's attempts.
    RateLimited,
    /// Timeout, connect error, 5xx: try again on the schedule.
    Transient,
    /// Authentication or configuration (401/403, a redirect, a bad
    /// signature): retrying cannot help, so the provider is paused and an
    /// alert raised.
    Permanent,
    /// The provider refused the request about this one payment (another
    /// 4xx: an unknown or malformed reference): that payment goes to
    /// review; the provider pauses only when several distinct payments are
    /// refused within minutes (then it is the provider, not the payment).
    Refused,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Transient => "transient",
            ErrorClass::Permanent => "permanent",
            ErrorClass::Refused => "refused",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
