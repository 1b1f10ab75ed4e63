//! The HTTP accept loop. Written here rather than using `axum::serve`
//! because that one sets no timer on hyper's HTTP/1 connections, and
//! without one hyper has no header read timeout: a client that trickles its
//! headers a byte at a time would hold a connection and its task forever.
//! This is the same loop with the timer on, plus TCP_NODELAY (acks and
//! feed answers are small; Nagle would hold them back).

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
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

/// Serve `app` on `listener` until `shutdown`, then stop accepting and wait
/// for open connections to finish their requests (the caller bounds that
/// wait with its grace period). At most `max_connections` at once.
///
/// A connection that sends nothing within `header_timeout` is closed before
/// hyper sees it (hyper's own header timeout starts only once a request
/// begins, and its protocol sniffing has none); an HTTP/2 connection is
/// pinged every `header_timeout` and closed when a ping goes unanswered as
/// long (a client that sent only the h2c preface answers none).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    header_timeout: Duration,
    max_connections: usize,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(header_timeout))
        .keep_alive_timeout(header_timeout);
    let graceful = GracefulShutdown::new();
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(max_connections.max(1)));
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
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Full: closed at once, so the backlog never fills and a
            // flood of idle connections cannot starve `/healthz` for long.
            metrics::counter!("finality_connections_refused_total").increment(1);
            tracing::warn!(%peer, max_connections, "too many connections open; closing a new one");
            drop(stream);
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "setting TCP_NODELAY failed");
        }
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let app = app.clone();
        tokio::spawn(async move {
            let _slot = slot;
            // Nothing sent yet: wait for the first byte, at most as long as
            // a request's headers may take (peek leaves it for hyper).
            let mut one = [0u8; 1];
            match tokio::time::timeout(header_timeout, stream.peek(&mut one)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return, // silent, or closed: dropped
            }
            // The peer's address rides on every request (`ConnectInfo`),
            // so a manual action's audit record says where it came from.
            let service = TowerToHyperService::new(tower_http::add_extension::AddExtension::new(
                app,
                axum::extract::ConnectInfo(peer),
            ));
            let conn = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .into_owned();
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "connection closed with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
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
