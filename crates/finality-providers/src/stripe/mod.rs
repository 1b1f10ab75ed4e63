//! Stripe: PaymentIntents and Refunds by id, secret-key auth, and
//! `Stripe-Signature` webhooks.
//!
//! - Poll: `GET {base}/v1/payment_intents/{id}` (payments, ids `pi_…`),
//!   `GET {base}/v1/refunds/{id}` (refunds, `re_…` or `pyr_…`) or
//!   `GET {base}/v1/payouts/{id}` (payouts, `po_…`), with
//!   `Authorization: Bearer <secret key>` and `Stripe-Version` pinned to
//!   [`STRIPE_VERSION`]; any other id is refused at registration.
//! - Errors: 404 `resource_missing` is "not known yet" (not a failure);
//!   429 is rate limited (`Retry-After` honoured when sent); 401/403 and other
//!   4xx are permanent (bad key, wrong account); 5xx and timeouts transient.
//! - A PaymentIntent has no `failed` status: a declined attempt returns it to
//!   `requires_payment_method` (with `last_payment_error`), from which the
//!   customer may still pay. finality keeps it open (pending) and records the
//!   decline as the provider status; it ends as succeeded, canceled, or in
//!   review when the schedule runs out, never as failed by guess.

pub mod contract;
pub(crate) mod report_run;

use crate::http::Traced;
use crate::http::{classify_transport, client, failure, request_id, Timeouts};
use crate::webhook::stripe::{events_of, parse_events, StripeSignature, AUDIT_HEADERS};
use crate::webhook::{Disposition, WebhookError, WebhookEvent};
use crate::{EventPage, Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use finality_core::{Kind, Timestamp};
use reqwest::StatusCode;

pub use crate::webhook::stripe::map_status;

pub struct StripeAdapter {
    base_url: String,
    secret_key: String,
    http: reqwest::Client,
    timeouts: Timeouts,
    webhooks: Option<StripeSignature>,
    merchant_ref_key: String,
    /// A connected account the platform's key acts for (`Stripe-Account`).
    account: Option<String>,
    /// The configured environment (`mode`; `Some(true)` live); unset: the
    /// key's prefix says.
    live: Option<bool>,
    /// Report runs made and not finished yet, by day (see `report_run`):
    /// asked again by id rather than made again.
    report_runs: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl StripeAdapter {
    pub fn new(
        base_url: &str,
        secret_key: String,
        timeouts: Timeouts,
    ) -> Result<Self, ProviderError> {
        if secret_key.trim().is_empty() {
            return Err(ProviderError::Permanent {
                message: "Stripe needs a secret key (api_key_env)".into(),
            });
        }
        Ok(StripeAdapter {
            base_url: base_url.trim_end_matches('/').to_string(),
            secret_key,
            http: client(timeouts)?,
            timeouts,
            webhooks: None,
            merchant_ref_key: DEFAULT_MERCHANT_REF_KEY.to_string(),
            account: None,
            live: None,
            report_runs: Default::default(),
        })
    }

    /// The PaymentIntent metadata key that holds the merchant's reference
    /// (what a payment registered without its PaymentIntent id is searched by).
    pub fn with_merchant_ref_key(mut self, key: &str) -> Self {
        self.merchant_ref_key = key.to_string();
        self
    }

    /// Make every call for the connected account `account` with the
    /// platform's key: "To make requests on behalf of a connected account,
    /// use the Stripe-Account header with the connected account's ID"
    /// (Stripe API reference, Connected accounts).
    pub fn on_behalf_of(mut self, account: &str) -> Self {
        self.account = Some(account.to_string());
        self
    }

    /// The environment configured for this provider or account (`mode`):
    /// an answer or listed event of the other one is never applied.
    pub fn with_mode(mut self, live: Option<bool>) -> Self {
        self.live = live;
        self
    }

    /// Why an object or event whose `livemode` is `got` is not this
    /// account's: "Has the value `true` if the object exists in live mode
    /// or the value `false` if the object exists in test mode" (Stripe API
    /// reference, `livemode` on every object). `None`: the same
    /// environment, or one not known.
    fn other_mode(&self, got: Option<bool>) -> Option<String> {
        let want = self.live.or_else(|| Provider::key_live(self))?;
        let got = got.filter(|g| *g != want)?;
        let word = |live: bool| if live { "live" } else { "test" };
        Some(format!(
            "account_mismatch: the provider reports livemode `{got}` (a {} object), configured {}",
            word(got),
            word(want)
        ))
    }

    /// `req` with the secret key, the API version and, for a connected
    /// account, `Stripe-Account`: what every call to Stripe carries.
    pub(crate) fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let req = req
            .bearer_auth(&self.secret_key)
            .header("stripe-version", STRIPE_VERSION);
        match &self.account {
            Some(account) => req.header("stripe-account", account),
            None => req,
        }
    }

    /// An authenticated GET with a fresh request id (returned for the log).
    async fn get(&self, url: &str) -> Result<(reqwest::Response, String), ProviderError> {
        let rid = request_id();
        let resp = self
            .authed(self.http.get(url))
            .header("x-request-id", &rid)
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        Ok((resp, rid))
    }

    /// Search PaymentIntents by the merchant reference in their metadata.
    /// Stripe's search index lags writes by up to a minute or so: "not
    /// found" is not final, the next poll searches again.
    async fn find(
        &self,
        t: &PollTarget<'_>,
        merchant_ref: &str,
    ) -> Result<Observation, ProviderError> {
        // Stripe's query language quotes strings with ' and escapes with \.
        let quoted = merchant_ref.replace('\\', "\\\\").replace('\'', "\\'");
        let query = format!("metadata['{}']:'{quoted}'", self.merchant_ref_key);
        let url = format!(
            "{}/v1/payment_intents/search?query={}",
            self.base_url,
            url::form_urlencoded::byte_serialize(query.as_bytes()).collect::<String>()
        );
        let (resp, rid) = self.get(&url).await?;
        if !resp.status().is_success() {
            let err = failure(resp).await;
            tracing::debug!(request_id = %rid, payment_id = t.payment_id, error = %err, "stripe search failed");
            return Err(err);
        }
        let mut body: SearchBody = resp
            .json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        // An object of the other environment is not this payment.
        body.data.retain(|o| self.other_mode(o.livemode).is_none());
        Ok(crate::lookup::one_of(body.data, |o| {
            let provider_status = describe(&o);
            (
                o.id,
                map_status("payment_intent", &o.status),
                provider_status,
            )
        }))
    }

    /// Read `GET /v1/events` once: newest first, the page just newer than
    /// `cursor` (Stripe's `ending_before`) or the newest page without one.
    async fn events_page(&self, cursor: Option<&str>) -> Result<EventsBody, ProviderError> {
        let mut url = format!("{}/v1/events?limit={EVENT_PAGE}", self.base_url);
        // Indexed, as stripe-python sends arrays (`types[0]=…`).
        for (i, t) in EVENT_TYPES.iter().enumerate() {
            url.push_str(&format!("&types[{i}]={t}"));
        }
        if let Some(c) = cursor {
            url.push_str("&ending_before=");
            url.extend(url::form_urlencoded::byte_serialize(c.as_bytes()));
        }
        let (resp, rid) = self.get(&url).await?;
        if !resp.status().is_success() {
            let status = resp.status();
            let err = failure(resp).await;
            tracing::debug!(request_id = %rid, error = %err, "stripe event list failed");
            if status == StatusCode::NOT_FOUND && cursor.is_some() {
                return Err(ProviderError::Permanent {
                    message: format!("{CURSOR_GONE}: {err}"),
                });
            }
            return Err(err);
        }
        resp.json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))
    }

    /// Accept `Stripe-Signature` webhooks signed with any of the secrets.
    pub fn with_webhooks(mut self, verifier: StripeSignature) -> Self {
        self.webhooks = Some(verifier);
        self
    }

    /// The object a payment is polled as, `(path segment, object name)`, by
    /// the id's prefix, which must fit the kind (see [`check_ref`]).
    fn object_for(provider_ref: &str) -> Option<(&'static str, &'static str, Kind)> {
        PREFIXES
            .iter()
            .find(|(prefix, ..)| provider_ref.starts_with(prefix))
            .map(|&(_, path, object, kind)| (path, object, kind))
    }
}

/// The Stripe API version this adapter was written against, sent on every
/// request so an account upgrade cannot change the answers under it.
pub const STRIPE_VERSION: &str = "2024-06-20";

/// Id prefixes the adapter accepts: `(prefix, path, object, kind)`.
const PREFIXES: &[(&str, &str, &str, Kind)] = &[
    ("pi_", "payment_intents", "payment_intent", Kind::Payment),
    ("re_", "refunds", "refund", Kind::Refund),
    ("pyr_", "refunds", "refund", Kind::Refund),
    ("po_", "payouts", "payout", Kind::Payout),
];

/// A Stripe id must be one the adapter can poll, for the kind registered.
pub fn check_ref(kind: Kind, provider_ref: &str) -> Result<(), crate::setup::Refused> {
    let accepted = || {
        PREFIXES
            .iter()
            .filter(|p| p.3 == kind)
            .map(|p| format!("`{}…`", p.0))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    match StripeAdapter::object_for(provider_ref) {
        Some((_, _, k)) if k == kind => Ok(()),
        Some((_, object, k)) => Err(crate::setup::Refused::OtherKind {
            reference: provider_ref.to_string(),
            provider: "Stripe",
            object,
            is: k,
            kind,
            accepted: accepted(),
        }),
        None => Err(crate::setup::Refused::NotAnId {
            reference: provider_ref.to_string(),
            provider: "Stripe",
            kind,
            accepted: accepted(),
            hint: " (charges and checkout sessions are followed through their PaymentIntent)",
        }),
    }
}

/// Where a payment's merchant reference is kept unless configured.
pub const DEFAULT_MERCHANT_REF_KEY: &str = "merchant_ref";

#[derive(serde::Deserialize)]
struct SearchBody {
    data: Vec<ObjectBody>,
}

/// The provider status recorded for an object: a decline is named.
fn describe(body: &ObjectBody) -> String {
    match (&body.last_payment_error, body.status.as_str()) {
        (Some(err), "requires_payment_method") => format!(
            "requires_payment_method (last_payment_error: {})",
            err["code"].as_str().unwrap_or("unknown")
        ),
        _ => body.status.clone(),
    }
}

#[derive(serde::Deserialize)]
struct ObjectBody {
    #[serde(default)]
    id: String,
    status: String,
    #[serde(default)]
    last_payment_error: Option<serde_json::Value>,
    /// What a PaymentIntent took; refunds and payouts have only `amount`.
    #[serde(default)]
    amount_received: Option<i64>,
    #[serde(default)]
    amount: Option<i64>,
    #[serde(default)]
    currency: Option<String>,
    #[serde(default)]
    livemode: Option<bool>,
}

/// Events per list page (Stripe's maximum).
const EVENT_PAGE: usize = 100;

/// The event types that say something about a PaymentIntent, Refund or
/// Payout (Stripe accepts up to 20): everything the webhook parser maps.
const EVENT_TYPES: &[&str] = &[
    "payment_intent.succeeded",
    "payment_intent.payment_failed",
    "payment_intent.canceled",
    "payment_intent.processing",
    "payment_intent.requires_action",
    "payment_intent.amount_capturable_updated",
    "charge.refunded",
    "charge.dispute.closed",
    "charge.dispute.funds_withdrawn",
    "charge.dispute.funds_reinstated",
    "refund.created",
    "refund.updated",
    "refund.failed",
    "charge.refund.updated",
    "payout.paid",
    "payout.failed",
    "payout.canceled",
    "payout.updated",
];

const CURSOR_GONE: &str = "the event-list cursor is unknown to Stripe";

#[derive(serde::Deserialize)]
struct EventsBody {
    data: Vec<serde_json::Value>,
    #[serde(default)]
    has_more: bool,
}

#[async_trait]
impl Provider for StripeAdapter {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        let r = match (t.provider_ref, t.merchant_ref) {
            (Some(r), _) => r,
            (None, Some(m)) => return self.find(t, m).await,
            (None, None) => t.require_provider_ref()?,
        };
        let Some((path, object, _)) = Self::object_for(r) else {
            return Err(ProviderError::Permanent {
                message: check_ref(t.kind, r)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default(),
            });
        };
        let url = format!("{}/v1/{path}/{}", self.base_url, crate::http::segment(r));
        let (resp, rid) = self.get(&url).await?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(Observation::new(None, "resource_missing"));
        }
        if !status.is_success() {
            let err = failure(resp).await;
            tracing::debug!(request_id = %rid, payment_id = t.payment_id, error = %err, "stripe status query failed");
            return Err(err);
        }
        let body: ObjectBody = resp
            .json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let provider_status = describe(&body);
        let reported = finality_core::Reported {
            pieces: Vec::new(),
            amount: body.amount_received.or(body.amount),
            currency: body.currency.clone(),
            // Never applied, whatever it says: another environment's object.
            mismatch: self.other_mode(body.livemode),
        };
        Ok(Observation::new(map_status(object, &body.status), provider_status).reporting(reported))
    }

    async fn verify_webhook(
        &self,
        headers: &reqwest::header::HeaderMap,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Vec<WebhookEvent>, WebhookError> {
        let verifier = self.webhooks.as_ref().ok_or(WebhookError::NotConfigured)?;
        verifier.verify(headers, body, now)?;
        parse_events(body, &self.merchant_ref_key)
    }

    /// PaymentIntents can be searched by a metadata key; Refunds cannot
    /// (Stripe's search covers neither refunds nor their metadata).
    fn unqueryable(&self, t: &PollTarget<'_>) -> Option<String> {
        match (t.provider_ref, t.merchant_ref, t.kind) {
            (Some(_), _, _) => None,
            (None, Some(_), Kind::Payment) => None,
            (None, Some(_), _) => Some(
                "Stripe has no search for refunds or payouts by merchant reference; register \
                 them with their re_/po_ id"
                    .into(),
            ),
            (None, None, _) => crate::lookup::needs_some_ref(t),
        }
    }

    fn check_ref(&self, kind: Kind, provider_ref: &str) -> Result<(), crate::setup::Refused> {
        check_ref(kind, provider_ref)
    }

    /// Stripe's amounts have "up to eight digits" (docs.stripe.com/currencies,
    /// "Minimum and maximum charge amounts"), twelve for IDR; accounts can be
    /// granted more, so the bound taken is the twelve digits no Stripe
    /// amount exceeds.
    fn check_amount(
        &self,
        amount: &finality_core::money::Amount,
    ) -> Result<(), crate::setup::Refused> {
        const MAX: i64 = 999_999_999_999;
        if amount.minor > MAX {
            return Err(crate::setup::Refused::Amount {
                amount: format!("{} minor units", amount.minor),
                bound: format!("Stripe takes (at most twelve digits, {MAX})"),
            });
        }
        Ok(())
    }

    fn peek_ref(&self, body: &[u8]) -> Option<String> {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        v["data"]["object"]["id"].as_str().map(String::from)
    }

    /// "Each event for a connected account contains a top-level `account`
    /// property that identifies the connected account" (Stripe docs,
    /// Connect webhooks; its example event carries
    /// `"account": "acct_CEPGWsGfA17C8J"`).
    async fn fetch_report(
        &self,
        day: &crate::settlement::fetch::ReportDay,
        dest: &std::path::Path,
    ) -> Result<crate::settlement::fetch::Fetched, crate::settlement::fetch::FetchError> {
        self.fetch_report_run(day, dest).await
    }

    fn account_reports(&self) -> bool {
        true
    }

    /// The event's `livemode`: "Has the value `true` if the object exists
    /// in live mode or the value `false` if the object exists in test
    /// mode." (Stripe API reference, the Event object.) A Connect
    /// endpoint gets both: "both live and test webhooks are sent to your
    /// production webhook URLs … we recommend that you check the livemode
    /// value" (Stripe docs, Connect webhooks).
    fn body_live(&self, body: &[u8]) -> Option<bool> {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        v["livemode"].as_bool()
    }

    /// "Test mode secret keys have the prefix `sk_test_` and live mode
    /// secret keys have the prefix `sk_live_`" (Stripe docs, API keys);
    /// restricted keys `rk_test_`/`rk_live_` likewise.
    fn key_live(&self) -> Option<bool> {
        let k = self.secret_key.as_str();
        if k.starts_with("sk_live_") || k.starts_with("rk_live_") {
            Some(true)
        } else if k.starts_with("sk_test_") || k.starts_with("rk_test_") {
            Some(false)
        } else {
            None
        }
    }

    fn webhook_account(&self, body: &[u8]) -> Option<String> {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        v["account"].as_str().map(String::from)
    }

    fn audit_headers(&self) -> &'static [&'static str] {
        AUDIT_HEADERS
    }

    fn lists_events(&self) -> bool {
        true
    }

    /// Stripe keeps 30 days of events, newest first. From a cursor, the
    /// page just newer than it; the next cursor is that page's newest id.
    /// A cursor Stripe no longer knows (404) restarts from the newest page.
    async fn list_events(&self, cursor: Option<&str>) -> Result<EventPage, ProviderError> {
        let from_cursor = cursor.is_some();
        let (body, restarted) = match self.events_page(cursor).await {
            Err(ProviderError::Permanent { message }) if message.starts_with(CURSOR_GONE) => {
                (self.events_page(None).await?, Some(message))
            }
            other => (other?, None),
        };
        let from_cursor = from_cursor && restarted.is_none();
        let cursor = body
            .data
            .first()
            .and_then(|e| e["id"].as_str())
            .map(String::from);
        let mut events = Vec::with_capacity(body.data.len());
        for item in body.data.iter().rev() {
            match events_of(item, &self.merchant_ref_key) {
                // Listed, acknowledged, kept as ignored: never applied.
                Ok(evs) if self.other_mode(item["livemode"].as_bool()).is_some() => {
                    let why = self
                        .other_mode(item["livemode"].as_bool())
                        .unwrap_or_default();
                    events.extend(evs.into_iter().map(|mut e| {
                        e.disposition = Disposition::Ignore(format!(
                            "other_mode: {}",
                            why.trim_start_matches("account_mismatch: ")
                        ));
                        e
                    }));
                }
                Ok(evs) => events.extend(evs),
                // Kept for a human, never dropped: an event Stripe listed
                // that we cannot read.
                Err(e) => events.push(WebhookEvent {
                    event_id: item["id"].as_str().unwrap_or("(no id)").to_string(),
                    provider_ref: item["data"]["object"]["id"].as_str().map(String::from),
                    merchant_ref: None,
                    status: None,
                    provider_status: item["type"].as_str().map(String::from),
                    occurred_at: item["created"].as_i64().map(|s| Timestamp(s * 1000)),
                    reported: Default::default(),
                    disposition: Disposition::Review(format!("listed event unreadable: {e}")),
                }),
            }
        }
        Ok(EventPage {
            events,
            cursor,
            // Without a cursor the newest page is a starting point, not a
            // backlog to walk.
            more: body.has_more && from_cursor,
            restarted,
        })
    }

    /// Lists one PaymentIntent: works with a restricted read-only key.
    async fn check(&self) -> Result<String, ProviderError> {
        let url = format!("{}/v1/payment_intents?limit=1", self.base_url);
        let (resp, _) = self.get(&url).await?;
        let status = resp.status();
        if status.is_success() {
            return Ok(format!("listed PaymentIntents at {}", self.base_url));
        }
        Err(failure(resp).await)
    }

    fn capabilities(&self) -> crate::Capabilities {
        crate::Capabilities {
            poll: true,
            webhooks: self.webhooks.is_some(),
            lookup: true,
        }
    }
}
