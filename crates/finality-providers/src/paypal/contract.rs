//! PayPal's published statuses and webhook event names, every one of them:
//! the order, capture, refund and authorization `status` enums of
//! paypal/paypal-rest-api-specifications at ec4d8f3 (`checkout_orders_v2`,
//! `payments_payment_v2`; vendored extract in `testdata/paypal/spec/`) and
//! the event names of PayPal's "Webhook event names" page and its Orders,
//! Payments, Disputes and Payouts webhook pages
//! (`testdata/paypal/spec/webhook_event_names.json`, each with its page).
//!
//! Sources: "ORD" is PayPal's `order_status` definition
//! (developer.paypal.com/api/orders/v2/definitions/order_status); "TS" is
//! PayPal's TypeScript server SDK's model docs (`doc/models/capture-status.md`
//! at 0822bd3); "EV" is "Webhook event names"; "APM" is "Subscribe to
//! checkout webhooks"; "DISP" is "Subscribe to disputes webhooks". Values
//! PayPal's own pages do not describe are quoted from the SDK copies named
//! in `testdata/research/paypal_contract.md`, marked third-party there.

use crate::contract::{row, to, Action, Row, ANY, PAYMENT, REFUND};
use finality_core::Status::*;

pub const ORDER: &str = "order.status";
pub const CAPTURE: &str = "capture.status";
pub const REFUND_STATUS: &str = "refund.status";
pub const AUTHORIZATION: &str = "authorization.status";
pub const EVENT: &str = "event_type";

use Action::{Depends, Ignore, Review};

const AUTH: &str = "an authorization: the order, or its capture, decides";

pub const ROWS: &[Row] = &[
    row(ORDER, "CREATED", PAYMENT, to(Pending), "not final", "\"The order was created with the specified context.\" (paypal-rust docs, third-party)"),
    row(ORDER, "SAVED", PAYMENT, to(Pending), "not final", "\"The order status continues to be in progress until a capture is made with final_capture = true\" (paypal-rust docs, third-party)"),
    row(ORDER, "APPROVED", PAYMENT, to(Processing), "not final: approved, nothing captured", "\"The customer approved the payment through the PayPal wallet or another form of guest or unbranded payment.\" (ORD)"),
    row(ORDER, "VOIDED", PAYMENT, to(Cancelled), "final", "\"All purchase units in the order are voided.\" (paypal-rust docs, third-party)"),
    row(ORDER, "COMPLETED", PAYMENT, Depends, "not final by itself: its captures decide (all must be COMPLETED; none: authorised only, processing)", "\"Check the payment status in `purchase_units[].payments.captures[].status` before fulfilling the order. A completed order can indicate a payment was authorized, an authorized payment was captured, or a payment was declined.\" (ORD)"),
    row(ORDER, "PAYER_ACTION_REQUIRED", PAYMENT, to(Pending), "not final: waits on the payer", "\"The order requires an action from the payer (e.g. 3DS authentication).\" (ORD)"),
    row(CAPTURE, "COMPLETED", PAYMENT, to(Succeeded), "final, for the capture's amount (checked against the registration)", "\"The funds for this captured payment were credited to the payee's PayPal account.\" (TS)"),
    row(CAPTURE, "DECLINED", PAYMENT, to(Failed), "final", "\"The funds could not be captured.\" (TS)"),
    row(CAPTURE, "PARTIALLY_REFUNDED", PAYMENT, to(Succeeded), "the payment stands; the partial refund is its own operation", "\"An amount less than this captured payment's amount was partially refunded to the payer.\" (TS)"),
    row(CAPTURE, "PENDING", PAYMENT, to(Processing), "not final (`status_details.reason` says why)", "\"The funds for this captured payment was not yet credited to the payee's PayPal account.\" (TS)"),
    row(CAPTURE, "REFUNDED", PAYMENT, to(Reversed), "final: the whole capture went back", "\"An amount greater than or equal to this captured payment's amount was refunded to the payer.\" (TS)"),
    row(CAPTURE, "FAILED", PAYMENT, Review, "an error, which does not say that no money moved: a human decides", "\"There was an error while capturing payment.\" (TS)"),
    row(REFUND_STATUS, "CANCELLED", REFUND, to(Cancelled), "final", "\"The refund was cancelled.\" (paypal-rs docs, third-party)"),
    row(REFUND_STATUS, "FAILED", REFUND, to(Failed), "final: the money did not go back", "\"The reason why the refund has the `PENDING` or `FAILED` status.\" (spec, refund_status_details)"),
    row(REFUND_STATUS, "PENDING", REFUND, to(Processing), "not final (an eCheck still clearing)", "\"The refund is pending. For more information, see status_details.reason.\" (paypal-rs docs, third-party)"),
    row(REFUND_STATUS, "COMPLETED", REFUND, to(Succeeded), "final", "\"The funds for this transaction were debited to the customer's account.\" (paypal_sdk docs, third-party)"),
    row(AUTHORIZATION, "CREATED", PAYMENT, Ignore, AUTH, "\"The authorized payment is created. No captured payments have been made for this authorized payment.\" (paypal_sdk docs, third-party)"),
    row(AUTHORIZATION, "CAPTURED", PAYMENT, Ignore, AUTH, "\"The authorized payment has one or more captures against it.\" (paypal_sdk docs, third-party)"),
    row(AUTHORIZATION, "DENIED", PAYMENT, Ignore, AUTH, "\"PayPal cannot authorize funds for this authorized payment.\" (paypal_sdk docs, third-party)"),
    row(AUTHORIZATION, "PARTIALLY_CAPTURED", PAYMENT, Ignore, AUTH, "\"A captured payment was made for the authorized payment for an amount that is less than the amount of the original authorized payment.\" (paypal_sdk docs, third-party)"),
    row(AUTHORIZATION, "VOIDED", PAYMENT, Ignore, AUTH, "\"The authorized payment was voided. No more captured payments can be made against this authorized payment.\" (paypal_sdk docs, third-party)"),
    row(AUTHORIZATION, "PENDING", PAYMENT, Ignore, AUTH, "\"The created authorization is in pending state.\" (paypal_sdk docs, third-party)"),
    row(EVENT, "CHECKOUT.ORDER.APPROVED", PAYMENT, to(Processing), "not final: a capture must follow", "\"A buyer approved a checkout order\" (PayPal, Orders V2 webhooks)"),
    row(EVENT, "CHECKOUT.ORDER.COMPLETED", PAYMENT, Depends, "the order's captures decide, as for a poll", "\"CHECKOUT.ORDER.COMPLETED\" (PayPal, Orders V2 webhooks: \"For use by marketplaces and platforms only.\")"),
    row(EVENT, "CHECKOUT.ORDER.VOIDED", PAYMENT, to(Cancelled), "final: the order was voided", "\"All purchase units in the order are voided.\" (order VOIDED, paypal-rust docs, third-party)"),
    row(EVENT, "CHECKOUT.PAYMENT-APPROVAL.REVERSED", PAYMENT, to(Cancelled), "the buyer's approval was reversed before any capture: no money moved", "\"CHECKOUT.PAYMENT-APPROVAL.REVERSED\" (PayPal, Orders V2 webhooks; \"Handle uncaptured payments\")"),
    row(EVENT, "PAYMENT.AUTHORIZATION.CREATED", PAYMENT, Ignore, AUTH, "\"A payment authorization is created, approved, executed, or a future payment authorization is created.\" (EV)"),
    row(EVENT, "PAYMENT.AUTHORIZATION.VOIDED", PAYMENT, Ignore, AUTH, "\"A payment authorization is voided\" (EV)"),
    row(EVENT, "PAYMENT.CAPTURE.COMPLETED", PAYMENT, to(Succeeded), "final, for the capture's amount", "\"A payment capture completes.\" (EV); \"Listen for this webhook and then fulfill the order.\" (APM)"),
    row(EVENT, "PAYMENT.CAPTURE.PENDING", PAYMENT, to(Processing), "not final", "\"Do not fulfill the order until payment completion is successful.\" (APM)"),
    row(EVENT, "PAYMENT.CAPTURE.DECLINED", PAYMENT, to(Failed), "final", "\"A payment capture is declined.\" (EV)"),
    row(EVENT, "PAYMENT.CAPTURE.DENIED", PAYMENT, to(Failed), "final (the older name of DECLINED)", "\"A payment capture is denied.\" (EV, older page); \"Listen for this webhook and then cancel fulfilling the order.\" (APM)"),
    row(EVENT, "PAYMENT.CAPTURE.REFUNDED", ANY, Depends, "the refund settles a refund registered by its id; the payment is reversed only when its capture, asked again, is REFUNDED", "\"A merchant refunds a payment capture.\" (EV)"),
    row(EVENT, "PAYMENT.CAPTURE.REVERSED", PAYMENT, to(Reversed), "final: PayPal took the capture back", "\"PayPal reverses a payment capture.\" (EV)"),
    row(EVENT, "CUSTOMER.DISPUTE.CREATED", PAYMENT, Review, "a dispute holds the funds: a human defends", "\"CUSTOMER.DISPUTE.CREATED\" (DISP)"),
    row(EVENT, "CUSTOMER.DISPUTE.RESOLVED", PAYMENT, Review, "the outcome decides where the money is: a human checks", "\"CUSTOMER.DISPUTE.RESOLVED\" (DISP)"),
    row(EVENT, "CUSTOMER.DISPUTE.UPDATED", PAYMENT, Ignore, "evidence and messages; the resolution is its own event", "\"CUSTOMER.DISPUTE.UPDATED\" (DISP)"),
    row(EVENT, "RISK.DISPUTE.CREATED", PAYMENT, Ignore, "the deprecated dispute event; CUSTOMER.DISPUTE.CREATED is followed", "\"RISK.DISPUTE.CREATED\" (EV, older page)"),
    row(EVENT, "PAYMENT.PAYOUTSBATCH.*", ANY, Ignore, "PayPal Payouts are not followed by this adapter", "PayPal, Payouts webhook event names"),
    row(EVENT, "PAYMENT.PAYOUTS-ITEM.*", ANY, Ignore, "PayPal Payouts are not followed by this adapter", "PayPal, Payouts webhook event names"),
    row(EVENT, "PAYMENT.SALE.*", ANY, Ignore, "a Payments V1 sale, not an order or capture this adapter follows", "PayPal, Webhook event names: Payments V1"),
    row(EVENT, "BILLING.*", ANY, Ignore, "subscriptions and plans, not a payment's status", "EV, older page"),
    row(EVENT, "INVOICING.*", ANY, Ignore, "invoices, not a payment's status", "EV, older page"),
    row(EVENT, "IDENTITY.*", ANY, Ignore, "consents, not a payment's status", "EV, older page"),
];

use crate::contract::MoneyRow;
use finality_core::amounts::{PieceKind, PieceState};

const CAPTURE_FIELDS: &str = "`id`, `amount` (`value` in `currency_code`)";

const fn capture(value: &'static str, state: Option<PieceState>, source: &'static str) -> MoneyRow {
    MoneyRow {
        list: CAPTURE,
        value,
        kind: PieceKind::Capture,
        state,
        fields: CAPTURE_FIELDS,
        source,
    }
}

/// Every published capture status as a piece: a capture is money taken
/// once it completed (its refunds are their own objects, so a refunded
/// capture was still taken), nothing when declined or failed.
pub const MONEY: &[MoneyRow] = &[
    capture("COMPLETED", Some(PieceState::Succeeded), "\"The funds for this captured payment were credited to the payee's PayPal account.\" (TS)"),
    capture("PARTIALLY_REFUNDED", Some(PieceState::Succeeded), "\"An amount less than this captured payment's amount was partially refunded to the payer.\" (TS): captured first"),
    capture("REFUNDED", Some(PieceState::Succeeded), "\"An amount greater than or equal to this captured payment's amount was refunded to the payer.\" (TS): captured first"),
    capture("PENDING", Some(PieceState::Pending), "\"The funds for this captured payment was not yet credited to the payee's PayPal account.\" (TS)"),
    capture("DECLINED", Some(PieceState::Failed), "\"The funds could not be captured.\" (TS)"),
    capture("FAILED", None, "\"There was an error while capturing payment.\" (TS): an error does not say that no money moved, so its status row sends it to a person"),
];
