//! W3C trace context for outgoing requests: the `traceparent` (and
//! `tracestate`) of the current span, so that a provider's or a receiver's
//! own traces join finality's. Empty unless traces are switched on
//! (`[tracing] otlp_endpoint`): no span context, no propagator, no header.

use opentelemetry::propagation::Injector;
use tracing_opentelemetry::OpenTelemetrySpanExt;

struct Headers(Vec<(String, String)>);

impl Injector for Headers {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_string(), value));
    }
}

/// The headers that carry the current span's context to the next hop.
pub fn trace_headers() -> Vec<(String, String)> {
    let cx = tracing::Span::current().context();
    let mut h = Headers(Vec::new());
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut h));
    h.0
}
