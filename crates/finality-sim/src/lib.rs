//! A payment-provider simulator, so finality can be run, demonstrated and
//! tested end to end without a real provider.
//!
//! Per payment it draws a settle time (log-normal by default), an outcome
//! (succeeded / failed / cancelled / never settles) and how its webhook would
//! misbehave (lost, delayed, duplicated, reordered); it answers status queries
//! over HTTP on the shared [`finality_core::Clock`], counts calls per payment (and calls that
//! overlap for one payment), and injects 429s, 5xx and timeouts.
//!
//! # Layout
//! - `accounts`: several accounts behind one provider (Stripe Connect's
//!   connected accounts, Adyen's merchant accounts), in their wire formats.
//! - [`config`]: distributions, outcome mix, webhook behaviour and faults.
//! - [`plan`]: the drawn plan of each payment and its status at a time.
//! - [`model`]: the simulator: plans, calls, faults and the webhook queue.
//! - [`server`]: the HTTP API (`/v1/payments`, `/sim/stats`) and each
//!   provider's status API under its own prefix (`/stripe/v1/…`).
//! - [`webhooks`]: signed webhook deliveries with the drawn misbehaviour.
//! - [`delivery`]: sending queued deliveries on the simulator's clock.
//! - [`wire`]: each provider's vocabulary and body shapes.
//! - [`schemes`]: each provider's signing and encryption, written from the
//!   providers' published descriptions, independently of the adapters.

#![forbid(unsafe_code)]

mod accounts;
pub mod config;
pub mod delivery;
pub mod model;
pub mod plan;
pub mod published;
pub mod reports;
pub mod schemes;
pub mod server;
pub mod settlement;
pub mod webhooks;
pub mod wire;

pub use config::SimConfig;
pub use model::{Simulator, Stats};
pub use plan::{Outcome, PaymentPlan};
