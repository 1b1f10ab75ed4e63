//! The event as consumers see it (`docs/EVENTS.md`, JSON Schema in
//! `docs/event.schema.json`): schema 2 carries what a ledger needs (the
//! payment's amount, currency, provider and references, its metadata, the
//! reason and actor of the transition) so no consumer asks for the payment
//! per event; schema 1 is the thin shape of earlier versions, kept per
//! destination for consumers built on it. Either can be wrapped in a
//! CloudEvents 1.0 envelope.

use finality_store::{EventDetails, EventFeed, OutboxEvent};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One event with what it says beyond its transition.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub outbox: OutboxEvent,
    pub details: EventDetails,
}

impl Event {
    /// `payment`, `refund` or `payout`: the part of the type before the dot.
    pub fn kind(&self) -> &str {
        self.outbox
            .event_type
            .split_once('.')
            .map_or(self.outbox.event_type.as_str(), |(k, _)| k)
    }
}

/// Read what a page of events says beyond its transitions (two reads for
/// the page, whatever its size).
pub async fn complete(
    feed: &dyn EventFeed,
    events: Vec<OutboxEvent>,
) -> finality_store::Result<Vec<Event>> {
    complete_wanted(feed, events, |_| true).await
}

/// As [`complete`], reading only for the events `wanted` keeps (a
/// destination's type filter): the others are passed over unsent, so
/// their details stay empty, and a page it wants nothing of costs no read.
pub async fn complete_wanted(
    feed: &dyn EventFeed,
    events: Vec<OutboxEvent>,
    wanted: impl Fn(&OutboxEvent) -> bool,
) -> finality_store::Result<Vec<Event>> {
    let keep: Vec<bool> = events.iter().map(&wanted).collect();
    let details = if keep.iter().all(|k| *k) {
        // The common case (no filter): the page as it is, no copy.
        if events.is_empty() {
            Vec::new()
        } else {
            feed.event_details(&events).await?
        }
    } else if keep.iter().any(|k| *k) {
        let asked: Vec<OutboxEvent> = events
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(e, _)| e.clone())
            .collect();
        feed.event_details(&asked).await?
    } else {
        Vec::new()
    };
    let mut details = details.into_iter();
    Ok(events
        .into_iter()
        .zip(keep)
        .map(|(outbox, k)| Event {
            outbox,
            details: if k {
                details.next().unwrap_or_default()
            } else {
                EventDetails::default()
            },
        })
        .collect())
}

/// Which shape of the event a destination gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(try_from = "u8", into = "u8")]
pub enum Schema {
    /// `id, type, payment_id, status, previous_status, source, occurred_at, seq`.
    V1,
    /// Schema 1 plus `schema`, `kind`, the payment's `amount`, `currency`,
    /// `provider`, `provider_ref`, `merchant_ref`, `account`, `metadata`, and the
    /// transition's `reason` and `actor`.
    V2,
    /// Schema 2 plus the money (`amounts`: the counters after the event)
    /// and the `flag` a flag event is about; and events that are not a
    /// status change (`payment.amounts`, `payment.flagged`,
    /// `payment.flag_resolved`), which destinations of schema 1 and 2
    /// never get.
    #[default]
    V3,
}

impl Schema {
    /// Whether destinations of this schema get the events that are not a
    /// status change.
    pub fn has_notices(self) -> bool {
        self >= Schema::V3
    }
}

impl TryFrom<u8> for Schema {
    type Error = String;
    fn try_from(v: u8) -> Result<Self, Self::Error> {
        match v {
            1 => Ok(Schema::V1),
            2 => Ok(Schema::V2),
            3 => Ok(Schema::V3),
            n => Err(format!(
                "schema {n} is not one this version writes (1, 2 or 3)"
            )),
        }
    }
}

impl From<Schema> for u8 {
    fn from(s: Schema) -> u8 {
        match s {
            Schema::V1 => 1,
            Schema::V2 => 2,
            Schema::V3 => 3,
        }
    }
}

/// The envelope around the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The event itself is the JSON body.
    #[default]
    Json,
    /// A CloudEvents 1.0 JSON envelope (structured mode) with the event in `data`.
    Cloudevents,
}

/// How one destination writes events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoding {
    pub schema: Schema,
    pub format: Format,
    /// The CloudEvents `source` attribute (a URI reference naming this
    /// deployment).
    pub source: String,
}

impl Default for Encoding {
    fn default() -> Self {
        Encoding {
            schema: Schema::V3,
            format: Format::Json,
            source: DEFAULT_SOURCE.into(),
        }
    }
}

/// The CloudEvents `source` unless configured.
pub const DEFAULT_SOURCE: &str = "/finality";

/// The prefix of a CloudEvents `type`: `dev.finality.payment.succeeded`.
pub const CLOUDEVENTS_TYPE_PREFIX: &str = "dev.finality.";

impl Encoding {
    pub fn encode(&self, e: &Event) -> Value {
        let body = match self.schema {
            Schema::V1 => v1(&e.outbox),
            Schema::V2 => v2(e),
            Schema::V3 => v3(e),
        };
        match self.format {
            Format::Json => body,
            Format::Cloudevents => json!({
                "specversion": "1.0",
                "id": e.outbox.event_id,
                "source": self.source,
                "type": format!("{CLOUDEVENTS_TYPE_PREFIX}{}", e.outbox.event_type),
                "subject": e.outbox.payment_id,
                "time": e.outbox.occurred_at.to_rfc3339(),
                "datacontenttype": "application/json",
                "data": body,
            }),
        }
    }

    /// The body's media type.
    pub fn content_type(&self) -> &'static str {
        match self.format {
            Format::Json => "application/json",
            Format::Cloudevents => "application/cloudevents+json",
        }
    }
}

/// `{"id", "type", "payment_id", "status", "previous_status", "source",
/// "occurred_at", "seq"}`. `id` is stable across redeliveries: dedupe on it.
pub fn v1(e: &OutboxEvent) -> Value {
    json!({
        "id": e.event_id,
        "type": e.event_type,
        "payment_id": e.payment_id,
        "status": e.status,
        "previous_status": e.previous_status,
        "source": e.source,
        "occurred_at": e.occurred_at.to_rfc3339(),
        "seq": e.seq,
    })
}

/// Schema 2: schema 1 and what the payment and the transition say. The
/// payment's fields are `null` only when retention archived the payment
/// before the event was sent (`docs/EVENTS.md`).
pub fn v2(e: &Event) -> Value {
    let mut m = match v1(&e.outbox) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    m.insert("schema".into(), json!(2));
    m.insert("kind".into(), json!(e.kind()));
    let p = e.details.payment.as_ref();
    m.insert("amount".into(), json!(p.map(|p| p.amount)));
    m.insert("currency".into(), json!(p.map(|p| &p.currency)));
    m.insert("provider".into(), json!(p.map(|p| &p.provider)));
    m.insert(
        "provider_ref".into(),
        json!(p.and_then(|p| p.provider_ref.as_ref())),
    );
    m.insert(
        "merchant_ref".into(),
        json!(p.and_then(|p| p.merchant_ref.as_ref())),
    );
    m.insert("account".into(), json!(p.and_then(|p| p.account.as_ref())));
    m.insert(
        "metadata".into(),
        p.map_or(Value::Null, |p| p.metadata.clone()),
    );
    m.insert("reason".into(), json!(e.details.reason));
    m.insert("actor".into(), json!(e.details.actor));
    Value::Object(m)
}

/// Schema 3: schema 2 with the money and the flag. `amounts` is the
/// payment's counters after the event, from the provider's sub-objects
/// finality counted (`null`: none counted, as for a provider whose
/// messages name none); `flag` is set on flag events only.
pub fn v3(e: &Event) -> Value {
    let mut m = match v2(e) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    m.insert("schema".into(), json!(3));
    let currency = e.details.payment.as_ref().map(|p| p.currency.as_str());
    m.insert("amounts".into(), amounts_json(currency, &e.details.pieces));
    m.insert(
        "flag".into(),
        e.details.flag.as_ref().map_or(Value::Null, flag_json),
    );
    Value::Object(m)
}

/// The counters an event carries, with their currency (`None`: nothing
/// counted): the one rule for the pushes and the pull feed.
pub fn counters_of(
    currency: Option<&str>,
    pieces: &[finality_core::amounts::Piece],
) -> Option<(String, finality_core::amounts::Counters)> {
    let first = pieces.first()?;
    // (The payment's currency; the pieces' own once it was archived.)
    let currency = currency.unwrap_or(first.currency.as_str());
    let ledger = finality_core::amounts::Ledger::of(currency, pieces.to_vec());
    Some((ledger.currency().to_string(), ledger.counters()))
}

/// [`counters_of`] as the event's JSON (`null`: nothing counted).
pub fn amounts_json(currency: Option<&str>, pieces: &[finality_core::amounts::Piece]) -> Value {
    match counters_of(currency, pieces) {
        None => Value::Null,
        Some((currency, c)) => json!({
            "currency": currency,
            "authorised": c.authorised,
            "captured": c.captured,
            "refunded": c.refunded,
            "disputed": c.disputed,
            "dispute_reversed": c.dispute_reversed,
        }),
    }
}

/// A flag as events carry it (the API's shape, `GET /v1/flags`).
pub fn flag_json(f: &finality_store::flags::Flag) -> Value {
    json!({
        "id": f.id,
        "payment_id": f.payment_id,
        "reason": f.reason,
        "event_id": f.event_id,
        "provider_status": f.provider_status,
        "piece": f.piece_key,
        "opened_at": f.opened_at.to_rfc3339(),
        "closed_at": f.closed_at.map(|t| t.to_rfc3339()),
        "closed_by": f.closed_by,
        "resolution": f.resolution,
    })
}

/// The thin shape (schema 1) of an event alone, for readers of earlier
/// versions (`finality events tail --schema 1`).
pub fn to_json(e: &OutboxEvent) -> Value {
    v1(e)
}
