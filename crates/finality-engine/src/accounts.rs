//! A provider's accounts as the engine and the server use them: each one's
//! adapter (built from the provider's table with the account's settings,
//! [`AccountSpec::applied_to`]), whether it is enabled, and where it came
//! from. The file's accounts are built at start; the ones added at run time
//! ([`finality_store::Accounts`]) are read by [`refresh`] every few seconds
//! on every node, so an account added through one node's API is polled and
//! verified by all of them without a restart.
//!
//! An account's health (pause, circuit breaker, rate limit, webhook outage)
//! is kept under its [`scope`], `provider/account`, beside the provider's
//! own: a 401 for one connected account pauses that account only.

use finality_providers::config::{build_account, AccountSpec, Adapter, ProviderConfig};
use finality_providers::Provider;
use finality_store::{AccountRow, Lane};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Where an account was defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `[[providers.NAME.accounts]]` in the configuration file.
    File,
    /// Added at run time (the API or the CLI), stored in the database.
    Stored,
}

/// Why an account cannot be used (for a poll, or for a webhook naming it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccountError {
    /// Its adapter could not be built on this node (a variable unset).
    #[error("{0}")]
    Setup(String),
    #[error("it names account `{0}`, which is disabled")]
    Disabled(String),
    #[error("it names account `{0}`, which is not set up on this node: {1}")]
    NotSetUp(String, Box<AccountError>),
    #[error("it names account `{0}`, which is not one of the provider's accounts")]
    Unknown(String),
}

/// One account, ready to poll and verify with.
pub struct Account {
    pub id: String,
    pub spec: AccountSpec,
    /// Its adapter, or why it could not be built (a variable unset on this
    /// node): its payments wait, paused, and the console says why.
    pub adapter: Result<Arc<dyn Provider>, AccountError>,
    pub disabled: bool,
    pub origin: Origin,
    /// The stored row's `spec` as read, to rebuild only what changed.
    stored: Option<(serde_json::Value, bool)>,
}

/// The name an account's health and rate limit are kept under.
pub fn scope(provider: &str, account: Option<&str>) -> String {
    finality_core::Scope::new(provider, account).to_string()
}

/// One provider's accounts.
#[derive(Default)]
pub struct ProviderAccounts {
    /// The provider's table, accounts are built from (`None`: a provider
    /// assembled in code, which takes no accounts).
    cfg: Option<ProviderConfig>,
    map: RwLock<HashMap<String, Arc<Account>>>,
    /// The id the provider's own table answers for (Adyen's
    /// `merchant_account`, Alipay's `app_id`): a webhook naming it is the
    /// provider's, not an unknown account's.
    own: Option<String>,
    /// Bumped on every change, so claim weights are recomputed only then.
    generation: AtomicU64,
    /// Accounts this node saw enabled again (disabled before) since they
    /// were last taken: their polls, which a node may have deferred while
    /// it still saw them disabled, are brought forward (`keep_fresh`).
    reenabled: std::sync::Mutex<Vec<String>>,
}

impl ProviderAccounts {
    /// The file's accounts of `cfg`, built now.
    pub fn new(name: &str, cfg: &ProviderConfig) -> Self {
        let map = cfg
            .accounts
            .iter()
            .map(|spec| {
                let a = Account {
                    id: spec.id.clone(),
                    adapter: build_account(name, cfg, spec)
                        .map_err(|e| AccountError::Setup(e.to_string())),
                    spec: spec.clone(),
                    disabled: false,
                    origin: Origin::File,
                    stored: None,
                };
                (spec.id.clone(), Arc::new(a))
            })
            .collect();
        let own = own_id_of(cfg);
        ProviderAccounts {
            own,
            cfg: Some(cfg.clone()),
            map: RwLock::new(map),
            generation: AtomicU64::new(1),
            reenabled: Default::default(),
        }
    }

    /// Accounts of a provider assembled in code (benchmarks, tests): each
    /// id with its adapter, enabled.
    pub fn with_adapters(accounts: Vec<(String, Arc<dyn Provider>)>) -> Self {
        let map = accounts
            .into_iter()
            .map(|(id, adapter)| {
                let a = Account {
                    spec: AccountSpec::named(&id),
                    id: id.clone(),
                    adapter: Ok(adapter),
                    disabled: false,
                    origin: Origin::File,
                    stored: None,
                };
                (id, Arc::new(a))
            })
            .collect();
        ProviderAccounts {
            cfg: None,
            map: RwLock::new(map),
            own: None,
            generation: AtomicU64::new(1),
            reenabled: Default::default(),
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<Account>> {
        self.read().get(id).cloned()
    }

    /// Every account, by id.
    pub fn all(&self) -> Vec<Arc<Account>> {
        let mut v: Vec<_> = self.read().values().cloned().collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// Which adapter verifies a webhook whose body (or URL) names `named`
    /// (unverified), and whose fact it is once verified: the provider's own
    /// when it names none or the provider's own id, the account's when it
    /// names a known, enabled one. A webhook naming an account that is not
    /// configured, disabled or not set up here is never refused for that:
    /// it is verified with the credentials that can verify it (the
    /// account's own when this node has them, else the provider's), and
    /// kept parked under that account until the account can take it.
    pub fn route(&self, provider: &Arc<dyn Provider>, named: Option<String>) -> Routed {
        let own = |adapter: &Arc<dyn Provider>| Routed {
            adapter: adapter.clone(),
            account: None,
            parked: None,
        };
        // A provider without accounts is one merchant's: whatever its
        // bodies name is its own (as before accounts existed).
        let Some(named) = named.filter(|n| !self.is_empty() && !n.is_empty()) else {
            return own(provider);
        };
        if self.own.as_deref() == Some(named.as_str()) {
            return own(provider);
        }
        let (adapter, why) = match self.get(&named) {
            Some(a) => match (&a.adapter, a.disabled) {
                (Ok(adapter), false) => {
                    return Routed {
                        adapter: adapter.clone(),
                        account: Some(named),
                        parked: None,
                    }
                }
                (Ok(adapter), true) => (adapter.clone(), AccountError::Disabled(named.clone())),
                (Err(e), _) => (
                    provider.clone(),
                    AccountError::NotSetUp(named.clone(), Box::new(e.clone())),
                ),
            },
            None => (provider.clone(), AccountError::Unknown(named.clone())),
        };
        Routed {
            adapter,
            account: Some(named),
            parked: Some(why),
        }
    }

    /// The id the provider's own table answers for (Adyen's
    /// `merchant_account`, Alipay's `app_id`), if it names one.
    pub fn own_id(&self) -> Option<&str> {
        self.own.as_deref()
    }

    /// Whose payments a report of `account` (`None`: the provider's own)
    /// may reach, line by line.
    pub fn report_owner<'a>(&'a self, account: Option<&'a str>) -> crate::reconcile::Owner<'a> {
        crate::reconcile::Owner {
            account,
            lines_name_accounts: !self.is_empty(),
            own_id: self.own_id(),
        }
    }

    /// The accounts seen enabled again since the last call.
    pub fn take_reenabled(&self) -> Vec<String> {
        std::mem::take(&mut *self.reenabled.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The enabled accounts this node can act as: their parked webhooks
    /// can be applied.
    pub fn usable(&self) -> Vec<String> {
        self.read()
            .values()
            .filter(|a| !a.disabled && a.adapter.is_ok())
            .map(|a| a.id.clone())
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The file's accounts that could not be built: refused at start.
    pub fn file_errors(&self) -> Vec<String> {
        self.all()
            .iter()
            .filter(|a| a.origin == Origin::File)
            .filter_map(|a| a.adapter.as_ref().err().map(ToString::to_string))
            .collect()
    }

    /// Whether `spec` makes a working account of this provider on this node
    /// (validated, its secrets readable): what the admin API checks before
    /// storing it. The error names the field.
    pub fn check(&self, name: &str, spec: &AccountSpec) -> Result<(), finality_core::ConfigError> {
        let Some(cfg) = &self.cfg else {
            return Err(finality_core::ConfigError::new(
                "provider",
                format!("provider `{name}` was not configured from a file and takes no accounts"),
            ));
        };
        spec.validate(cfg)?;
        build_account(name, cfg, spec).map(|_| ()).map_err(|e| {
            // The secret that failed names its setting in the message
            // (`… (webhook_secret_envs) …`): that is the field.
            let msg = e.to_string();
            let field = ["webhook_secret_envs", "app_auth_token_env"]
                .into_iter()
                .find(|f| msg.contains(&format!("({f})")))
                .unwrap_or("api_key_env");
            finality_core::ConfigError::new(field, msg)
        })
    }

    /// Take the stored accounts of this provider as read now: new and
    /// changed ones built, removed ones dropped, file ones kept unless a
    /// stored one of the same id replaces them. Returns how many changed.
    fn apply_stored(&self, name: &str, rows: &[&AccountRow]) -> usize {
        let Some(cfg) = &self.cfg else { return 0 };
        let mut changed = 0;
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        for row in rows {
            let key = (row.spec.clone(), row.disabled_at.is_some());
            if map
                .get(&row.account)
                .is_some_and(|a| a.stored.as_ref() == Some(&key))
            {
                continue;
            }
            let (spec, adapter) = match AccountSpec::from_stored(&row.account, &row.spec) {
                Ok(spec) => {
                    let adapter = build_account(name, cfg, &spec)
                        .map_err(|e| AccountError::Setup(e.to_string()));
                    (spec, adapter)
                }
                Err(e) => (
                    AccountSpec::named(&row.account),
                    Err(AccountError::Setup(format!(
                        "stored settings do not read: {e}"
                    ))),
                ),
            };
            if let Err(e) = &adapter {
                tracing::error!(provider = name, account = %row.account, error = %e, "an account could not be built on this node; its polls wait");
            }
            if row.disabled_at.is_none() && map.get(&row.account).is_some_and(|a| a.disabled) {
                self.reenabled
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(row.account.clone());
            }
            map.insert(
                row.account.clone(),
                Arc::new(Account {
                    id: row.account.clone(),
                    spec,
                    adapter,
                    disabled: row.disabled_at.is_some(),
                    origin: Origin::Stored,
                    stored: Some(key),
                }),
            );
            changed += 1;
        }
        // Stored accounts that are no longer stored (none are deleted
        // today; a database restored from an older copy).
        let before = map.len();
        map.retain(|id, a| a.origin == Origin::File || rows.iter().any(|r| &r.account == id));
        changed += before - map.len();
        if changed > 0 {
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
        changed
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Account>>> {
        self.map.read().unwrap_or_else(|p| p.into_inner())
    }
}

/// The id a provider's own table answers for (Adyen's `merchant_account`,
/// Alipay's `app_id`): a webhook or report line naming it is the
/// provider's own, not an account's.
pub fn own_id_of(cfg: &ProviderConfig) -> Option<String> {
    match &cfg.adapter {
        Adapter::Adyen { adyen } => adyen.merchant_account.clone(),
        Adapter::Alipay { alipay } => Some(alipay.app_id.clone()),
        _ => None,
    }
}

/// Where a webhook goes: the adapter that verifies it, the account whose
/// fact it is (`None`: the provider's own), and, when that account cannot
/// take it now, why it is kept parked instead of applied.
pub struct Routed {
    pub adapter: Arc<dyn Provider>,
    pub account: Option<String>,
    pub parked: Option<AccountError>,
}

/// Send the parked webhooks of every account this node can act as to
/// processing (an account was added, enabled or set up): what a parked
/// fact waits for. How many were sent. Only the accounts that have parked
/// webhooks now are touched (one read of the parked rows' index), so it
/// runs every round: a webhook parked by a request that saw its account
/// absent a moment before the account was added is sent on at the next
/// round, not left parked because the unpark of the addition ran first.
pub async fn unpark(
    providers: &crate::Providers,
    inbox: &dyn finality_store::WebhookInbox,
    now: finality_core::Timestamp,
) -> finality_store::Result<u64> {
    let mut n = 0;
    for scope in inbox.inbox_parked_scopes(1000).await? {
        let Some(account) = scope.account() else {
            continue;
        };
        let usable = providers
            .get(scope.provider())
            .is_some_and(|e| e.accounts.usable().iter().any(|a| a == account));
        if usable {
            n += inbox.inbox_unpark(&scope, now).await?;
        }
    }
    Ok(n)
}

/// Read the stored accounts and bring every provider's up to date; rows of
/// a provider this node does not configure are skipped (said once per
/// read at debug level: another node may run it).
pub async fn refresh(
    providers: &crate::Providers,
    store: &dyn finality_store::Accounts,
) -> finality_store::Result<usize> {
    let rows = store.accounts().await?;
    let mut changed = 0;
    for (name, entry) in providers {
        let mine: Vec<&AccountRow> = rows.iter().filter(|r| &r.provider == name).collect();
        changed += entry.accounts.apply_stored(name, &mine);
    }
    for r in rows.iter().filter(|r| !providers.contains_key(&r.provider)) {
        tracing::debug!(provider = %r.provider, account = %r.account, "a stored account of a provider this node does not configure");
    }
    Ok(changed)
}

/// Refresh every `every` until `shutdown`; a failed read is retried at
/// the next round (accounts already known keep working).
pub async fn keep_fresh(
    providers: Arc<crate::Providers>,
    store: Arc<dyn finality_store::Store>,
    clock: Arc<dyn finality_core::Clock>,
    every: std::time::Duration,
    shutdown: tokio_util::sync::CancellationToken,
) {
    loop {
        match refresh(&providers, &*store).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(changed = n, "accounts updated from the database");
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the stored accounts failed; keeping what is known")
            }
        }
        // An account enabled again: its polls, deferred by any node that
        // still saw it disabled (this one included, before this refresh),
        // are due now.
        for (name, entry) in providers.iter() {
            for account in entry.accounts.take_reenabled() {
                let scope = finality_core::Scope::new(name.as_str(), Some(&account));
                let now = clock.now();
                if let Err(e) = store.hurry_account(&scope, now, now).await {
                    tracing::warn!(error = %e, %scope, "bringing an enabled account's polls forward failed");
                }
            }
        }
        // Every round: whatever was parked for an account this node can
        // act as now, including what a request parked just as the account
        // was added (see `unpark`).
        match unpark(&providers, &*store, clock.now()).await {
            Ok(0) => {}
            Ok(n) => {
                metrics::counter!("finality_webhooks_unparked_total").increment(n);
                tracing::info!(
                    webhooks = n,
                    "parked webhooks of accounts now configured sent to processing"
                );
            }
            Err(e) => {
                tracing::warn!(error = %e, "sending parked webhooks to processing failed; tried again next round")
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.cancelled() => return,
        }
    }
}

/// Claim weights of every account not of weight 1, cached until an
/// account changes.
#[derive(Default)]
pub(crate) struct Weights {
    cache: RwLock<(u64, Arc<HashMap<Lane, u32>>)>,
}

impl Weights {
    pub(crate) fn of(&self, providers: &crate::Providers) -> Arc<HashMap<Lane, u32>> {
        let generation: u64 = providers.values().map(|e| e.accounts.generation()).sum();
        {
            let c = self.cache.read().unwrap_or_else(|p| p.into_inner());
            if c.0 == generation {
                return c.1.clone();
            }
        }
        let mut w = HashMap::new();
        for (name, e) in providers {
            for a in e.accounts.all() {
                if a.spec.weight != 1 {
                    w.insert((name.clone(), a.id.clone()), a.spec.weight);
                }
            }
        }
        let w = Arc::new(w);
        *self.cache.write().unwrap_or_else(|p| p.into_inner()) = (generation, w.clone());
        w
    }
}
