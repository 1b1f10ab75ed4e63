//! The pure heart of finality: what a status is, which changes are allowed,
//! when to ask the provider again, and what time it is.
//!
//! Nothing here does IO or needs an async runtime, so every rule can be unit-
//! and property-tested in isolation and reused by the store, the engine and
//! the simulator alike.
//!
//! # Layout
//! - [`status`]: canonical statuses, operation kinds and status sources.
//! - [`transition`]: the transition table per kind (data) and [`transition::decide`].
//! - [`schedule`]: retry schedules and the give-up policy.
//! - [`cost`]: what a policy costs and catches over payment fates, without the engine.
//! - [`clock`]: [`clock::Timestamp`], the [`clock::Clock`] trait, system and virtual clocks.
//! - [`error_class`]: how a failed provider call is classified.
//! - [`fault`]: crash-test fault points (compiled in only with the
//!   `fault-points` feature, which only the CLI's crash tests enable).
//! - `config_error`: [`ConfigError`], the one error of every configuration check.
//! - [`money`]: validated payment fields (`PaymentId`, `Amount`, `Currency`).
//! - [`secret`]: [`secret::Secret`], the one reader of secrets from the environment.
//! - [`scope`]: [`Scope`], a provider and one of its accounts: the owner
//!   of every payment and every fact.
//! - [`reported`]: the amount, currency and account a provider reports, and
//!   the one check that a final answer is about the registered money.
//! - [`amounts`]: a payment's sub-objects (captures, refunds, disputes) by
//!   their ids, the counters they sum to, and the status those say.
#![forbid(unsafe_code)]

pub mod amounts;
pub mod clock;
mod config_error;
pub mod cost;
pub mod error_class;
pub mod fault;
pub mod money;
pub mod reported;
pub mod schedule;
pub mod scope;
pub mod secret;
mod serde_duration;
pub mod status;
pub mod trace_context;
pub mod transition;

pub use clock::{Clock, SystemClock, Timestamp, VirtualClock};
pub use config_error::ConfigError;
pub use error_class::ErrorClass;
pub use reported::{found_by_adapter, money_mismatch, Reported};
pub use schedule::{FractionStep, GiveUp, NextPoll, RetryPolicy, Schedule};
pub use scope::Scope;
pub use status::{Kind, Source, Status};
pub use transition::{contradicts_success, decide, Decision, IgnoreReason};
