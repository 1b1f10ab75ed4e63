//! Every channel read back with its own client across a crash of the
//! broker (or of the HTTP receiver): see [`super::across_a_crash`].

use super::brokers::{self, Outage};
use super::*;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use finality_relay::event::Encoding;
use finality_testkit::testing;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// An HTTP receiver verifying signatures with the Standard Webhooks
/// reference library; "down": its listener closed and every request on a
/// kept-alive connection answered 503.
struct Receiver {
    got: Mutex<Vec<Value>>,
    up: AtomicBool,
}

struct HttpReceiver {
    state: Arc<Receiver>,
    port: u16,
    task: Option<tokio::task::JoinHandle<()>>,
}

async fn receive(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if !r.up.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let wh = standardwebhooks::Webhook::new(SECRET).unwrap();
    if wh.verify(&body, &headers).is_err() {
        return StatusCode::UNAUTHORIZED;
    }
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(headers["webhook-id"].to_str().unwrap(), v["id"]);
    r.got.lock().unwrap().push(v);
    StatusCode::OK
}

impl Outage for HttpReceiver {
    fn stop(&mut self) {
        self.state.up.store(false, Ordering::SeqCst);
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
    fn start(&mut self) {
        self.state.up.store(true, Ordering::SeqCst);
        let l = std::net::TcpListener::bind(("127.0.0.1", self.port)).unwrap();
        l.set_nonblocking(true).unwrap();
        let l = tokio::net::TcpListener::from_std(l).unwrap();
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(self.state.clone());
        self.task = Some(tokio::spawn(async move {
            let _ = axum::serve(l, app).await;
        }));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_receiver_gets_every_event_across_a_crash() {
    let db = testing::postgres(8).await;
    let mut receiver = HttpReceiver {
        state: Arc::new(Receiver {
            got: Mutex::new(Vec::new()),
            up: AtomicBool::new(true),
        }),
        port: finality_testkit::free_port(),
        task: None,
    };
    receiver.start();
    let sink = finality_relay::http::HttpSink::new(
        "ledger",
        &format!("http://127.0.0.1:{}/hook", receiver.port),
        standardwebhooks::Webhook::new(SECRET).unwrap(),
        vec![],
        Encoding::default(),
        Duration::from_secs(5),
        Arc::new(finality_core::SystemClock),
    )
    .unwrap();
    let state = receiver.state.clone();
    across_a_crash(
        db.store.clone(),
        Arc::new(sink),
        4,
        &mut receiver,
        || async move { state.got.lock().unwrap().clone() },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_jetstream_gets_every_event_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = brokers::nats(dir.path());
    let url = format!("nats://127.0.0.1:{}", server.port);
    let db = testing::postgres(4).await;
    let sink = finality_relay::nats::NatsSink::connect(
        &url,
        "LEDGER",
        "fin",
        Duration::from_secs(120),
        Encoding::default(),
    )
    .await
    .unwrap();
    across_a_crash(db.store.clone(), Arc::new(sink), 8, &mut server, || async {
        let js = async_nats::jetstream::new(async_nats::connect(&url).await.unwrap());
        let mut stream = js.get_stream("LEDGER").await.unwrap();
        let last = stream.info().await.unwrap().state.last_sequence;
        let mut got = Vec::new();
        for seq in 1..=last {
            let m = stream.get_raw_message(seq).await.unwrap();
            let v: Value = serde_json::from_slice(&m.payload).unwrap();
            assert_eq!(
                m.subject.as_str(),
                format!("fin.{}", v["type"].as_str().unwrap())
            );
            got.push(v);
        }
        got
    })
    .await;
}

async fn amqp(url: &str) -> lapin::Connection {
    finality_relay::rabbitmq::connect(url).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_gets_every_event_across_a_crash() {
    use lapin::options::*;
    use lapin::types::FieldTable;
    let dir = tempfile::tempdir().unwrap();
    let mut broker = brokers::rabbitmq(dir.path());
    let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", broker.port);
    // The consumer's durable queue, bound before events flow.
    {
        let conn = amqp(&url).await;
        let ch = conn.create_channel().await.unwrap();
        ch.exchange_declare(
            "finality.events",
            lapin::ExchangeKind::Topic,
            ExchangeDeclareOptions {
                durable: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
        let durable = QueueDeclareOptions {
            durable: true,
            ..Default::default()
        };
        ch.queue_declare("ledger", durable, FieldTable::default())
            .await
            .unwrap();
        ch.queue_bind(
            "ledger",
            "finality.events",
            "#",
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
        conn.close(200, "set up").await.unwrap();
    }
    // The queue and its binding are on disk before the crash: RabbitMQ
    // writes its definitions from a buffer, which a crash moments after
    // declaring them can lose (then nothing is routed to the queue, and the
    // test would measure the broker, not the pusher).
    broker.restart_clean();
    let db = testing::postgres(4).await;
    let sink = finality_relay::rabbitmq::RabbitSink::new(
        &url,
        "finality.events",
        Encoding::default(),
        Duration::from_secs(5),
    );
    across_a_crash(db.store.clone(), Arc::new(sink), 8, &mut broker, || async {
        let conn = amqp(&url).await;
        let ch = conn.create_channel().await.unwrap();
        let mut got = Vec::new();
        while let Some(m) = ch
            .basic_get("ledger", BasicGetOptions::default())
            .await
            .unwrap()
        {
            let v: Value = serde_json::from_slice(&m.delivery.data).unwrap();
            let id = m.delivery.properties.message_id().as_ref().unwrap();
            assert_eq!(id.as_str(), v["id"].as_str().unwrap());
            assert_eq!(m.delivery.properties.delivery_mode(), &Some(2));
            assert_eq!(m.delivery.routing_key.as_str(), v["type"].as_str().unwrap());
            m.delivery.ack(BasicAckOptions::default()).await.unwrap();
            got.push(v);
        }
        if got.is_empty() {
            // What the broker said of its recovery, for the failure's reader.
            for f in std::fs::read_dir(dir.path().join("log"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let text = std::fs::read_to_string(f.path()).unwrap_or_default();
                for l in text.lines().filter(|l| {
                    l.contains("Recovering") || l.contains("error") || l.contains("listener")
                }) {
                    eprintln!("{}: {l}", f.path().display());
                }
            }
        }
        got
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stream_gets_every_event_across_a_crash() {
    use redis::streams::{StreamReadOptions, StreamReadReply};
    use redis::AsyncCommands;
    let dir = tempfile::tempdir().unwrap();
    let mut server = brokers::redis(dir.path());
    let url = format!("redis://127.0.0.1:{}/", server.port);
    let client = redis::Client::open(url.as_str()).unwrap();
    {
        let mut c = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = c
            .xgroup_create_mkstream("finality:events", "ledger", "$")
            .await
            .unwrap();
    }
    let db = testing::postgres(4).await;
    let sink = finality_relay::redis_streams::RedisSink::new(
        &url,
        "finality:events",
        100_000,
        Encoding::default(),
        Duration::from_secs(2),
    )
    .unwrap();
    across_a_crash(db.store.clone(), Arc::new(sink), 8, &mut server, || async {
        let mut c = client.get_multiplexed_async_connection().await.unwrap();
        let mut got = Vec::new();
        loop {
            let opts = StreamReadOptions::default()
                .group("ledger", "c1")
                .count(500);
            let r: StreamReadReply = c
                .xread_options(&["finality:events"], &[">"], &opts)
                .await
                .unwrap();
            let entries: Vec<_> = r.keys.into_iter().flat_map(|k| k.ids).collect();
            if entries.is_empty() {
                break;
            }
            for e in entries {
                let body: String = e.get("event").unwrap();
                let id: String = e.get("id").unwrap();
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(id, v["id"].as_str().unwrap());
                let _: i64 = c.xack("finality:events", "ledger", &[&e.id]).await.unwrap();
                got.push(v);
            }
        }
        got
    })
    .await;
}
