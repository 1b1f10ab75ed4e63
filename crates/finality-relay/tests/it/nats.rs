//! NATS JetStream against a nats-server this test starts on its own port
//! (the machine's own instance is left alone): every event arrives, an
//! outage mid-run loses none, and a redelivered event is stored once.

use super::*;
use finality_core::{Clock, SystemClock};
use finality_relay::nats::NatsSink;
use finality_relay::{PushConfig, Pusher, Sink};
use finality_testkit::testing;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use finality_testkit::free_port;

fn nats_binary() -> String {
    [
        "/usr/sbin/nats-server",
        "/usr/bin/nats-server",
        "/usr/local/bin/nats-server",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .unwrap_or("nats-server")
    .to_string()
}

struct NatsServer(Child);

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_nats(port: u16, dir: &std::path::Path) -> NatsServer {
    let child = Command::new(nats_binary())
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server is installed (Debian package nats-server)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nats-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    NatsServer(child)
}

async fn push_until(pusher: &Pusher, store: &dyn finality_store::Store, seq: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let _ = pusher.push_once().await;
        if store.destination("nats").await.unwrap().delivered_seq == seq {
            return;
        }
        assert!(Instant::now() < deadline, "NATS delivery stuck");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_gets_every_event_across_an_outage_and_dedupes() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("nats://127.0.0.1:{port}");
    let server = start_nats(port, dir.path());
    let db = testing::postgres(4).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let sink = Arc::new(
        NatsSink::connect(
            &url,
            "FINALITY_T",
            "fin",
            Duration::from_secs(120),
            finality_relay::event::Encoding::default(),
        )
        .await
        .unwrap(),
    );
    let cfg = PushConfig {
        concurrency: 1,
        retry: finality_core::Schedule::Exponential {
            base: Duration::from_millis(10),
            factor: 2.0,
            cap: Duration::from_millis(200),
            jitter: 0.2,
        },
        ..PushConfig::default()
    };
    let pusher = Pusher::new(db.store.clone(), clock, sink.clone(), cfg);

    for i in 0..10 {
        two_transitions(&*db.store, &format!("n{i}")).await;
    }
    finality_relay::sequencer::sequence_all(&*db.store)
        .await
        .unwrap();
    push_until(&pusher, &*db.store, 20).await;

    // NATS goes away; events keep being written and wait.
    drop(server);
    for i in 10..20 {
        two_transitions(&*db.store, &format!("n{i}")).await;
    }
    finality_relay::sequencer::sequence_all(&*db.store)
        .await
        .unwrap();
    for _ in 0..5 {
        let _ = pusher.push_once().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        db.store.destination("nats").await.unwrap().delivered_seq,
        20,
        "nothing marked published while NATS is down"
    );

    // NATS comes back (same storage): the backlog arrives.
    let _server = start_nats(port, dir.path());
    push_until(&pusher, &*db.store, 40).await;

    let client = async_nats::connect(&url).await.unwrap();
    let js = async_nats::jetstream::new(client);
    let mut stream = js.get_stream("FINALITY_T").await.unwrap();
    assert_eq!(stream.info().await.unwrap().state.messages, 40);
    let first = stream.get_raw_message(1).await.unwrap();
    assert_eq!(first.subject.as_str(), "fin.payment.processing");

    // The same event published again is stored once (Nats-Msg-Id).
    let again = db.store.feed_after(0, 1).await.unwrap();
    let again = finality_relay::event::complete(&*db.store, again)
        .await
        .unwrap()
        .remove(0);
    sink.deliver(&again).await.unwrap();
    assert_eq!(stream.info().await.unwrap().state.messages, 40);
}
