//! Bakong's answers, every one the National Bank of Cambodia's Bakong Open
//! API documents for the transaction checks (v1.0.2,
//! `check_transaction_by_md5`, `…_by_full_hash`, `…_by_md5_list`). NBC
//! publishes no machine-readable specification, so these rows are held to
//! the documented answer samples in `testdata/bakong/` (each named in its
//! `SOURCES.md`) by `tests/published.rs`, which checks that the adapter
//! decides each sample as its row says.

use crate::contract::{row, Action, Row, ANY, PAYMENT};
use finality_core::Status::*;

/// A single check's answer, by `responseCode` / `errorCode`.
pub const ANSWER: &str = "check answer";
/// An item of `check_transaction_by_md5_list`, by `status`.
pub const LIST_ITEM: &str = "md5_list status";

pub const ROWS: &[Row] = &[
    row(ANSWER, "responseCode 0", PAYMENT, Action::Status(Succeeded), "a completed transaction: final, for `data.amount` `data.currency` (checked)", "\"Getting transaction successfully.\" (NBC sample, check_transaction_by_md5)"),
    row(ANSWER, "errorCode 1", PAYMENT, Action::Status(Pending), "not yet paid: not final, asked again (never failed)", "\"Transaction could not be found. Please check and try again.\" (NBC sample)"),
    row(ANSWER, "errorCode 3", PAYMENT, Action::Status(Failed), "final", "\"Transaction failed.\" (NBC error codes)"),
    row(ANSWER, "errorCode 6", ANY, Action::Ignore, "an unauthorised token: a permanent error, the provider pauses and alerts; no payment's status", "errorCode 6: unauthorised (NBC error codes)"),
    row(LIST_ITEM, "SUCCESS", PAYMENT, Action::Status(Succeeded), "final, for the item's `data.amount` (checked)", "\"Getting transaction successfully.\" (NBC, check_transaction_by_md5_list)"),
    row(LIST_ITEM, "NOT_FOUND", PAYMENT, Action::Status(Pending), "not yet paid: not final", "\"Transaction could not be found.\" (NBC, check_transaction_by_md5_list)"),
    row(LIST_ITEM, "FAILED", PAYMENT, Action::Status(Failed), "final", "\"Transaction failed.\" (NBC, check_transaction_by_md5_list)"),
];
