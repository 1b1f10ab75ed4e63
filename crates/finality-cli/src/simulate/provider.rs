//! The provider of a simulation, in process: it answers from each payment's
//! draw at the virtual time of the call, and counts every call.

use super::model::Draw;
use async_trait::async_trait;
use finality_core::{Clock, Status};
use finality_providers::{Observation, PollTarget, Provider, ProviderError};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Payment `i` has provider reference `m{i}`.
pub fn provider_ref(i: usize) -> String {
    format!("m{i}")
}

fn index(provider_ref: &str) -> Option<usize> {
    provider_ref.strip_prefix('m')?.parse().ok()
}

/// Answers status queries from the draws.
pub struct ModelProvider {
    draws: Arc<Vec<Draw>>,
    clock: Arc<dyn Clock>,
    /// Calls per payment, and in all.
    pub calls: Vec<AtomicU32>,
    pub total: AtomicU64,
}

impl ModelProvider {
    pub fn new(draws: Arc<Vec<Draw>>, clock: Arc<dyn Clock>) -> Self {
        let calls = (0..draws.len()).map(|_| AtomicU32::new(0)).collect();
        ModelProvider {
            draws,
            clock,
            calls,
            total: AtomicU64::new(0),
        }
    }
}

#[async_trait]
impl Provider for ModelProvider {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        self.total.fetch_add(1, Ordering::Relaxed);
        let Some(i) = t
            .provider_ref
            .and_then(index)
            .filter(|i| *i < self.draws.len())
        else {
            return Err(ProviderError::Permanent {
                message: format!("no simulated payment `{}`", t.provider_ref.unwrap_or("")),
            });
        };
        self.calls[i].fetch_add(1, Ordering::Relaxed);
        let d = &self.draws[i];
        let status = match d.settles_at {
            Some(at) if at <= self.clock.now() => d.status,
            _ => Status::Pending,
        };
        Ok(Observation::new(Some(status), status.as_str()))
    }
}
