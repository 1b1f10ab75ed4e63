//! The event as consumers see it (`docs/EVENTS.md`).

use finality_store::OutboxEvent;
use serde_json::{json, Value};

/// `{"id", "type", "payment_id", "status", "previous_status", "source",
/// "occurred_at", "seq"}`. `id` is stable across redeliveries: dedupe on it.
pub fn to_json(e: &OutboxEvent) -> Value {
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
