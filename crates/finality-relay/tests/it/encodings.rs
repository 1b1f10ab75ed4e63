//! What is sent: schema 2 checked against the published JSON Schema
//! (`docs/event.schema.json`), schema 1 as earlier versions sent it, and
//! the CloudEvents envelope read back by the CloudEvents project's own Rust
//! SDK (`cloudevents-sdk`).

use super::*;
use finality_relay::event::{complete, Encoding, Event, Format, Schema};
use finality_testkit::testing;

fn schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/event.schema.json");
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
async fn schema_2_events_match_the_published_json_schema() {
    let db = testing::sqlite().await;
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let events = events_of_a_run(&*db.store).await;
    let enc = Encoding::default();
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
