//! Events out, end to end: the feed under concurrent writers, and every
//! channel (signed HTTP, NATS JetStream, RabbitMQ, Redis Streams) read back
//! with the destination's own client across a crash of the broker, each
//! transition found exactly once after dedupe, in per-payment order, with
//! its complete fields.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod brokers;
mod channels;
mod encodings;
mod feed;
mod http;
mod nats;
mod replay;

use finality_core::money::{Amount, Currency, MerchantRef, PaymentId, ProviderRef};
use finality_core::{Kind, Source, Status, Timestamp};
use finality_relay::{PushConfig, Pusher, Sink};
use finality_store::{NewPayment, Report, Store};
use finality_testkit::conformance::{register, T0};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Register `id` and move it pending → processing → succeeded (2 events).
pub async fn two_transitions(store: &dyn Store, id: &str) {
    register(store, id, Timestamp(T0.0 + 3_600_000)).await;
    for (i, s) in [Status::Processing, Status::Succeeded]
        .into_iter()
        .enumerate()
    {
        let r = Report {
            payment_id: id.into(),
            status: s,
            source: Source::Webhook,
            event_id: Some(format!("{id}_{i}")),
            observed_at: T0,
            reason: None,
            actor: None,
        };
        store.apply(&r, T0).await.unwrap();
    }
}

/// What payment `i` of a run is registered with.
fn registered(prefix: &str, i: usize) -> NewPayment {
    let id = format!("{prefix}{i:03}");
    NewPayment {
        id: PaymentId::parse(&id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&format!("pr_{id}")).unwrap()),
        merchant_ref: Some(MerchantRef::parse(&format!("order-{id}")).unwrap()),
        // Every other payment belongs to an account of the provider.
        account: matches!(i % 2, 0).then(|| "acct_even".to_string()),
        kind: if matches!(i % 3, 0) {
            Kind::Refund
        } else {
            Kind::Payment
        },
        amount: Amount::new(
            1000 + i as i64,
            Currency::parse(["EUR", "USD", "JPY"][i % 3]).unwrap(),
        )
        .unwrap(),
        metadata: json!({"order": id, "lines": i % 4}),
    }
}

/// The reason and actor of payment `i`'s transitions into `to`.
fn note(i: usize, to: Status) -> (Option<&'static str>, Option<&'static str>) {
    match (matches!(i % 5, 0), to) {
        (true, Status::NeedsReview) => (Some("amount differs from the provider's"), None),
        (true, Status::Succeeded) => (Some("confirmed with the bank"), Some("alice")),
        _ => (None, None),
    }
}

/// Payments `prefix000`… for `range`: registered, then pending →
/// processing → succeeded by webhook, every fifth through review and a
/// manual resolve (a reason, and an actor) instead.
pub async fn make_payments(store: &dyn Store, prefix: &str, range: std::ops::Range<usize>) {
    for i in range {
        let p = registered(prefix, i);
        store
            .register(&p, T0, Timestamp(T0.0 + 3_600_000))
            .await
            .unwrap();
        let path: &[(Status, Source)] = if matches!(i % 5, 0) {
            &[
                (Status::Processing, Source::Webhook),
                (Status::NeedsReview, Source::Webhook),
                (Status::Succeeded, Source::Manual),
            ]
        } else {
            &[
                (Status::Processing, Source::Webhook),
                (Status::Succeeded, Source::StatusQuery),
            ]
        };
        for (step, (to, source)) in path.iter().enumerate() {
            let (reason, actor) = note(i, *to);
            let now = Timestamp(T0.0 + 1000 * (step as i64 + 1));
            let r = Report {
                payment_id: p.id.as_str().into(),
                status: *to,
                source: *source,
                event_id: Some(format!("{}_{step}", p.id.as_str())),
                observed_at: now,
                reason: reason.map(str::to_string),
                actor: actor.map(str::to_string),
            };
            store.apply(&r, now).await.unwrap();
        }
    }
}

/// The events a consumer got (schema 2 bodies, in arrival order), checked
/// against the feed: after dedupe by `id`, every event once and nothing
/// else; each payment's in feed order; each with its payment's fields as
/// registered and its transition's reason and actor.
pub async fn check_received(store: &dyn Store, prefix: &str, received: &[Value]) {
    let feed = store.feed_after(0, 100_000).await.unwrap();
    assert!(!feed.is_empty());
    let mut first: HashMap<&str, &Value> = HashMap::new();
    let mut order: HashMap<&str, Vec<i64>> = HashMap::new();
    for v in received {
        let id = v["id"].as_str().expect("every event has an id");
        if first.insert(id, v).is_none() {
            let p = v["payment_id"].as_str().unwrap();
            order.entry(p).or_default().push(v["seq"].as_i64().unwrap());
        }
    }
    let expected: HashSet<&str> = feed.iter().map(|e| e.event_id.as_str()).collect();
    let got: HashSet<&str> = first.keys().copied().collect();
    assert_eq!(
        got.difference(&expected).count(),
        0,
        "events that are not in the feed"
    );
    assert_eq!(
        expected.difference(&got).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "events never received"
    );
    for (p, seqs) in &order {
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "{p}'s events out of order: {seqs:?}"
        );
    }
    for e in &feed {
        let v = first[e.event_id.as_str()];
        let i: usize = e.payment_id[prefix.len()..].parse().unwrap();
        let p = registered(prefix, i);
        let (reason, actor) = note(i, e.status);
        // Schema 3 (the default) or 2 (a pinned destination's, without
        // the money); the simulator's webhooks name no sub-object, so
        // schema 3's counters are null.
        match v["schema"].as_i64() {
            Some(3) => {
                assert_eq!(v["amounts"], Value::Null);
                assert_eq!(v["flag"], Value::Null);
            }
            Some(2) => assert!(v.get("amounts").is_none(), "{v}"),
            other => panic!("schema {other:?}: {v}"),
        }
        assert_eq!(v["seq"], e.seq);
        assert_eq!(v["type"], e.event_type);
        assert_eq!(v["kind"], p.kind.as_str());
        assert_eq!(v["status"], e.status.as_str());
        assert_eq!(v["amount"], p.amount.minor);
        assert_eq!(v["currency"], p.amount.currency.as_str());
        assert_eq!(v["provider"], "sim");
        assert_eq!(v["provider_ref"], p.provider_ref.as_ref().unwrap().as_str());
        assert_eq!(v["merchant_ref"], p.merchant_ref.as_ref().unwrap().as_str());
        assert_eq!(v["metadata"], p.metadata);
        assert_eq!(v["reason"], json!(reason), "{}", e.event_id);
        assert_eq!(v["actor"], json!(actor), "{}", e.event_id);
    }
}

/// Fast retries for tests (real time, short).
pub fn fast_push(concurrency: usize) -> PushConfig {
    PushConfig {
        concurrency,
        retry: finality_core::Schedule::Exponential {
            base: Duration::from_millis(20),
            factor: 2.0,
            cap: Duration::from_millis(300),
            jitter: 0.2,
        },
        idle_check: Duration::from_millis(20),
        ..PushConfig::default()
    }
}

/// A sequencer and one pusher running in the background.
pub struct Running {
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    pub fn start(store: Arc<dyn Store>, sink: Arc<dyn Sink>, cfg: PushConfig) -> Running {
        let stop = CancellationToken::new();
        let clock: Arc<dyn finality_core::Clock> = Arc::new(finality_core::SystemClock);
        let pusher = Pusher::new(store.clone(), clock, sink, cfg);
        let tasks = vec![
            tokio::spawn(finality_relay::sequencer::run(
                store,
                Duration::from_millis(20),
                stop.clone(),
            )),
            tokio::spawn(pusher.run(stop.clone())),
        ];
        Running { stop, tasks }
    }

    pub async fn stop(self) {
        self.stop.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Wait until `destination` has every event of the feed.
pub async fn wait_delivered(store: &dyn Store, destination: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let head = store.feed_bounds().await.unwrap().head;
        let unsequenced = store.events_after(0, 100_000).await.unwrap().len() as i64;
        let at = store.destination(destination).await.unwrap().delivered_seq;
        if at == head && unsequenced == head {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{destination} stuck at {at} of {head}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The run every channel is held to: payments written while the pusher
/// runs; the broker crashes; more written while it is down (none marked
/// delivered); it comes back on the same data; more written; then every
/// event is read back with `consume` and checked.
pub async fn across_a_crash<F, Fut>(
    store: Arc<dyn Store>,
    sink: Arc<dyn Sink>,
    concurrency: usize,
    broker: &mut dyn brokers::Outage,
    consume: F,
) where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Vec<Value>>,
{
    let name = sink.name().to_string();
    let running = Running::start(store.clone(), sink, fast_push(concurrency));
    make_payments(&*store, "x", 0..15).await;
    wait_delivered(&*store, &name).await;
    let before = store.destination(&name).await.unwrap().delivered_seq;

    broker.stop();
    make_payments(&*store, "x", 15..30).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let during = store.destination(&name).await.unwrap();
    assert_eq!(
        during.delivered_seq, before,
        "nothing marked delivered while the broker is down"
    );
    assert!(during.last_error.is_some(), "the failure is recorded");

    broker.start();
    make_payments(&*store, "x", 30..40).await;
    wait_delivered(&*store, &name).await;
    running.stop().await;
    let got = consume().await;
    check_received(&*store, "x", &got).await;
}
