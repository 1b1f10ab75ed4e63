//! Stripe's published statuses and event types, every one of them, from
//! stripe/openapi `openapi/spec3.json` at f6c2a48 (vendored extract in
//! `testdata/stripe/spec/`): the PaymentIntent, Refund, Payout, Charge
//! and Dispute `status` values and the event types a webhook endpoint can
//! be subscribed to (`enabled_events`).
//!
//! Sources: "S" is the spec's description of the field; "EV" is Stripe's
//! description of the event type (the class comment of
//! `lib/stripe/events/v1_<type>_event.rb` in stripe/stripe-ruby at 8a3605a,
//! "generated from our OpenAPI spec"); "PI" is "How intents work"
//! (stripe.com/docs/payments/intents); "RC" is the Refunds API's cancel
//! page (docs.stripe.com/api/refunds/cancel); "DC" is the Disputes API's
//! close page. Full quotes: `testdata/research/stripe_contract.md`.

use crate::contract::{row, to, Action, Row, ANY, PAYMENT, PAYOUT, REFUND};
use finality_core::Status::*;

pub const PAYMENT_INTENT: &str = "payment_intent.status";
pub const REFUND_STATUS: &str = "refund.status";
pub const PAYOUT_STATUS: &str = "payout.status";
pub const CHARGE_STATUS: &str = "charge.status";
pub const DISPUTE_STATUS: &str = "dispute.status";
pub const EVENT: &str = "event_type";

use Action::{Depends, Ignore, Review};

const FAMILY: &str = "a family of event types about other objects (S, enabled_events)";
const BY_OBJECT: &str = "the object's own status decides";

pub const ROWS: &[Row] = &[
    row(PAYMENT_INTENT, "requires_payment_method", PAYMENT, to(Pending), "not final: a decline returns here and the payment can be retried", "\"If the payment attempt fails (for example due to a decline), the PaymentIntent's status returns to requires_payment_method so that the payment can be retried.\" (Stripe, How PaymentIntents work)"),
    row(PAYMENT_INTENT, "requires_confirmation", PAYMENT, to(Pending), "not final", "\"After the customer provides their payment information, the PaymentIntent is ready to be confirmed.\" (PI)"),
    row(PAYMENT_INTENT, "requires_action", PAYMENT, to(Pending), "not final: waits on the customer (3-D Secure)", "\"If the payment requires additional actions, such as authenticating with 3D Secure, the PaymentIntent has a status of requires_action.\" (PI)"),
    row(PAYMENT_INTENT, "processing", PAYMENT, to(Processing), "not final", "\"Once required actions are handled, the PaymentIntent moves to processing.\" (PI)"),
    row(PAYMENT_INTENT, "requires_capture", PAYMENT, to(Processing), "not final: authorised, not captured", "\"If you're separately authorizing and capturing funds, your PaymentIntent can instead move to requires_capture.\" (Stripe, How PaymentIntents work)"),
    row(PAYMENT_INTENT, "succeeded", PAYMENT, to(Succeeded), "final, for `amount_received` (checked against the registration)", "\"A PaymentIntent with a status of succeeded means that the payment flow it is driving is complete.\" (PI)"),
    row(PAYMENT_INTENT, "canceled", PAYMENT, to(Cancelled), "final", "\"This invalidates the PaymentIntent for future payment attempts, and cannot be undone.\" (PI)"),
    row(REFUND_STATUS, "pending", REFUND, to(Pending), "not final (`pending_reason` says why)", "\"If the status of a refund is pending, you can inspect the pending_reason field to understand why\" (Stripe changelog, refund pending reason)"),
    row(REFUND_STATUS, "requires_action", REFUND, to(Pending), "not final: waits on the customer", "\"Only refunds for payment methods that require customer action can enter the requires_action state.\" (RC)"),
    row(REFUND_STATUS, "succeeded", REFUND, to(Succeeded), "final for the refund (a later `failed` reverses it)", "\"Status of the refund. This can be `pending`, `requires_action`, `succeeded`, `failed`, or `canceled`.\" (S)"),
    row(REFUND_STATUS, "failed", REFUND, to(Failed), "failed; after `succeeded`, reversed (the money is back with the merchant) and the payment it reversed goes to review", "\"After the refund fails, this balance transaction describes the adjustment made on your account balance that reverses the initial balance transaction.\" (S, failure_balance_transaction)"),
    row(REFUND_STATUS, "canceled", REFUND, to(Cancelled), "final", "\"Only refunds for payment methods that require customer action can enter the requires_action state.\" (RC: a refund awaiting action can be canceled)"),
    row(PAYOUT_STATUS, "pending", PAYOUT, to(Pending), "not final", "\"A payout is `pending` until it's submitted to the bank, when it becomes `in_transit`.\" (S)"),
    row(PAYOUT_STATUS, "in_transit", PAYOUT, to(Processing), "not final", "\"A payout is `pending` until it's submitted to the bank, when it becomes `in_transit`.\" (S)"),
    row(PAYOUT_STATUS, "paid", PAYOUT, to(Succeeded), "succeeded, which a later `failed` moves on to reversed", "\"Some payouts that fail might initially show as `paid`, then change to `failed`.\" (S)"),
    row(PAYOUT_STATUS, "failed", PAYOUT, to(Failed), "failed; after `paid`, reversed (the funds came back)", "\"The status changes to `paid` if the transaction succeeds, or to `failed` or `canceled` (within 5 business days).\" (S)"),
    row(PAYOUT_STATUS, "canceled", PAYOUT, to(Cancelled), "final (also after `in_transit`)", "\"The status changes to `paid` if the transaction succeeds, or to `failed` or `canceled` (within 5 business days).\" (S)"),
    row(CHARGE_STATUS, "succeeded", PAYMENT, Ignore, "the PaymentIntent decides (a charge may be only authorised)", "\"`true` if the charge succeeded, or was successfully authorized for later capture.\" (S, paid)"),
    row(CHARGE_STATUS, "pending", PAYMENT, Ignore, "the PaymentIntent decides", "\"The status of the payment is either `succeeded`, `pending`, or `failed`.\" (S)"),
    row(CHARGE_STATUS, "failed", PAYMENT, Ignore, "one attempt: the PaymentIntent returns to requires_payment_method", "\"The status of the payment is either `succeeded`, `pending`, or `failed`.\" (S)"),
    row(DISPUTE_STATUS, "warning_needs_response", PAYMENT, Ignore, "an inquiry, not a chargeback: no money moved", "\"The current status of a dispute. Possible values include: `warning_needs_response` ...\" (S; no sentence on the value)"),
    row(DISPUTE_STATUS, "warning_under_review", PAYMENT, Ignore, "an inquiry, not a chargeback: no money moved", "\"The current status of a dispute.\" (S; no sentence on the value)"),
    row(DISPUTE_STATUS, "warning_closed", PAYMENT, Ignore, "the inquiry closed without a chargeback", "\"Occurs when a dispute is closed and the dispute status changes to `lost`, `warning_closed`, or `won`.\" (EV charge.dispute.closed)"),
    row(DISPUTE_STATUS, "needs_response", PAYMENT, Review, "money withdrawn, outcome open: a human defends", "\"Debits the disputed amount, plus a dispute fee, from your Stripe account.\" (Stripe, How disputes work)"),
    row(DISPUTE_STATUS, "under_review", PAYMENT, Review, "outcome open", "\"Throughout this process, Stripe facilitates your case, but doesn't have influence over the outcome\" (Stripe, How disputes work)"),
    row(DISPUTE_STATUS, "won", PAYMENT, Ignore, "the payment stays succeeded", "\"Occurs when funds are reinstated to your account after a dispute is closed.\" (EV charge.dispute.funds_reinstated)"),
    row(DISPUTE_STATUS, "lost", PAYMENT, to(Reversed), "final: the disputed amount is gone (a partial dispute is not the registered amount: review)", "\"Closing a dispute is irreversible.\" (DC)"),
    row(DISPUTE_STATUS, "prevented", PAYMENT, Review, "meaning not published: a human decides", "\"The current status of a dispute.\" (S; no sentence on the value)"),
    row(EVENT, "payment_intent.amount_capturable_updated", PAYMENT, Depends, BY_OBJECT, "\"Occurs when a PaymentIntent has funds to be captured.\" (EV)"),
    row(EVENT, "payment_intent.canceled", PAYMENT, Depends, BY_OBJECT, "\"Occurs when a PaymentIntent is canceled.\" (EV)"),
    row(EVENT, "payment_intent.created", PAYMENT, Depends, BY_OBJECT, "\"Occurs when a new PaymentIntent is created.\" (EV)"),
    row(EVENT, "payment_intent.partially_funded", PAYMENT, Depends, BY_OBJECT, "\"Occurs when funds are applied to a customer_balance PaymentIntent and the 'amount_remaining' changes.\" (EV)"),
    row(EVENT, "payment_intent.payment_failed", PAYMENT, Depends, "the object's own status decides: a failed attempt, so pending, not failed", "\"Occurs when a PaymentIntent has failed the attempt to create a payment method or a payment.\" (EV)"),
    row(EVENT, "payment_intent.processing", PAYMENT, Depends, BY_OBJECT, "\"Occurs when a PaymentIntent has started processing.\" (EV)"),
    row(EVENT, "payment_intent.requires_action", PAYMENT, Depends, BY_OBJECT, "\"Occurs when a PaymentIntent transitions to requires_action state.\" (EV)"),
    row(EVENT, "payment_intent.succeeded", PAYMENT, Depends, BY_OBJECT, "\"Occurs when a PaymentIntent has successfully completed payment.\" (EV)"),
    row(EVENT, "charge.captured", PAYMENT, Ignore, "the PaymentIntent's own event carries the capture", "\"Occurs whenever a previously uncaptured charge is captured.\" (EV)"),
    row(EVENT, "charge.dispute.closed", PAYMENT, Depends, "by the dispute's status: `lost` reverses the PaymentIntent, `won` and `warning_closed` change nothing", "\"Occurs when a dispute is closed and the dispute status changes to `lost`, `warning_closed`, or `won`.\" (EV)"),
    row(EVENT, "charge.dispute.created", PAYMENT, Depends, "by the dispute's status: a chargeback (`needs_response`) is kept for review, an inquiry (`warning_*`) ignored", "\"Occurs whenever a customer disputes a charge with their bank.\" (EV)"),
    row(EVENT, "charge.dispute.funds_reinstated", PAYMENT, Review, "the money is back after a dispute: a human decides", "\"Occurs when funds are reinstated to your account after a dispute is closed.\" (EV)"),
    row(EVENT, "charge.dispute.funds_withdrawn", PAYMENT, Review, "not final: the dispute can still be won; `charge.dispute.closed` as `lost` reverses", "\"Occurs when funds are removed from your account due to a dispute.\" (EV)"),
    row(EVENT, "charge.dispute.updated", PAYMENT, Ignore, "evidence only; the outcome comes with charge.dispute.closed", "\"Occurs when the dispute is updated (usually with evidence).\" (EV)"),
    row(EVENT, "charge.expired", PAYMENT, Ignore, "the PaymentIntent's own event decides", "\"Occurs whenever an uncaptured charge expires.\" (EV)"),
    row(EVENT, "charge.failed", PAYMENT, Ignore, "one attempt; the PaymentIntent decides", "\"Occurs whenever a failed charge attempt occurs.\" (EV)"),
    row(EVENT, "charge.pending", PAYMENT, Ignore, "the PaymentIntent decides", "\"Occurs whenever a pending charge is created.\" (EV)"),
    row(EVENT, "charge.refund.updated", REFUND, Depends, "the refund's own status decides", "\"Occurs whenever a refund is updated on selected payment methods.\" (EV)"),
    row(EVENT, "charge.refunded", PAYMENT, Depends, "reversed when `refunded` is true (the whole charge); a partial refund changes nothing", "\"Whether the charge has been fully refunded. If the charge is only partially refunded, this attribute will still be false.\" (S, refunded)"),
    row(EVENT, "charge.succeeded", PAYMENT, Ignore, "the charge may be only authorised: the PaymentIntent decides", "\"Occurs whenever a charge is successful.\" (EV)"),
    row(EVENT, "charge.updated", PAYMENT, Ignore, "the PaymentIntent decides", "\"Occurs whenever a charge description or metadata is updated, or upon an asynchronous capture.\" (EV)"),
    row(EVENT, "refund.created", REFUND, Depends, BY_OBJECT, "\"Occurs whenever a refund is created.\" (EV)"),
    row(EVENT, "refund.failed", REFUND, Depends, BY_OBJECT, "\"Occurs whenever a refund has failed.\" (EV)"),
    row(EVENT, "refund.updated", REFUND, Depends, BY_OBJECT, "\"Occurs whenever a refund is updated.\" (EV)"),
    row(EVENT, "payout.canceled", PAYOUT, Depends, BY_OBJECT, "\"Occurs whenever a payout is canceled.\" (EV)"),
    row(EVENT, "payout.created", PAYOUT, Depends, BY_OBJECT, "\"Occurs whenever a payout is created.\" (EV)"),
    row(EVENT, "payout.failed", PAYOUT, Depends, BY_OBJECT, "\"Occurs whenever a payout attempt fails.\" (EV)"),
    row(EVENT, "payout.paid", PAYOUT, Depends, BY_OBJECT, "\"If the payout fails, a `payout.failed` notification is also sent, at a later time.\" (EV)"),
    row(EVENT, "payout.reconciliation_completed", PAYOUT, Ignore, "reconciliation data; no status change", "\"Occurs whenever balance transactions paid out in an automatic payout can be queried.\" (EV)"),
    row(EVENT, "payout.updated", PAYOUT, Depends, BY_OBJECT, "\"Occurs whenever a payout is updated.\" (EV)"),
    row(EVENT, "account.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "application_fee.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "balance.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "balance_settings.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "billing.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "billing_portal.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "capability.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "cash_balance.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "checkout.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "climate.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "coupon.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "credit_note.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "customer.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "customer_cash_balance_transaction.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "entitlements.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "file.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "financial_connections.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "identity.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "invoice.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "invoice_payment.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "invoiceitem.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "issuing_authorization.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "issuing_card.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "issuing_cardholder.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "issuing_dispute.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "issuing_personalization_design.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "issuing_token.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "issuing_transaction.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "mandate.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "payment_link.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "payment_method.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "person.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "plan.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "price.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "product.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "promotion_code.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "quote.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "radar.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "reporting.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "reserve.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "review.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "setup_intent.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "sigma.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "source.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "subscription_schedule.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "tax.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "tax_rate.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "terminal.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "test_helpers.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "topup.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "transfer.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
    row(EVENT, "treasury.*", ANY, Ignore, "not a payment, refund or payout finality tracks", FAMILY),
];

use crate::contract::MoneyRow;
use finality_core::amounts::{PieceKind, PieceState};

const REFUND_FIELDS: &str = "`charge.refunds.data[]`: `id`, `amount`, `currency`";

const fn refund(value: &'static str, state: Option<PieceState>, source: &'static str) -> MoneyRow {
    MoneyRow {
        list: REFUND_STATUS,
        value,
        kind: PieceKind::Refund,
        state,
        fields: REFUND_FIELDS,
        source,
    }
}

/// Every published refund status as a piece of the payment a
/// `charge.refunded` names (with the charge's own capture,
/// `amount_captured`, by the charge's id).
pub const MONEY: &[MoneyRow] = &[
    refund("succeeded", Some(PieceState::Succeeded), "\"Status of the refund. This can be `pending`, `requires_action`, `succeeded`, `failed`, or `canceled`.\" (S)"),
    refund("pending", Some(PieceState::Pending), "\"If the status of a refund is pending, you can inspect the pending_reason field to understand why\" (Stripe changelog, refund pending reason)"),
    refund("requires_action", Some(PieceState::Pending), "\"Only refunds for payment methods that require customer action can enter the requires_action state.\" (RC)"),
    refund("failed", Some(PieceState::Failed), "\"After the refund fails, this balance transaction describes the adjustment made on your account balance that reverses the initial balance transaction.\" (S, failure_balance_transaction): nothing went back"),
    refund("canceled", Some(PieceState::Failed), "\"Only refunds for payment methods that require customer action can enter the requires_action state.\" (RC: a refund awaiting action can be canceled): nothing went back"),
];
