//! Reads served by a streaming replica (`[database] read_url`).
//!
//! The API's read-only handlers (get, list, stats, the feed, the console's
//! pages) take [`Reads`]: the replica while it serves, the primary
//! otherwise. Everything that writes, claims, or reads to decide a write
//! uses `AppState::store`, the primary.
//!
//! - **How far behind.** Every [`CHECK_EVERY`] the primary's WAL position is
//!   sampled and the replica asked how far it has replayed. Its lag is the
//!   age of the oldest sample it has not replayed yet (0 when it has them
//!   all): "the replica does not yet show what the primary had that long
//!   ago". No clock is compared between the servers.
//! - **When it serves.** Reachable, a standby, and lag ≤ `max_lag`.
//!   Otherwise every read goes to the primary, `/readyz` says why, and
//!   `finality_replica_serving` is 0.
//! - **Reading your own writes.** After a caller (a bearer token or a
//!   console session) writes anything, its reads go to the primary for
//!   [`Replica::own_writes_window`] (`max_lag` plus two checks), by which
//!   time a serving replica is known to have replayed the write. A payment
//!   the replica does not know is looked up on the primary before a 404.

use crate::App;
use finality_store::postgres::{Replayed, ReplicaLink};
use finality_store::Store;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often the replica's position is checked.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

/// The default bound on lag past which reads go to the primary.
pub const DEFAULT_MAX_LAG: Duration = Duration::from_secs(5);

/// Samples kept at most (a replica that stops replaying keeps its oldest
/// unreplayed sample until this many are taken: by then it is far past
/// any sensible `max_lag`).
const MAX_SAMPLES: usize = 4096;

/// The replica and what is known of it.
pub struct Replica {
    store: Arc<dyn Store>,
    link: ReplicaLink,
    max_lag: Duration,
    state: Mutex<State>,
    writers: Mutex<HashMap<u64, Instant>>,
    /// Reads served by the replica and by the primary (on this node).
    served: [AtomicU64; 2],
}

#[derive(Debug, Clone)]
struct State {
    /// Primary positions sampled and not yet replayed (oldest first).
    samples: VecDeque<(Instant, u64)>,
    condition: Condition,
}

/// What `/readyz` and the metrics say of the replica.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Not checked yet: reads stay on the primary.
    Starting,
    /// Serving reads, this far behind.
    Serving(Duration),
    /// Reachable but further behind than `max_lag`.
    Lagging(Duration),
    /// Unreachable, or not a standby: why.
    Down(String),
}

impl Condition {
    pub fn as_str(&self) -> &'static str {
        match self {
            Condition::Starting => "starting",
            Condition::Serving(_) => "serving",
            Condition::Lagging(_) => "lagging",
            Condition::Down(_) => "down",
        }
    }
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("max_lag", &self.max_lag)
            .field("condition", &self.condition())
            .finish()
    }
}

impl Replica {
    /// A replica read through `store`, measured through `link`.
    pub fn new(store: Arc<dyn Store>, link: ReplicaLink, max_lag: Duration) -> Arc<Replica> {
        Arc::new(Replica {
            store,
            link,
            max_lag,
            state: Mutex::new(State {
                samples: VecDeque::new(),
                condition: Condition::Starting,
            }),
            writers: Mutex::new(HashMap::new()),
            served: [AtomicU64::new(0), AtomicU64::new(0)],
        })
    }

    /// Reads served so far: (by the replica, by the primary).
    pub fn reads_served(&self) -> (u64, u64) {
        (
            self.served[0].load(Ordering::Relaxed),
            self.served[1].load(Ordering::Relaxed),
        )
    }

    /// Connect to the replica at `read_url` (lazily: a replica that is down
    /// at start leaves reads on the primary until it answers).
    pub fn connect(
        primary_url: &str,
        read_url: &str,
        max_connections: u32,
        statement_timeout: Duration,
        max_lag: Duration,
    ) -> finality_store::Result<Arc<Replica>> {
        let (store, link) =
            ReplicaLink::connect(primary_url, read_url, max_connections, statement_timeout)?;
        Ok(Replica::new(Arc::new(store), link, max_lag))
    }

    pub fn condition(&self) -> Condition {
        self.lock_state().condition.clone()
    }

    pub fn serving(&self) -> bool {
        matches!(self.lock_state().condition, Condition::Serving(_))
    }

    /// How long after a caller's write its reads stay on the primary.
    pub fn own_writes_window(&self) -> Duration {
        self.max_lag + 2 * CHECK_EVERY
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One check: sample the primary, ask the replica, decide.
    pub async fn check(&self) {
        let started = Instant::now();
        let sampled = self.link.primary_position().await;
        let replayed = self.link.replayed().await;
        let now = Instant::now();
        let mut st = self.lock_state();
        if let Ok(lsn) = sampled {
            st.samples.push_back((started, lsn));
            if st.samples.len() > MAX_SAMPLES {
                st.samples.pop_front();
            }
        }
        st.condition = match replayed {
            Ok(Replayed::Upto(at)) => {
                while st.samples.front().is_some_and(|&(_, lsn)| lsn <= at) {
                    st.samples.pop_front();
                }
                let lag = st
                    .samples
                    .front()
                    .map_or(Duration::ZERO, |&(t, _)| now.saturating_duration_since(t));
                if lag <= self.max_lag {
                    Condition::Serving(lag)
                } else {
                    Condition::Lagging(lag)
                }
            }
            Ok(Replayed::NotAStandby) => {
                Condition::Down("read_url is not a standby (pg_is_in_recovery() is false)".into())
            }
            Err(e) => Condition::Down(e.to_string()),
        };
        let (serving, lag) = match &st.condition {
            Condition::Serving(l) => (1.0, l.as_secs_f64()),
            Condition::Lagging(l) => (0.0, l.as_secs_f64()),
            _ => (0.0, f64::NAN),
        };
        drop(st);
        metrics::gauge!("finality_replica_serving").set(serving);
        if lag.is_finite() {
            metrics::gauge!("finality_replica_lag_seconds").set(lag);
        }
    }

    /// Check every [`CHECK_EVERY`] until `stop`, logging each change of
    /// condition once.
    pub async fn watch(self: Arc<Self>, stop: CancellationToken) {
        let mut was = "starting";
        loop {
            self.check().await;
            let now = self.condition();
            if now.as_str() != was {
                match &now {
                    Condition::Serving(lag) => {
                        tracing::info!(lag_ms = lag.as_millis() as u64, "replica serving reads")
                    }
                    Condition::Lagging(lag) => tracing::warn!(
                        lag_ms = lag.as_millis() as u64,
                        max_lag_ms = self.max_lag.as_millis() as u64,
                        "replica lags: reads go to the primary"
                    ),
                    Condition::Down(why) => {
                        tracing::warn!(why = %why, "replica down: reads go to the primary")
                    }
                    Condition::Starting => {}
                }
                was = now.as_str();
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(CHECK_EVERY) => {}
            }
        }
    }

    /// A caller wrote: its reads stay on the primary for a while.
    fn wrote(&self, caller: u64) {
        let now = Instant::now();
        let window = self.own_writes_window();
        let mut w = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        if w.len() >= 10_000 {
            w.retain(|_, at| now.duration_since(*at) < window);
        }
        w.insert(caller, now);
    }

    fn wrote_lately(&self, caller: u64) -> bool {
        let w = self.writers.lock().unwrap_or_else(|e| e.into_inner());
        w.get(&caller)
            .is_some_and(|at| at.elapsed() < self.own_writes_window())
    }
}

/// Marks a request whose reads may go to the replica.
#[derive(Debug, Clone, Copy)]
struct OnReplica;

/// Who is asking, as far as reading one's own writes goes: the bearer
/// token or the console session (hashed in-process, never kept whole).
fn caller_key(req: &axum::extract::Request) -> Option<u64> {
    let h = req.headers();
    let auth = h.get(axum::http::header::AUTHORIZATION);
    let cookie = h
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .map(str::trim)
        .find(|c| c.starts_with(crate::console::session::COOKIE_NAME));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match (auth, cookie) {
        (Some(a), _) => a.as_bytes().hash(&mut hasher),
        (None, Some(c)) => c.hash(&mut hasher),
        (None, None) => return None,
    }
    Some(hasher.finish())
}

/// Routes each request's reads: a GET may read the replica unless its
/// caller wrote lately; any other request that succeeds counts as its
/// caller's write.
pub(crate) async fn route(
    axum::extract::State(app): axum::extract::State<App>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let Some(replica) = app.replica.clone() else {
        return next.run(req).await;
    };
    let key = caller_key(&req);
    let reading = matches!(
        *req.method(),
        axum::http::Method::GET | axum::http::Method::HEAD
    );
    if reading {
        if replica.serving() && !key.is_some_and(|k| replica.wrote_lately(k)) {
            req.extensions_mut().insert(OnReplica);
        }
        return next.run(req).await;
    }
    let resp = next.run(req).await;
    if let Some(k) = key {
        if resp.status().is_success() || resp.status().is_redirection() {
            replica.wrote(k);
        }
    }
    resp
}

/// The store a read-only handler reads from.
pub(crate) struct Reads {
    pub(crate) store: Arc<dyn Store>,
    primary: Arc<dyn Store>,
}

impl Reads {
    /// Whether these reads go to the replica.
    pub(crate) fn on_replica(&self) -> bool {
        !Arc::ptr_eq(&self.store, &self.primary)
    }

    /// The primary, for a second look at what the replica did not have.
    pub(crate) fn primary(&self) -> &Arc<dyn Store> {
        &self.primary
    }
}

impl axum::extract::FromRequestParts<App> for Reads {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &App,
    ) -> Result<Self, Self::Rejection> {
        let store = match (&app.replica, parts.extensions.get::<OnReplica>()) {
            (Some(r), Some(_)) => r.store.clone(),
            _ => app.store.clone(),
        };
        let reads = Reads {
            store,
            primary: app.store.clone(),
        };
        if let Some(r) = &app.replica {
            let on = reads.on_replica();
            r.served[usize::from(!on)].fetch_add(1, Ordering::Relaxed);
            let from = if on { "replica" } else { "primary" };
            metrics::counter!("finality_api_reads_total", "from" => from).increment(1);
        }
        Ok(reads)
    }
}
