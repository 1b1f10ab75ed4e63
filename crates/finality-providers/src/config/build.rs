//! An adapter built from its table, reading its secrets from the
//! environment once; a secret too short to be safe refused by name.

use crate::config::{Adapter, ProviderConfig};
use crate::http::Timeouts;
use crate::sim::SimAdapter;
use crate::stripe::StripeAdapter;
use crate::webhook::standard::StandardWebhooks;
use crate::webhook::stripe::StripeSignature;
use crate::{Provider, ProviderError};
use finality_core::secret::Secret;
use std::sync::Arc;

/// `var` (named by the provider's setting `what`), read by the one secret
/// reader, the error naming the provider.
pub(crate) fn secret(provider: &str, var: &str, what: &str) -> Result<Secret, ProviderError> {
    Secret::from_env(var, what).map_err(|e| ProviderError::Permanent {
        message: format!("provider `{provider}`: {e}"),
    })
}

/// A webhook secret: an empty one is refused saying what it would mean.
pub(crate) fn webhook_secret(provider: &str, var: &str) -> Result<Secret, ProviderError> {
    Secret::from_env(var, "webhook_secret_envs").map_err(|e| ProviderError::Permanent {
        message: match e {
            finality_core::secret::SecretError::Empty { .. } => {
                format!("provider `{provider}`: {e}: webhooks would be forgeable")
            }
            _ => format!("provider `{provider}`: {e}"),
        },
    })
}

/// Fewest bytes a webhook secret may have. An empty secret makes every
/// webhook forgeable (an HMAC under an empty key is public knowledge); the
/// providers' own secrets are far longer (Stripe `whsec_` 32+ characters,
/// Adyen 32-byte keys, Standard Webhooks 24–64 bytes), so anything short is
/// a truncated paste, refused at start.
pub const MIN_SECRET_BYTES: usize = 16;

/// Refuse a too-short webhook secret, naming its variable. The length that
/// counts is the key's, as the scheme decodes it: an Adyen key is hex, a
/// Standard Webhooks secret `whsec_` + base64.
pub(crate) fn check_secret(
    name: &str,
    cfg: &ProviderConfig,
    secret: &Secret,
) -> Result<(), ProviderError> {
    let trimmed = secret.expose().trim();
    let standard = match &cfg.adapter {
        Adapter::Sim => true,
        Adapter::Generic { generic } => {
            generic.webhook.as_ref().map(|w| w.scheme)
                == Some(crate::generic::WebhookScheme::Standard)
        }
        _ => false,
    };
    let key = if matches!(cfg.adapter, Adapter::Adyen { .. }) {
        crate::adyen::decode_key(trimmed)
    } else if standard {
        crate::webhook::standard::decode_secret(trimmed)
    } else {
        Ok(trimmed.as_bytes().to_vec())
    };
    let why = match key {
        Err(e) => e.to_string(),
        Ok(k) if k.len() < MIN_SECRET_BYTES => format!(
            "holds a {}-byte key; a webhook secret needs at least {MIN_SECRET_BYTES} (truncated?)",
            k.len()
        ),
        Ok(_) => return Ok(()),
    };
    Err(ProviderError::Permanent {
        message: format!(
            "provider `{name}`: environment variable {} (webhook_secret_envs) {why}: webhooks \
             would be forgeable",
            secret.var()
        ),
    })
}

/// Build the adapter, reading its secrets from the environment (once: the
/// adapter keeps what it derives from them).
pub fn build(name: &str, cfg: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    let adapter = build_adapter(name, cfg, None)?;
    if cfg.catch_up.is_some() && !adapter.lists_events() {
        return Err(ProviderError::Permanent {
            message: format!(
                "provider `{name}`: catch_up is set but this adapter has no event list \
                 (Stripe has one; PayPal with webhook_secret_envs naming its webhook id); \
                 remove catch_up"
            ),
        });
    }
    Ok(adapter)
}

/// The adapter one account of provider `name` is polled and verified
/// with: the provider's table with the account's settings applied
/// ([`AccountSpec::applied_to`]), its secrets read now.
pub fn build_account(
    name: &str,
    cfg: &ProviderConfig,
    account: &crate::config::AccountSpec,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let applied = account.applied_to(cfg);
    let label = format!("{name}` account `{}", account.id);
    build_adapter(&label, &applied, account.on_behalf_of(cfg))
}

/// A provider that cannot be built: paused as a permanent error, naming it.
pub(crate) fn permanent(name: &str, e: impl std::fmt::Display) -> ProviderError {
    ProviderError::Permanent {
        message: format!("provider `{name}`: {e}"),
    }
}

pub(crate) fn build_adapter(
    name: &str,
    cfg: &ProviderConfig,
    on_behalf_of: Option<&str>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let api_key = cfg
        .api_key_env
        .as_deref()
        .map(|var| secret(name, var, "api_key_env"))
        .transpose()?;
    let timeouts = Timeouts {
        connect: cfg.connect_timeout,
        total: cfg.timeout,
    };
    let mut secrets = Vec::new();
    for var in &cfg.webhook_secret_envs {
        // PayPal's entry is the webhook's id at PayPal, checked by PayPal.
        let secret = if matches!(cfg.adapter, Adapter::PayPal { .. }) {
            secret(name, var, "the PayPal webhook id")?
        } else {
            let secret = webhook_secret(name, var)?;
            check_secret(name, cfg, &secret)?;
            secret
        };
        secrets.push(secret.expose().to_string());
    }
    let env = |var: &str, what: &str| secret(name, var, what);
    match &cfg.adapter {
        Adapter::Sim => {
            let mut a = SimAdapter::new(
                &cfg.base_url,
                api_key.map(|k| k.expose().to_string()),
                timeouts,
            )?;
            if !secrets.is_empty() {
                let v = StandardWebhooks::new(&secrets, cfg.webhook_tolerance)
                    .map_err(|e| permanent(name, e))?;
                a = a.with_webhooks(v);
            }
            Ok(Arc::new(a))
        }
        Adapter::Generic { generic } => Ok(Arc::new(
            crate::generic::GenericAdapter::new(
                &cfg.base_url,
                (**generic).clone(),
                timeouts,
                secrets,
                cfg.webhook_tolerance,
            )
            .map_err(|e| permanent(name, e))?,
        )),
        Adapter::Alipay { alipay: a } => {
            let mut adapter = crate::alipay::AlipayAdapter::new(
                &cfg.base_url,
                a,
                env(&a.private_key_env, "alipay.private_key_env")?.expose(),
                env(&a.alipay_public_key_env, "alipay.alipay_public_key_env")?.expose(),
                timeouts,
            )
            .map_err(|e| permanent(name, e))?;
            if let Some(var) = &a.app_auth_token_env {
                adapter = adapter.with_app_auth_token(env(var, "app_auth_token_env")?.expose());
            }
            Ok(Arc::new(adapter))
        }
        Adapter::WeChat { wechat: w } => {
            if !w.platform_keys.is_empty() && w.platform_serial.is_none() {
                // Otherwise the first key would answer for every serial,
                // and a serial no key is named for would not be refused.
                return Err(permanent(
                    name,
                    "wechat.platform_keys needs wechat.platform_serial (the serial of \
                     platform_public_key_env's key)",
                ));
            }
            let mut a = crate::wechat::WeChatAdapter::new(
                &cfg.base_url,
                w,
                env(&w.private_key_env, "wechat.private_key_env")?.expose(),
                env(&w.platform_public_key_env, "wechat.platform_public_key_env")?.expose(),
                env(&w.api_v3_key_env, "wechat.api_v3_key_env")?.expose(),
                timeouts,
                cfg.webhook_tolerance,
            )
            .map_err(|e| permanent(name, e))?;
            for (serial, var) in &w.platform_keys {
                a = a
                    .with_platform_key(serial, env(var, "wechat.platform_keys")?.expose())
                    .map_err(|e| permanent(name, e))?;
            }
            Ok(Arc::new(a))
        }
        Adapter::PayPal { paypal } => {
            let credentials = api_key.ok_or_else(|| {
                permanent(
                    name,
                    "the PayPal adapter needs api_key_env (`client_id:secret`)",
                )
            })?;
            // PayPal verifies its own webhooks: what is configured is the
            // webhook's id there, not a secret.
            let webhook_id = secrets.into_iter().next();
            let mut a = crate::paypal::PayPalAdapter::new(
                &cfg.base_url,
                credentials.expose(),
                webhook_id,
                timeouts,
            )?
            .with_config(paypal.clone())
            .with_tolerance(cfg.webhook_tolerance);
            if let Some(sftp) = cfg.settlement.as_ref().and_then(|s| s.sftp.as_ref()) {
                let password = sftp
                    .password_env
                    .as_deref()
                    .map(|v| env(v, "settlement.sftp.password_env"))
                    .transpose()?;
                let key = sftp
                    .private_key_env
                    .as_deref()
                    .map(|v| env(v, "settlement.sftp.private_key_env"))
                    .transpose()?;
                let access = crate::settlement::sftp::SftpAccess::new(
                    sftp,
                    password,
                    key,
                    cfg.connect_timeout,
                )
                .map_err(|e| permanent(name, format!("settlement.{e}")))?;
                a = a.with_sftp(access);
            }
            Ok(Arc::new(a))
        }
        Adapter::Bakong => {
            let token = api_key.ok_or_else(|| {
                permanent(
                    name,
                    "the Bakong adapter needs api_key_env (the bearer token)",
                )
            })?;
            Ok(Arc::new(crate::bakong::BakongAdapter::new(
                &cfg.base_url,
                token.expose().to_string(),
                timeouts,
            )?))
        }
        Adapter::Adyen { adyen } => {
            let mut a = crate::adyen::AdyenAdapter::new(&secrets)
                .map_err(|e| permanent(name, e))?
                .with_config(adyen);
            if let Some(s) = &cfg.settlement {
                use crate::adyen::reports::{ReportAccess, ReportAuth};
                let auth = match (&s.user, &s.password_env, &s.api_key_env) {
                    (Some(user), Some(var), None) => ReportAuth::Basic {
                        user: user.clone(),
                        password: env(var, "settlement.password_env")?,
                    },
                    (None, None, Some(var)) => {
                        ReportAuth::ApiKey(env(var, "settlement.api_key_env")?)
                    }
                    _ => {
                        return Err(permanent(
                            name,
                            "settlement: Adyen reports are downloaded as the report user: set \
                             `user` and `password_env`, or `api_key_env` (its API key), not both",
                        ))
                    }
                };
                a = a.with_reports(ReportAccess::new(&cfg.base_url, auth, timeouts)?);
            }
            Ok(Arc::new(a))
        }
        Adapter::Stripe { merchant_ref_key } => {
            let key = api_key.ok_or_else(|| {
                permanent(
                    name,
                    "the Stripe adapter needs api_key_env (the secret key)",
                )
            })?;
            let mut a = StripeAdapter::new(&cfg.base_url, key.expose().to_string(), timeouts)?;
            if let Some(k) = merchant_ref_key {
                a = a.with_merchant_ref_key(k);
            }
            if let Some(account) = on_behalf_of {
                a = a.on_behalf_of(account);
            }
            a = a.with_mode(cfg.mode.map(|m| m.is_live()));
            if !secrets.is_empty() {
                let v = StripeSignature::new(secrets, cfg.webhook_tolerance)
                    .map_err(|e| permanent(name, e))?;
                a = a.with_webhooks(v);
            }
            Ok(Arc::new(a))
        }
    }
}
