//! `/v1/accounts`: a provider's accounts (Stripe connected accounts, Adyen
//! merchant accounts, Alipay apps, …), listed as this node sees them, added
//! or changed and disabled at run time (admin; audited). Only the names of
//! the environment variables (or the paths of the files) holding an
//! account's secrets are stored; every node reads the stored accounts
//! within seconds (`finality_engine::accounts::keep_fresh`).

use crate::auth::Caller;
use crate::destinations::audit;
use crate::identity::Permission;
use crate::openapi::ErrorBody;
use crate::{ApiError, App, AppState};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use finality_engine::accounts::{Account, Origin};
use finality_providers::config::{AccountSpec, RateLimit};
use finality_store::AccountPut;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new()
        .routes(routes!(list, add))
        .routes(routes!(disable))
}

/// `rate_limit = { per_second, burst }`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateLimitIo {
    per_second: f64,
    #[serde(default = "one")]
    burst: u32,
}

fn one() -> u32 {
    1
}

/// One account, as this node uses it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AccountOut {
    provider: String,
    /// The provider's id for it (`acct_…`, a merchant account code, an app id).
    id: String,
    /// `file` (finality.toml) or `stored` (added at run time).
    origin: String,
    disabled: bool,
    /// Whether this node could set it up (its secrets readable); if not, `error` says why.
    ready: bool,
    error: Option<String>,
    /// Names of the environment variables (or files) holding its secrets.
    api_key_env: Option<String>,
    webhook_secret_envs: Vec<String>,
    rate_limit: Option<RateLimitIo>,
    weight: u32,
    /// Alipay: the variable (or file) holding the merchant's app_auth_token.
    app_auth_token_env: Option<String>,
    /// Alipay: the merchant's own seller_id, checked on its trades.
    seller_id: Option<String>,
    /// While its calls are paused (a 401, a rate limit): until when and why.
    paused_until: Option<String>,
    paused_reason: Option<String>,
}

impl AccountOut {
    fn of(app: &AppState, provider: &str, a: &Account) -> Self {
        let scope = finality_engine::accounts::scope(provider, Some(&a.id));
        let pause = app.health.paused(&scope, app.clock.now());
        AccountOut {
            provider: provider.to_string(),
            id: a.id.clone(),
            origin: match a.origin {
                Origin::File => "file",
                Origin::Stored => "stored",
            }
            .into(),
            disabled: a.disabled,
            ready: a.adapter.is_ok(),
            error: a.adapter.as_ref().err().map(ToString::to_string),
            api_key_env: a.spec.api_key_env.clone(),
            webhook_secret_envs: a.spec.webhook_secret_envs.clone(),
            rate_limit: a.spec.rate_limit.map(|r| RateLimitIo {
                per_second: r.per_second,
                burst: r.burst,
            }),
            weight: a.spec.weight,
            app_auth_token_env: a.spec.app_auth_token_env.clone(),
            seller_id: a.spec.seller_id.clone(),
            paused_until: pause.as_ref().map(|p| p.until.to_rfc3339()),
            paused_reason: pause.map(|p| p.reason),
        }
    }
}

/// Every provider's accounts on this node.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AccountsOut {
    accounts: Vec<AccountOut>,
}

/// Every account of every provider, by provider then id.
#[utoipa::path(get, path = "/accounts", operation_id = "list_accounts", tag = "accounts",
    responses(
        (status = 200, description = "The accounts", body = AccountsOut),
        (status = 401, description = "No valid token", body = ErrorBody),
    ))]
async fn list(State(app): State<App>, caller: Caller) -> Result<Json<AccountsOut>, ApiError> {
    caller.identity.require(Permission::Read)?;
    Ok(Json(AccountsOut {
        accounts: all(&app),
    }))
}

pub(crate) fn all(app: &AppState) -> Vec<AccountOut> {
    let mut names: Vec<&String> = app.providers.keys().collect();
    names.sort();
    names
        .into_iter()
        .flat_map(|name| {
            app.providers[name]
                .accounts
                .all()
                .into_iter()
                .map(|a| AccountOut::of(app, name, &a))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// An account to add, or the new settings of one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AccountIn {
    /// A configured provider's name.
    provider: String,
    /// The provider's id for the account.
    id: String,
    /// The environment variable (or absolute file path) holding its own API
    /// credentials; absent: the provider's, acting for the account where
    /// the provider documents how (Stripe-Account).
    api_key_env: Option<String>,
    /// Variables (or files) holding its webhook secrets; absent: the provider's.
    #[serde(default)]
    webhook_secret_envs: Vec<String>,
    rate_limit: Option<RateLimitIo>,
    /// Its share of each claim round beside other accounts (1–1000, default 1).
    weight: Option<u32>,
    /// Alipay, an integrator acting for a merchant: the variable (or file)
    /// holding the merchant's `app_auth_token`.
    app_auth_token_env: Option<String>,
    /// Alipay: the merchant's own Alipay user id (`2088…`), checked on its
    /// trades; absent: not checked (never the provider's).
    seller_id: Option<String>,
}

/// Add an account, or change one (enabling it again), checked on this node
/// first: its secrets must be readable here (admin; audited).
#[utoipa::path(post, path = "/accounts", operation_id = "add_account", tag = "accounts",
    request_body = AccountIn,
    responses(
        (status = 201, description = "Added", body = AccountOut),
        (status = 200, description = "Changed", body = AccountOut),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "Only an admin may", body = ErrorBody),
        (status = 422, description = "A field is wrong (named), or a secret it names is not readable on this node", body = ErrorBody),
    ))]
async fn add(
    State(app): State<App>,
    caller: Caller,
    b: Result<Json<AccountIn>, JsonRejection>,
) -> Result<(StatusCode, Json<AccountOut>), ApiError> {
    caller.identity.require(Permission::ManageAccounts)?;
    let b = b.map(|Json(v)| v).map_err(|e| match e {
        JsonRejection::JsonDataError(e) => ApiError::invalid("body", e.body_text()),
        other => ApiError::Malformed(other.body_text()),
    })?;
    let spec = AccountSpec {
        id: b.id.trim().to_string(),
        api_key_env: b.api_key_env,
        webhook_secret_envs: b.webhook_secret_envs,
        rate_limit: b.rate_limit.map(|r| RateLimit {
            per_second: r.per_second,
            burst: r.burst,
        }),
        weight: b.weight.unwrap_or(1),
        app_auth_token_env: b.app_auth_token_env,
        seller_id: b.seller_id,
    };
    let (put, account) = add_as(&app, &caller, &b.provider, &spec).await?;
    let status = match put {
        AccountPut::Created => StatusCode::CREATED,
        AccountPut::Updated => StatusCode::OK,
    };
    Ok((status, Json(AccountOut::of(&app, &b.provider, &account))))
}

/// Add or change `spec` as `caller`, audited; this node uses it at once.
pub(crate) async fn add_as(
    app: &AppState,
    caller: &Caller,
    provider: &str,
    spec: &AccountSpec,
) -> Result<(AccountPut, std::sync::Arc<Account>), ApiError> {
    caller.identity.require(Permission::ManageAccounts)?;
    let Some(entry) = app.providers.get(provider) else {
        let mut known: Vec<&str> = app.providers.keys().map(String::as_str).collect();
        known.sort_unstable();
        return Err(ApiError::invalid(
            "provider",
            format!(
                "unknown provider `{provider}` (configured: {})",
                known.join(", ")
            ),
        ));
    };
    let asked = json!({"provider": provider, "account": spec.id});
    if let Err(e) = entry.accounts.check(provider, spec) {
        audit(app, caller, "account_add", asked, format!("refused: {e}")).await?;
        return Err(ApiError::invalid(e.field, e.message));
    }
    let now = app.clock.now();
    // Enabled again: its payments, deferred while it was disabled, are
    // polled now, not after the pause.
    let was_disabled = entry.accounts.get(&spec.id).is_some_and(|a| a.disabled);
    // What it was and what it becomes, in the audit record.
    let stored = spec.to_stored();
    let asked = finality_store::accounts::change_detail(
        &*app.store,
        provider,
        &spec.id,
        finality_store::accounts::audit_state(&stored, false),
    )
    .await?;
    let put = app
        .store
        .account_put(provider, &spec.id, &stored, &caller.identity.name, now)
        .await?;
    let (action, outcome) = match put {
        AccountPut::Created => ("account_add", "added"),
        AccountPut::Updated => ("account_update", "changed (and enabled)"),
    };
    audit(app, caller, action, asked, outcome.into()).await?;
    finality_engine::accounts::refresh(&app.providers, &*app.store).await?;
    // Its webhooks that came before it are applied now, not at the next
    // refresh round.
    let scope = finality_core::Scope::new(provider, Some(&spec.id));
    app.store.inbox_unpark(&scope, app.clock.now()).await?;
    if was_disabled {
        app.store.hurry_account(&scope, now, now).await?;
    }
    let account = entry
        .accounts
        .get(&spec.id)
        .ok_or_else(|| ApiError::Internal("the account stored was not read back".into()))?;
    Ok((put, account))
}

/// Disable an account: its payments wait (nothing is polled as it) and its
/// webhooks are refused, until it is added again (admin; audited).
#[utoipa::path(post, path = "/accounts/{provider}/{id}/disable", operation_id = "disable_account", tag = "accounts",
    params(
        ("provider" = String, Path, description = "The provider's name"),
        ("id" = String, Path, description = "The account's id"),
    ),
    responses(
        (status = 200, description = "Disabled", body = AccountOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "Only an admin may", body = ErrorBody),
        (status = 404, description = "No such provider or account", body = ErrorBody),
    ))]
async fn disable(
    State(app): State<App>,
    caller: Caller,
    Path((provider, id)): Path<(String, String)>,
) -> Result<Json<AccountOut>, ApiError> {
    let a = disable_as(&app, &caller, &provider, &id).await?;
    Ok(Json(AccountOut::of(&app, &provider, &a)))
}

/// Disable as `caller`, audited. A file's account is stored disabled (the
/// file is not written): adding it again enables it.
pub(crate) async fn disable_as(
    app: &AppState,
    caller: &Caller,
    provider: &str,
    id: &str,
) -> Result<std::sync::Arc<Account>, ApiError> {
    caller.identity.require(Permission::ManageAccounts)?;
    let asked = json!({"provider": provider, "account": id});
    let Some(known) = app.providers.get(provider).and_then(|e| e.accounts.get(id)) else {
        audit(
            app,
            caller,
            "account_disable",
            asked,
            "refused: no such account".into(),
        )
        .await?;
        return Err(ApiError::NotFound(format!(
            "no account `{id}` of provider `{provider}`"
        )));
    };
    let now = app.clock.now();
    let by = caller.identity.name.to_string();
    if !app.store.account_disable(provider, id, &by, now).await? {
        let stored = known.spec.to_stored();
        app.store
            .account_put(provider, id, &stored, &by, now)
            .await?;
        app.store.account_disable(provider, id, &by, now).await?;
    }
    let mut asked = asked;
    let spec = known.spec.to_stored();
    asked["before"] = finality_store::accounts::audit_state(&spec, known.disabled);
    asked["after"] = finality_store::accounts::audit_state(&spec, true);
    audit(app, caller, "account_disable", asked, "disabled".into()).await?;
    finality_engine::accounts::refresh(&app.providers, &*app.store).await?;
    app.providers[provider]
        .accounts
        .get(id)
        .ok_or_else(|| ApiError::Internal("the account disabled was not read back".into()))
}
