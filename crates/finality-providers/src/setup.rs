//! Why an adapter cannot be built from its configuration, and why one
//! refuses a registration: both are the operator's or the caller's to fix,
//! named precisely, never a provider's failure.

use finality_core::secret::SecretError;
use finality_core::Kind;

/// An adapter that cannot be built from what it was given: reported at
/// start (the provider is paused as a permanent error), naming the setting.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A key or secret that does not decode.
    #[error("{what} is not {expected}: {detail}")]
    Undecodable {
        what: &'static str,
        expected: &'static str,
        detail: String,
    },
    /// A key read from the setting (an environment variable's name) that
    /// is not what the provider issues.
    #[error("{setting}: not {expected}: {detail}")]
    Key {
        setting: String,
        expected: &'static str,
        detail: String,
    },
    /// A setting the adapter cannot use.
    #[error("{setting}: {problem}")]
    Setting {
        setting: String,
        problem: &'static str,
    },
    /// Something the adapter needs and was not given.
    #[error("no {0} configured")]
    Missing(&'static str),
    /// A `${` without its `}` in a configured value.
    #[error("unclosed ${{ in `{0}`")]
    Unclosed(String),
    /// A secret the configuration names that cannot be read.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The HTTP client could not be built.
    #[error("{0}")]
    Client(String),
}

impl From<crate::ProviderError> for SetupError {
    fn from(e: crate::ProviderError) -> Self {
        SetupError::Client(e.to_string())
    }
}

/// A registration an adapter refuses (answered 422 naming the field): an
/// id it could never poll for that kind, or an amount the provider never
/// takes. A payment that could never be followed is the caller's mistake,
/// not a week of polls.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The id is the provider's, but of another kind of object.
    #[error(
        "`{reference}` is a {provider} {object} id, which is a {is}, not a {kind}; a {kind} is \
         registered with {accepted}"
    )]
    OtherKind {
        reference: String,
        provider: &'static str,
        object: &'static str,
        is: Kind,
        kind: Kind,
        accepted: String,
    },
    /// Not an id of an object the adapter polls for that kind.
    #[error(
        "`{reference}` is not a {provider} id finality can poll for a {kind}: expected \
         {accepted}{hint}"
    )]
    NotAnId {
        reference: String,
        provider: &'static str,
        kind: Kind,
        accepted: String,
        hint: &'static str,
    },
    /// The id does not have the shape the provider names such an object by.
    #[error("{shape}; `{reference}` is not")]
    Shape {
        shape: &'static str,
        reference: String,
    },
    /// An operation this adapter does not follow.
    #[error("`{reference}`: {what}")]
    NotFollowed {
        reference: String,
        what: &'static str,
    },
    /// More than the provider takes in one operation.
    #[error("{amount} is more than {bound}")]
    Amount { amount: String, bound: String },
}
