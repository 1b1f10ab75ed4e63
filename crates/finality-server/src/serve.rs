//! The HTTP accept loop. Written here rather than using `axum::serve`
//! because that one sets no timer on hyper's HTTP/1 connections, and
//! without one hyper has no header read timeout: a client that trickles its
//! headers a byte at a time would hold a connection and its task forever.
//! This is the same loop with the timer on, plus TCP_NODELAY (acks and
//! feed answers are small; Nagle would hold them back).

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long a client may take to send a request's headers, and then its
/// body, before the connection is closed. Providers and API clients send a
/// request in milliseconds; ten seconds is slack for a slow network, not
/// for a client that stalls on purpose.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections served at once by default; more are accepted and closed at
/// once (so the listen backlog never fills). Keep it below the process's
/// file-descriptor limit less the database pool.
pub const MAX_CONNECTIONS: usize = 1024;

/// How long a connection may stay open with no request in flight by
/// default, whatever else it sends (HTTP/2 pings, SETTINGS): then it is
/// closed (gracefully: an HTTP/2 GOAWAY). Providers and clients reusing a
/// connection within a minute keep it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Requests in flight at once on one HTTP/2 connection.
pub const MAX_STREAMS: u32 = 64;

/// A connection taken into the reserve must start its request within this
/// (or its header timeout, if shorter) and is closed after that one
/// request: the reserve is for a health check or an authenticated call,
/// not for holding.
pub const RESERVE_WINDOW: Duration = Duration::from_secs(1);

/// What one listener allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request's headers, then its body, must arrive within this; a
    /// connection that sends nothing is closed after it.
    pub header_timeout: Duration,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
    /// Connections at once; more are closed at once.
    pub max_connections: usize,
    /// Connections at once from one address: one client cannot take every
    /// slot from the others (providers, the API's callers, `/healthz`).
    pub per_address: usize,
    /// Of `max_connections`, the ones kept for when the rest are full (or
    /// an address is at its cap): such a connection serves one request,
    /// and only `/healthz`, `/readyz` or a request carrying a credential
    /// (a bearer token or the console's cookie); anything else is answered
    /// 503. So many addresses holding connections open, which no
    /// per-address cap stops, still leave the health check and the API's
    /// callers a way in.
    pub reserve: usize,
}

impl Limits {
    /// The defaults for `max_connections` connections, `header_timeout`
    /// the client timeout: half of them per address.
    pub fn new(header_timeout: Duration, max_connections: usize) -> Self {
        let max_connections = max_connections.max(1);
        Limits {
            header_timeout,
            idle_timeout: IDLE_TIMEOUT,
            max_connections,
            per_address: (max_connections / 2).max(1),
            // A sixteenth, 1 to 64 (none when only one connection is allowed).
            reserve: (max_connections / 16).clamp(1, 64).min(max_connections - 1),
        }
    }
}

/// Serve `app` on `listener` until `shutdown`, then stop accepting and wait
/// for open connections to finish their requests (the caller bounds that
/// wait with its grace period), within `limits`.
///
/// A connection that sends nothing within `header_timeout` is closed before
/// hyper sees it (hyper's own header timeout starts only once a request
/// begins, and its protocol sniffing has none); an HTTP/2 connection is
/// pinged every `header_timeout` and closed when a ping goes unanswered as
/// long (a client that sent only the h2c preface answers none); and any
/// connection, HTTP/1.1 or HTTP/2, with no request in flight for
/// `idle_timeout` is closed, whatever pings it answers (hyper has no idle
/// timeout of its own for HTTP/2: this loop keeps one per connection).
/// When the other slots are full, or the address is at its cap, a new
/// connection may take one of `limits.reserve` (see [`Limits::reserve`]).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let header_timeout = limits.header_timeout;
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(header_timeout))
        .keep_alive_timeout(header_timeout)
        // Requests in flight on one connection (a long-polling feed reader
        // holds one each).
        .max_concurrent_streams(MAX_STREAMS);
    let max = limits.max_connections.max(1);
    let reserve = limits.reserve.min(max - 1);
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(max - reserve));
    let reserved = std::sync::Arc::new(tokio::sync::Semaphore::new(reserve));
    let per_address = std::sync::Arc::new(PerAddress::default());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait, never spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let general = slots.clone().try_acquire_owned().ok().and_then(|slot| {
            PerAddress::take(&per_address, peer.ip(), limits.per_address).map(|mine| (slot, mine))
        });
        let (slot, in_reserve) = match general {
            Some((slot, mine)) => (Slot::General(slot, mine), false),
            None => match reserved.clone().try_acquire_owned() {
                Ok(slot) => {
                    metrics::counter!("finality_connections_reserved_total").increment(1);
                    (Slot::Reserve(slot), true)
                }
                Err(_) => {
                    // Full: closed at once, so the backlog never fills and
                    // a flood of idle connections cannot starve `/healthz`
                    // for long.
                    metrics::counter!("finality_connections_refused_total").increment(1);
                    tracing::warn!(%peer, max_connections = max, per_address = limits.per_address,
                        "too many connections open (or from this address), and the reserve is in use; closing a new one");
                    drop(stream);
                    continue;
                }
            },
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "setting TCP_NODELAY failed");
        }
        let builder = builder.clone();
        let app = app.clone();
        let shutdown = shutdown.clone();
        let (first_byte, idle_timeout, app) = if in_reserve {
            (
                header_timeout.min(RESERVE_WINDOW),
                limits.idle_timeout.min(RESERVE_WINDOW),
                app.layer(axum::middleware::from_fn(reserve_gate)),
            )
        } else {
            (header_timeout, limits.idle_timeout, app)
        };
        tokio::spawn(async move {
            let _slot = slot;
            // Nothing sent yet: wait for the first byte, at most as long as
            // a request's headers may take (peek leaves it for hyper).
            let mut one = [0u8; 1];
            match tokio::time::timeout(first_byte, stream.peek(&mut one)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return, // silent, or closed: dropped
            }
            // The peer's address rides on every request (`ConnectInfo`),
            // so a manual action's audit record says where it came from.
            let activity = std::sync::Arc::new(Activity::new());
            let service = TowerToHyperService::new(Tracked {
                inner: tower_http::add_extension::AddExtension::new(
                    app,
                    axum::extract::ConnectInfo(peer),
                ),
                activity: activity.clone(),
            });
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            let mut closing = false;
            loop {
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::debug!(error = %e, "connection closed with an error");
                        }
                        break;
                    }
                    _ = activity.idle_for(idle_timeout), if !closing => {
                        metrics::counter!("finality_connections_idle_closed_total").increment(1);
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    _ = activity.served_one(), if in_reserve && !closing => {
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    _ = shutdown.cancelled(), if !closing => {
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
            }
        });
    }
    drop(listener);
    // Every connection done: all the slots back.
    let _ = slots
        .acquire_many(u32::try_from(max - reserve).unwrap_or(u32::MAX))
        .await;
    let _ = reserved
        .acquire_many(u32::try_from(reserve).unwrap_or(u32::MAX))
        .await;
    Ok(())
}

/// What a connection holds while open: a general slot and its address's
/// count, or one of the reserve.
enum Slot {
    General(
        #[allow(dead_code)] tokio::sync::OwnedSemaphorePermit,
        #[allow(dead_code)] AddressSlot,
    ),
    Reserve(#[allow(dead_code)] tokio::sync::OwnedSemaphorePermit),
}

/// What a reserve connection may ask: `/healthz`, `/readyz`, or anything
/// with a credential (checked, as always, by the route). Anything else is
/// a 503 naming why, without reaching the app.
async fn reserve_gate(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::header::{AUTHORIZATION, COOKIE, RETRY_AFTER};
    use axum::response::IntoResponse;
    let path = req.uri().path();
    let h = req.headers();
    // The console's session cookie by name: any other cookie (a browser
    // sends whatever it holds for the host) is not a credential.
    let session = h.get_all(COOKIE).iter().any(|v| {
        v.to_str().is_ok_and(|v| {
            v.split(';').any(|c| {
                c.trim_start()
                    .starts_with(crate::console::session::COOKIE_PREFIX)
            })
        })
    });
    if path == "/healthz" || path == "/readyz" || h.contains_key(AUTHORIZATION) || session {
        return next.run(req).await;
    }
    (
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        [(RETRY_AFTER, "1")],
        axum::Json(serde_json::json!({"error": {
            "code": "unavailable",
            "message": "the server's connections are all in use; only /healthz, /readyz and \
                        requests with a credential are served on its reserve now; retry",
        }})),
    )
        .into_response()
}

/// Connections open per address.
#[derive(Debug, Default)]
struct PerAddress(std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>);

/// One connection of an address; its count goes down when dropped.
struct AddressSlot {
    all: std::sync::Arc<PerAddress>,
    ip: std::net::IpAddr,
}

impl PerAddress {
    fn take(
        all: &std::sync::Arc<PerAddress>,
        ip: std::net::IpAddr,
        cap: usize,
    ) -> Option<AddressSlot> {
        let mut map = all.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(ip).or_default();
        if *n >= cap {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            all: all.clone(),
            ip,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut map = self.all.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.ip);
            }
        }
    }
}

/// A connection's requests in flight and when the last one ended.
struct Activity {
    started: tokio::time::Instant,
    in_flight: std::sync::atomic::AtomicUsize,
    /// Milliseconds after `started` when a request last began or ended.
    last_ms: std::sync::atomic::AtomicU64,
    /// Requests ended.
    served: std::sync::atomic::AtomicUsize,
    /// Woken when a request ends.
    ended: tokio::sync::Notify,
}

impl Activity {
    fn new() -> Self {
        Activity {
            started: tokio::time::Instant::now(),
            in_flight: Default::default(),
            last_ms: Default::default(),
            served: Default::default(),
            ended: tokio::sync::Notify::new(),
        }
    }

    /// Resolves once a request has ended and none is in flight.
    async fn served_one(&self) {
        use std::sync::atomic::Ordering;
        loop {
            let ended = self.ended.notified();
            let mut ended = std::pin::pin!(ended);
            ended.as_mut().enable();
            if self.served.load(Ordering::Relaxed) > 0
                && self.in_flight.load(Ordering::Relaxed) == 0
            {
                return;
            }
            ended.await;
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Resolves once no request has been in flight for `idle`.
    async fn idle_for(&self, idle: Duration) {
        use std::sync::atomic::Ordering;
        loop {
            let last = self.started + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let busy = self.in_flight.load(Ordering::Relaxed) > 0;
            if !busy && last.elapsed() >= idle {
                return;
            }
            // Looked at again when the current idle spell could end (or,
            // while busy, after another `idle`).
            let wake = if busy {
                tokio::time::Instant::now() + idle
            } else {
                last + idle
            };
            tokio::time::sleep_until(wake).await;
        }
    }
}

/// A request in flight on a connection; ends (and touches) when dropped.
struct InFlight(std::sync::Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0
            .in_flight
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        self.0
            .served
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.touch();
        self.0.ended.notify_waiters();
    }
}

/// The app, counting each connection's requests in flight (for the idle
/// timeout). A response's body is sent after its future ends; every body
/// finality sends is small and whole.
#[derive(Clone)]
struct Tracked<S> {
    inner: S,
    activity: std::sync::Arc<Activity>,
}

impl<S, R> tower_service::Service<R> for Tracked<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        self.activity
            .in_flight
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.activity.touch();
        let guard = InFlight(self.activity.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let r = fut.await;
            drop(guard);
            r
        })
    }
}

/// Cancel `token` on ctrl-c or SIGTERM: one shutdown path for both.
pub fn cancel_on_signal(token: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(_) => {
                        let _ = ctrl_c.await;
                        token.cancel();
                        return;
                    }
                };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("shutting down: finishing in-flight polls");
        token.cancel();
    });
}
