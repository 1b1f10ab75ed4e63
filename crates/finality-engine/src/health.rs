//! Per-provider health: pauses (while a provider is rate-limiting us or
//! failing permanently) and circuit breakers (while its calls time out or
//! fail with 5xx). Either way its due polls are deferred without spending
//! anything; `/readyz` reports both.

use crate::breaker::Breakers;
use finality_core::{ErrorClass, Timestamp};
use std::collections::HashMap;
use std::sync::Mutex;

/// Why and until when a provider is paused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    pub until: Timestamp,
    pub class: ErrorClass,
    pub reason: String,
}

/// Shared by the engine (writes) and `/readyz` (reads).
#[derive(Debug, Default)]
pub struct Health {
    paused: Mutex<HashMap<String, Pause>>,
    breakers: Breakers,
}

impl Health {
    pub fn new() -> Self {
        Self::default()
    }

    /// With breakers configured other than by default.
    pub fn with_breakers(breakers: Breakers) -> Self {
        Health {
            paused: Mutex::default(),
            breakers,
        }
    }

    pub fn breakers(&self) -> &Breakers {
        &self.breakers
    }

    /// Pause `provider` until `until` (extending, never shortening, a pause).
    pub fn pause(&self, provider: &str, pause: Pause) {
        let mut map = self.paused.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(provider) {
            Some(p) if p.until >= pause.until => {}
            _ => {
                map.insert(provider.to_string(), pause);
            }
        }
    }

    /// The pause in force for `provider` at `now`, if any.
    pub fn paused(&self, provider: &str, now: Timestamp) -> Option<Pause> {
        let map = self.paused.lock().unwrap_or_else(|p| p.into_inner());
        map.get(provider).filter(|p| p.until > now).cloned()
    }

    /// Every pause in force at `now`, for `/readyz`.
    pub fn pauses(&self, now: Timestamp) -> Vec<(String, Pause)> {
        let map = self.paused.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = map
            .iter()
            .filter(|(_, p)| p.until > now)
            .map(|(k, p)| (k.clone(), p.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}
