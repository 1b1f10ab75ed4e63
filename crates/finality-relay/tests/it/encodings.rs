//! What is sent: schema 2 checked against the published JSON Schema
//! (`docs/event.schema.json`), schema 1 as earlier versions sent it, and
//! the CloudEvents envelope read back by the CloudEvents project's own Rust
//! SDK (`cloudevents-sdk`).

use super::*;
use finality_relay::event::{complete, Encoding, Event, Format, Schema};
use finality_testkit::testing;

/// Schema 3, the current one.
fn schema() -> Value {
    schema_file("event.schema.json")
}

fn schema_file(name: &str) -> Value {
    let path = format!("{}/../../docs/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn assert_valid(validator: &jsonschema::Validator, v: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{v}\n{errors:#?}");
}

async fn events_of_a_run(store: &dyn Store) -> Vec<Event> {
    make_payments(store, "e", 0..10).await;
    finality_relay::sequencer::sequence_all(store)
        .await
        .unwrap();
    let feed = store.feed_after(0, 1000).await.unwrap();
    complete(store, feed).await.unwrap()
}

#[tokio::test]
async fn schema_3_events_match_the_published_json_schema() {
    let db = testing::sqlite().await;
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let events = events_of_a_run(&*db.store).await;
    let enc = Encoding::default();
    assert_eq!(enc.schema, Schema::V3);
    let sent: Vec<Value> = events.iter().map(|e| enc.encode(e)).collect();
    for v in &sent {
        assert_valid(&validator, v);
        assert_eq!(v["schema"], 3);
        // Nothing counted (the simulator's webhooks name no sub-object).
        assert_eq!(v["amounts"], Value::Null);
        assert_eq!(v["flag"], Value::Null);
    }
    // An event with counted money and a flag: the counters each piece
    // once, the flag in the API's shape.
    use finality_core::amounts::{Piece, PieceKind, PieceState};
    let piece = |kind, id: &str, amount| Piece {
        kind,
        id: id.into(),
        state: PieceState::Succeeded,
        amount,
        currency: "EUR".into(),
    };
    let mut e = events[0].clone();
    e.outbox.event_type = "payment.flagged".into();
    e.details.pieces = vec![
        piece(PieceKind::Capture, "c1", 500),
        piece(PieceKind::Refund, "r1", 200),
    ];
    e.details.flag = Some(finality_store::flags::Flag {
        id: 7,
        payment_id: e.outbox.payment_id.clone(),
        reason: "a capture failed after the payment succeeded".into(),
        event_id: Some("evt-1".into()),
        provider_status: Some("CAPTURE_FAILED".into()),
        piece_key: Some("capture:c2".into()),
        opened_at: finality_core::Timestamp(1_700_000_000_000),
        closed_at: None,
        closed_by: None,
        resolution: None,
    });
    let v = enc.encode(&e);
    assert_valid(&validator, &v);
    assert_eq!(v["amounts"]["captured"], 500);
    assert_eq!(v["amounts"]["refunded"], 200);
    assert_eq!(v["flag"]["piece"], "capture:c2");
    let mut bad = v.clone();
    bad["amounts"]["captured"] = json!(-1);
    assert!(!validator.is_valid(&bad));
    let mut bad = v.clone();
    bad.as_object_mut().unwrap().remove("amounts");
    assert!(!validator.is_valid(&bad));
    // Schema 2's validator refuses schema 3 (a strict schema-2 consumer
    // is why schema 2 stays what it was).
    let v2 = jsonschema::validator_for(&schema_file("event.schema.v2.json")).unwrap();
    assert!(!v2.is_valid(&v));
}

#[tokio::test]
async fn schema_2_events_match_their_published_json_schema() {
    let db = testing::sqlite().await;
    let validator = jsonschema::validator_for(&schema_file("event.schema.v2.json")).unwrap();
    let events = events_of_a_run(&*db.store).await;
    let enc = Encoding {
        schema: Schema::V2,
        ..Encoding::default()
    };
    let sent: Vec<Value> = events.iter().map(|e| enc.encode(e)).collect();
    for v in &sent {
        assert_valid(&validator, v);
    }
    check_received(&*db.store, "e", &sent).await;
    // A payment archived before its event was sent: the payment's fields
    // are null, and that is valid too.
    let mut gone = events[0].clone();
    gone.details = Default::default();
    let v = enc.encode(&gone);
    assert_valid(&validator, &v);
    assert_eq!(v["amount"], Value::Null);
    assert_eq!(v["kind"], "refund");
    // The schema is not a rubber stamp: a missing field or a stray one fails.
    let mut bad = enc.encode(&events[1]);
    bad.as_object_mut().unwrap().remove("amount");
    assert!(!validator.is_valid(&bad));
    let mut bad = enc.encode(&events[1]);
    bad["extra"] = json!(1);
    assert!(!validator.is_valid(&bad));
}

#[tokio::test]
async fn schema_1_is_the_thin_shape_of_earlier_versions() {
    let db = testing::sqlite().await;
    let events = events_of_a_run(&*db.store).await;
    let enc = Encoding {
        schema: Schema::V1,
        ..Encoding::default()
    };
    let v = enc.encode(&events[0]);
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "id",
            "occurred_at",
            "payment_id",
            "previous_status",
            "seq",
            "source",
            "status",
            "type"
        ]
    );
}

#[tokio::test]
async fn cloudevents_envelopes_are_read_by_the_cloudevents_sdk() {
    use cloudevents::event::AttributesReader;
    let db = testing::sqlite().await;
    let events = events_of_a_run(&*db.store).await;
    let enc = Encoding {
        format: Format::Cloudevents,
        source: "/finality/eu-1".into(),
        ..Encoding::default()
    };
    assert_eq!(enc.content_type(), "application/cloudevents+json");
    let validator = jsonschema::validator_for(&schema()).unwrap();
    for e in &events {
        let v = enc.encode(e);
        let ce: cloudevents::Event = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(ce.specversion(), cloudevents::event::SpecVersion::V10);
        assert_eq!(ce.id(), e.outbox.event_id);
        assert_eq!(ce.source().to_string(), "/finality/eu-1");
        assert_eq!(ce.ty(), format!("dev.finality.{}", e.outbox.event_type));
        assert_eq!(ce.subject(), Some(e.outbox.payment_id.as_str()));
        assert_eq!(
            ce.time().unwrap().timestamp_millis(),
            e.outbox.occurred_at.0
        );
        assert_eq!(ce.datacontenttype(), Some("application/json"));
        let data = match ce.data() {
            Some(cloudevents::Data::Json(d)) => d.clone(),
            other => panic!("data is not JSON: {other:?}"),
        };
        assert_valid(&validator, &data);
        assert_eq!(data, v["data"]);
    }
}
