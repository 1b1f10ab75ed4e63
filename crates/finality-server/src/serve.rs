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

/// Serve `app` on `listener` until `shutdown`, then stop accepting and wait
/// for open connections to finish their requests (the caller bounds that
/// wait with its grace period).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    header_timeout: Duration,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let graceful = GracefulShutdown::new();
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
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "setting TCP_NODELAY failed");
        }
        // The peer's address rides on every request (`ConnectInfo`), so a
        // manual action's audit record says where it came from.
        let service = TowerToHyperService::new(tower_http::add_extension::AddExtension::new(
            app.clone(),
            axum::extract::ConnectInfo(peer),
        ));
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection closed with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
