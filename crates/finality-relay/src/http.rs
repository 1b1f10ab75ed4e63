//! HTTP push: each event POSTed as JSON, signed per Standard Webhooks
//! (`webhook-id` = the event id, so a receiver can dedupe redeliveries),
//! with the specification's own Rust library.

use crate::event::{Encoding, Event};
use crate::{Sink, SinkError};
use async_trait::async_trait;
use finality_core::Clock;
use finality_store::OutboxEvent;
use std::sync::Arc;
use std::time::Duration;

pub struct HttpSink {
    name: String,
    url: String,
    signer: standardwebhooks::Webhook,
    types: Vec<String>,
    encoding: Encoding,
    http: reqwest::Client,
    clock: Arc<dyn Clock>,
}

impl HttpSink {
    /// `signer` holds the `whsec_` secret; `types` empty means every type.
    pub fn new(
        name: &str,
        url: &str,
        signer: standardwebhooks::Webhook,
        types: Vec<String>,
        encoding: Encoding,
        timeout: Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, crate::StartError> {
        // No redirect is followed: it would carry the signed event to
        // wherever `Location` points. A 3xx is a failed delivery naming it.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(crate::StartError::Client)?;
        Ok(HttpSink {
            name: format!("http:{name}"),
            url: url.to_string(),
            signer,
            types,
            encoding,
            http,
            clock,
        })
    }
}

#[async_trait]
impl Sink for HttpSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn schema(&self) -> crate::event::Schema {
        self.encoding.schema
    }

    fn accepts(&self, e: &OutboxEvent) -> bool {
        self.types.is_empty() || self.types.contains(&e.event_type)
    }

    async fn deliver(&self, ev: &Event) -> Result<Option<u16>, SinkError> {
        let e = &ev.outbox;
        let body = self.encoding.encode(ev).to_string();
        let ts = self.clock.now().millis() / 1000;
        // Fails only for a body that is not UTF-8, which JSON never is.
        let sig = self
            .signer
            .sign(&e.event_id, ts, body.as_bytes())
            .map_err(|err| SinkError {
                status_code: None,
                message: format!("signing: {err}"),
            })?;
        let resp = self
            .http
            .post(&self.url)
            .header("content-type", self.encoding.content_type())
            .header("webhook-id", &e.event_id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", sig)
            .body(body);
        // The delivery's span context (traceparent), when traces are on.
        let resp = finality_core::trace_context::trace_headers()
            .into_iter()
            .fold(resp, |b, (k, v)| b.header(k, v))
            .send()
            .await
            .map_err(|err| SinkError {
                status_code: None,
                message: if err.is_timeout() {
                    "timeout".into()
                } else {
                    // Without the URL: it may carry a token.
                    format!("request failed: {}", err.without_url())
                },
            })?;
        let code = resp.status().as_u16();
        if resp.status().is_success() {
            Ok(Some(code))
        } else if resp.status().is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("(no Location)")
                .to_string();
            Err(SinkError {
                status_code: Some(code),
                message: format!("HTTP {code}: redirect to {to} not followed (fix the url)"),
            })
        } else {
            let text: String = resp
                .text()
                .await
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            Err(SinkError {
                status_code: Some(code),
                message: format!("HTTP {code}: {text}"),
            })
        }
    }
}
