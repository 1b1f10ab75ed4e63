//! Adyen's notification event codes, every one of the published list
//! (`NotificationRequestItem.eventCode` and the two codes with schemas of
//! their own in Adyen/adyen-openapi `json/Webhooks-v1.json` at aa014f0,
//! vendored in `testdata/adyen/spec/`), with `success` true and false.
//!
//! Sources: "W" is that file's webhook description for the code
//! (`/webhooks/~1CODE/post/description`); "FR" is Adyen's "CAPTURE_FAILED
//! and REFUND_FAILED reasons" page (docs.adyen.com/online-payments/capture/
//! failure-reasons); "OF" is "What are offers?" (adyen.help); "RV" is
//! "Reversal" (docs.adyen.com/online-payments/reversal); "DN" is "Dispute
//! webhooks" (docs.adyen.com/risk-management/disputes-api/
//! dispute-notifications). Notes with the full quotes:
//! `testdata/research/adyen_contract.md`.

use crate::contract::{row, to, Action, Row, ANY, PAYMENT, REFUND};
use finality_core::Status::*;

/// The list of codes with `success = "true"`.
pub const TRUE: &str = "eventCode";
/// The same codes with `success = "false"`.
pub const FALSE: &str = "eventCode success=false";

use Action::{Depends, Ignore, Review};

const REFUSED: &str = "the request was refused; the payment's status stands";
const SUCCESS_FALSE: &str = "\"If `false`: the event was not executed successfully.\" (W, success)";

/// Every published code, `success` true then false.
pub const ROWS: &[Row] = &[
    row(TRUE, "AUTHENTICATION", ANY, Ignore, "a 3-D Secure step, not a payment's outcome", "in the enum only: no webhook entry, no description (W)"),
    row(TRUE, "AUTHORISATION", PAYMENT, Depends, "succeeded with automatic capture; processing with `capture = \"manual\"` (the CAPTURE settles it)", "\"If `true`: The payment request was successful.\" (W); \"The authorization reserves the funds on the shopper's bank account.\" (Adyen, Capture)"),
    row(TRUE, "AUTHORISATION_ADJUSTMENT", PAYMENT, Ignore, "the authorised amount changed; the payment's status did not", "\"The result of the request to adjust the authorised amount sent through the /adjustAuthorisation endpoint.\" (W)"),
    row(TRUE, "AUTORESCUE", PAYMENT, Review, "a refused payment was rescued by a retry: a human confirms the money before it counts", "\"The Auto Rescue process ended.\" (W); \"Adyen's Auto Rescue automatically retries refused or charged back shopper-not-present transactions\" (Adyen, Auto Rescue)"),
    row(TRUE, "CANCELLATION", PAYMENT, to(Cancelled), "the authorisation was cancelled before capture", "\"The result of the request to cancel a payment.\" (W)"),
    row(TRUE, "CANCEL_AUTORESCUE", PAYMENT, Ignore, "no more retries: the refusal already recorded stands", "\"The Auto Rescue process was canceled.\" (W)"),
    row(TRUE, "CANCEL_OR_REFUND", PAYMENT, Depends, "cancelled when `additionalData.modification.action` is `cancel`, reversed when `refund`; without the action cancelled, and its refund piece (the full amount) makes a captured payment reversed (counted, `adyen::pieces`)", "\"The result of the request to cancel or refund a payment.\" (W); \"The reversed amount is always the full payment amount.\" (Checkout API, /reversals)"),
    row(TRUE, "CAPTURE", PAYMENT, to(Succeeded), "the money was captured; also the re-capture after a CAPTURE_FAILED (reason `Transaction Recaptured`), kept as its own event", "\"The result of the request to capture a payment.\" (W); re-captured: \"you receive a webhook event with: eventCode CAPTURE, success true, reason Transaction Recaptured\" (FR)"),
    row(TRUE, "CAPTURE_FAILED", PAYMENT, Review, "not final: Adyen usually re-captures; an open payment waits in review for the CAPTURE that follows, a succeeded one keeps its status beside a review row", "\"You do not need to take any action. Adyen will try to fix the issue and re-capture the transaction.\" (FR)"),
    row(TRUE, "CHARGEBACK", PAYMENT, to(Reversed), "the funds were taken back", "\"The payment was charged back, and the funds were deducted from your account.\" (W)"),
    row(TRUE, "CHARGEBACK_REVERSED", PAYMENT, Review, "the chargeback was defended, but \"not final\": a human decides", "\"This stage is not final. If the issuing bank presents a second chargeback, you can still lose the chargeback case.\" (W)"),
    row(TRUE, "DISPUTE_DEFENSE_PERIOD_ENDED", PAYMENT, Ignore, "confirms a dispute already followed by its CHARGEBACK", "\"You have not defended the dispute within the timeframe, or the defense period ended because you accepted liability\" (W)"),
    row(TRUE, "EXPIRE", PAYMENT, to(Cancelled), "the authorisation lapsed uncaptured: no money moved; after a partial capture the payment is succeeded for the captured amount (counted, `adyen::pieces`)", "\"The remaining uncaptured amount expired\" (W)"),
    row(TRUE, "HANDLED_EXTERNALLY", ANY, Review, "meaning unpublished; settled outside Adyen, perhaps: a human decides", "in the enum only: no webhook entry, no description (W)"),
    row(TRUE, "INFORMATION_SUPPLIED", PAYMENT, Ignore, "a dispute defense step; no money moved", "\"You have successfully uploaded your dispute defense documents, or Adyen has auto-defended the dispute.\" (W)"),
    row(TRUE, "ISSUER_COMMENTS", PAYMENT, Ignore, "the issuer's comments on a dispute", "\"The issuer included free-text comments with relevant information about the dispute process\" (W)"),
    row(TRUE, "ISSUER_RESPONSE_TIMEFRAME_EXPIRED", PAYMENT, Review, "the dispute went the merchant's way; whether money returns is not said: a human decides", "\"The issuer accepted your defense of the dispute or did not respond in time.\" (W)"),
    row(TRUE, "MANUAL_REVIEW_ACCEPT", PAYMENT, Ignore, "the payment goes on; its AUTHORISATION and CAPTURE decide it", "\"The manual review was accepted.\" (W)"),
    row(TRUE, "MANUAL_REVIEW_REJECT", PAYMENT, Review, "rejected by a risk reviewer; what follows (cancel, refund) is not said: a human decides", "\"The manual review was rejected.\" (W)"),
    row(TRUE, "NOTIFICATION_OF_CHARGEBACK", PAYMENT, Ignore, "a dispute opened; no funds taken yet (its CHARGEBACK takes them)", "\"The dispute process was opened. You should investigate the dispute and supply the defense documents.\" (W)"),
    row(TRUE, "NOTIFICATION_OF_FRAUD", PAYMENT, Ignore, "an alert, no money moved", "\"These are informational notifications from Adyen, providing you the opportunity to take action\" (W)"),
    row(TRUE, "OFFER_CLOSED", PAYMENT, Review, "not final: a closed offer \"may still be authorised\"; the payment waits in review, and a later AUTHORISATION settles it", "\"If an offer expires, it may still be authorised, or you can refund the amount. Write your code to handle these cases.\" (OF)"),
    row(TRUE, "ORDER_CLOSED", PAYMENT, to(Succeeded), "the order (partial payments) is paid in full", "\"The result of the last partial payment for the order.\" (W); \"When the shopper pays the total amount of the order, we close the order\" (Adyen, Partial payments)"),
    row(TRUE, "ORDER_OPENED", PAYMENT, to(Processing), "the first partial payment of an order was made", "\"The first partial payment was made, and the order was created.\" (W)"),
    row(TRUE, "PAIDOUT_REVERSED", ANY, Ignore, "a marketplace payout, not an operation finality follows for Adyen", "\"The financial institution rejected the payout. We will return the funds back to your account.\" (W)"),
    row(TRUE, "PAYOUT_DECLINE", ANY, Ignore, "a payout (deprecated webhook), not an operation finality follows for Adyen", "\"The payout was declined.\" (W)"),
    row(TRUE, "PAYOUT_EXPIRE", ANY, Ignore, "a payout (deprecated webhook), not an operation finality follows for Adyen", "\"The payout expired.\" (W)"),
    row(TRUE, "PAYOUT_THIRDPARTY", ANY, Ignore, "a payout (deprecated webhook), not an operation finality follows for Adyen", "\"The result of the payout request.\" (W)"),
    row(TRUE, "POSTPONED_REFUND", REFUND, to(Processing), "the refund waits for the capture", "\"The refund was postponed until after payment capture.\" (W)"),
    row(TRUE, "PREARBITRATION_LOST", PAYMENT, to(Reversed), "the dispute was lost", "\"The cardholder's bank declined the pre-arbitration case.\" (W)"),
    row(TRUE, "PREARBITRATION_OPEN", PAYMENT, Ignore, "the dispute goes on", "\"The cardholder's bank opened the pre-arbitration case.\" (W)"),
    row(TRUE, "PREARBITRATION_WON", PAYMENT, Review, "the dispute was won; whether the money is back is not said: a human decides", "\"The cardholder's bank accepted the pre-arbitration case.\" (W)"),
    row(TRUE, "RECURRING_CONTRACT", ANY, Ignore, "a stored-payment token, not a payment's status", "\"A recurring contract has been created.\" (W)"),
    row(TRUE, "REFUND", REFUND, to(Succeeded), "the refund (named by its own pspReference) was sent to the scheme", "\"The result of the request to refund a payment.\" (W)"),
    row(TRUE, "REFUNDED_REVERSED", REFUND, Review, "the refund came back to the merchant: the shopper was not refunded", "\"The refunded amount was reversed and returned to your bank account.\" (W)"),
    row(TRUE, "REFUND_FAILED", REFUND, Review, "not final: failures \"apply equally\" to refunds, which may be retried; a human checks the refund", "\"it means that the capture or refund was rejected by the card scheme\"; \"these failures apply equally to both\" (FR)"),
    row(TRUE, "REFUND_WITH_DATA", REFUND, to(Succeeded), "an unreferenced refund finality tracks by its pspReference", "\"The result of the request to refund with data.\" (W)"),
    row(TRUE, "REPORT_AVAILABLE", ANY, Ignore, "a report, not a payment (with a settlement table, the file it names is downloaded and reconciled)", "\"The report is generated and ready to be downloaded.\" (W)"),
    row(TRUE, "REQUEST_FOR_INFORMATION", PAYMENT, Ignore, "the issuer asks for documents; no money moved", "\"The issuer opened a Request for Information (RFI).\" (W)"),
    row(TRUE, "SECOND_CHARGEBACK", PAYMENT, to(Reversed), "the defense failed; the funds were taken back", "\"The disputed amount is deducted from your account.\" (W)"),
    row(TRUE, "TECHNICAL_CANCEL", PAYMENT, to(Cancelled), "cancelled by the merchant's reference", "\"The result of the technical cancel request.\" (W)"),
    row(TRUE, "VOID_PENDING_REFUND", REFUND, Review, "a pending POS refund was cancelled: a human checks the refund", "\"The result of the request to cancel a POS refund.\" (W)"),
    // success = "false": "the event was not executed successfully" (W,
    // `success`): the request was refused and nothing changed, except
    // where the refusal is itself the outcome. Every code has its row (no
    // catch-all), so a deleted one is noticed.
    row(FALSE, "AUTHORISATION", PAYMENT, to(Failed), "the payment was refused", "\"If `false`: The payment request failed. Check the `reason` field for failure information.\" (W)"),
    row(FALSE, "CAPTURE", PAYMENT, Review, "the capture was refused; the authorisation stands: capture again or cancel, by hand", "\"If `false`: the event was not executed successfully.\" (W, success)"),
    row(FALSE, "ORDER_CLOSED", PAYMENT, Review, "the order was not paid in full; its partial payments may hold money", "\"The result of the last partial payment for the order.\" (W)"),
    row(FALSE, "REFUND", REFUND, to(Failed), "the refund was refused", "\"If `false`: the event was not executed successfully.\" (W, success); e.g. \"Transaction hasn't been captured, refund not possible\" (W, example)"),
    row(FALSE, "CAPTURE_FAILED", PAYMENT, Review, "unexpected; a human looks", "no published meaning of success=false for this code (W)"),
    row(FALSE, "REFUND_FAILED", REFUND, Review, "unexpected; a human looks", "no published meaning of success=false for this code (W)"),
    row(FALSE, "AUTHENTICATION", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "AUTHORISATION_ADJUSTMENT", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "AUTORESCUE", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "CANCELLATION", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "CANCEL_AUTORESCUE", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "CANCEL_OR_REFUND", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "CHARGEBACK", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "CHARGEBACK_REVERSED", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "DISPUTE_DEFENSE_PERIOD_ENDED", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "EXPIRE", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "HANDLED_EXTERNALLY", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "INFORMATION_SUPPLIED", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "ISSUER_COMMENTS", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "ISSUER_RESPONSE_TIMEFRAME_EXPIRED", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "MANUAL_REVIEW_ACCEPT", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "MANUAL_REVIEW_REJECT", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "NOTIFICATION_OF_CHARGEBACK", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "NOTIFICATION_OF_FRAUD", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "OFFER_CLOSED", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "ORDER_OPENED", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "PAIDOUT_REVERSED", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "PAYOUT_DECLINE", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "PAYOUT_EXPIRE", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "PAYOUT_THIRDPARTY", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "POSTPONED_REFUND", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "PREARBITRATION_LOST", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "PREARBITRATION_OPEN", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "PREARBITRATION_WON", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "RECURRING_CONTRACT", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "REFUNDED_REVERSED", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "REFUND_WITH_DATA", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "REPORT_AVAILABLE", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "REQUEST_FOR_INFORMATION", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "SECOND_CHARGEBACK", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "TECHNICAL_CANCEL", ANY, Ignore, REFUSED, SUCCESS_FALSE),
    row(FALSE, "VOID_PENDING_REFUND", ANY, Ignore, REFUSED, SUCCESS_FALSE),
];
