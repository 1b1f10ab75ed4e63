//! One account of a provider: `[[providers.NAME.accounts]]` in the file, or
//! added at run time (`finality accounts add`, `POST /v1/accounts`). An
//! account is its provider's table with a few settings changed: whose
//! credentials the calls carry, which webhook secrets verify its webhooks,
//! its own rate limit and its weight in fair claiming. What its `id` means
//! is each provider's own (docs/ACCOUNTS.md):
//!
//! - Stripe: a connected account (`acct_…`). Without `api_key_env` the
//!   platform's key makes the calls with `Stripe-Account: <id>` ("Use the
//!   Stripe-Account header … to make requests on behalf of connected
//!   accounts", Stripe API reference, Connected accounts).
//! - Adyen: a merchant account code: its notifications must name it in
//!   `merchantAccountCode`, verified with its own HMAC key
//!   (`webhook_secret_envs`: "Each secret HMAC key is linked to one
//!   webhook endpoint").
//! - Alipay: an app id: its own (`app_id`, its private key in
//!   `api_key_env`), or a merchant's app the integrator's app acts for
//!   with the `app_auth_token` the merchant granted (`app_auth_token_env`;
//!   notifications name it in `auth_app_id`).
//! - WeChat Pay: a sub-merchant (`sub_mchid`) the service provider's
//!   `mchid` acts for with its own keys (service provider mode,
//!   wechatpay-go `services/partnerpayments`); its notifications name it in
//!   the encrypted resource's `sub_mchid`.
//! - Every other adapter: a name of the operator's choosing, with its own
//!   `api_key_env` and `webhook_secret_envs`.

use crate::config::{Adapter, ProviderConfig, RateLimit};
use finality_core::ConfigError;
use serde::{Deserialize, Serialize};

/// `[[providers.NAME.accounts]]`: only names of environment variables (or
/// absolute paths of files) holding secrets, never a secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountSpec {
    /// The provider's own id for the account (see the module's list).
    pub id: String,
    /// The account's own credentials; unset: the provider's, acting for
    /// the account where the provider documents how (Stripe-Account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The secrets its webhooks are signed with; empty: the provider's
    /// (one Stripe Connect endpoint signs every connected account's events).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhook_secret_envs: Vec<String>,
    /// Its own calls per second across every node; unset: none of its own
    /// (the provider's limit is not shared with its accounts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Its share of each claim round beside the other accounts with due
    /// polls (1–1000, default 1).
    #[serde(default = "one")]
    pub weight: u32,
    /// Alipay, an integrator (ISV) acting for a merchant: the variable
    /// holding the `app_auth_token` the merchant granted, sent as that
    /// public request parameter with the integrator's own app. `id` is then
    /// the merchant's app (`auth_app_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_auth_token_env: Option<String>,
    /// Alipay: the merchant's own Alipay account (`seller_id`, `2088…`),
    /// checked on its notifications and answers. Never the provider's: a
    /// merchant an integrator acts for is another seller, and unset means
    /// not checked (its `app_id`/`auth_app_id` always is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seller_id: Option<String>,
}

fn one() -> u32 {
    1
}

/// Longest account id: ids are path segments and labels, kept short.
const MAX_ID: usize = 128;

impl AccountSpec {
    /// An account with every default, for tests and the CLI.
    pub fn named(id: &str) -> Self {
        AccountSpec {
            id: id.to_string(),
            api_key_env: None,
            webhook_secret_envs: Vec::new(),
            rate_limit: None,
            weight: 1,
            app_auth_token_env: None,
            seller_id: None,
        }
    }

    /// The settings as stored (`provider_accounts.spec`): everything but
    /// the id, which is the row's key.
    pub fn to_stored(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("id");
        }
        v
    }

    /// An account from its stored settings and its id.
    pub fn from_stored(id: &str, stored: &serde_json::Value) -> Result<Self, serde_json::Error> {
        let mut v = stored.clone();
        if let Some(o) = v.as_object_mut() {
            o.insert("id".into(), serde_json::Value::from(id));
        }
        serde_json::from_value(v)
    }

    /// Check what deserialization cannot, for the provider `cfg`; the
    /// field is relative to the account.
    pub fn validate(&self, cfg: &ProviderConfig) -> Result<(), ConfigError> {
        let id = &self.id;
        if id.is_empty() || id.len() > MAX_ID {
            return Err(ConfigError::new(
                "id",
                format!("must be 1 to {MAX_ID} characters"),
            ));
        }
        if !id
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '/' && c != '"')
        {
            return Err(ConfigError::new(
                "id",
                "must be printable ASCII without spaces, `/` or `\"`",
            ));
        }
        if let Some(var) = &self.api_key_env {
            secret_ref("api_key_env", var)?;
        }
        for var in &self.webhook_secret_envs {
            secret_ref("webhook_secret_envs", var)?;
        }
        if let Some(var) = &self.app_auth_token_env {
            secret_ref("app_auth_token_env", var)?;
            if !matches!(cfg.adapter, Adapter::Alipay { .. }) {
                return Err(ConfigError::new(
                    "app_auth_token_env",
                    "only an Alipay account takes an app_auth_token",
                ));
            }
        }
        if let Some(seller) = &self.seller_id {
            if !matches!(cfg.adapter, Adapter::Alipay { .. }) {
                return Err(ConfigError::new(
                    "seller_id",
                    "only an Alipay account takes a seller_id",
                ));
            }
            // "卖家支付宝用户号": a 16-digit id beginning 2088.
            if !(seller.len() == 16
                && seller.starts_with("2088")
                && seller.chars().all(|c| c.is_ascii_digit()))
            {
                return Err(ConfigError::new(
                    "seller_id",
                    "must be the merchant's Alipay user id: 16 digits beginning 2088",
                ));
            }
        }
        if let Some(r) = self.rate_limit {
            if !(r.per_second > 0.0 && r.per_second <= 1_000_000.0) {
                return Err(ConfigError::new("rate_limit.per_second", "must be > 0"));
            }
            if r.burst == 0 {
                return Err(ConfigError::new("rate_limit.burst", "must be at least 1"));
            }
        }
        if !(1..=1000).contains(&self.weight) {
            return Err(ConfigError::new("weight", "must be within 1..1000"));
        }
        match &cfg.adapter {
            Adapter::WeChat { .. } if !id.chars().all(|c| c.is_ascii_digit()) => {
                Err(ConfigError::new(
                    "id",
                    "a WeChat Pay account is a sub-merchant: its id is the sub_mchid WeChat Pay \
                     issued (digits)",
                ))
            }
            Adapter::WeChat { .. }
                if self.api_key_env.is_some() || !self.webhook_secret_envs.is_empty() =>
            {
                Err(ConfigError::new(
                    if self.api_key_env.is_some() {
                        "api_key_env"
                    } else {
                        "webhook_secret_envs"
                    },
                    "a WeChat Pay sub-merchant is served with the service provider's keys \
                     ([providers.NAME.wechat]): it takes no keys of its own",
                ))
            }
            Adapter::Alipay { .. }
                if self.api_key_env.is_none() == self.app_auth_token_env.is_none() =>
            {
                Err(ConfigError::new(
                    "api_key_env",
                    "an Alipay account is either an app of its own (api_key_env: its private \
                     key) or a merchant the integrator's app acts for (app_auth_token_env): \
                     give one of the two",
                ))
            }
            _ => Ok(()),
        }
    }

    /// The provider's table as this account's calls and webhooks use it.
    pub fn applied_to(&self, cfg: &ProviderConfig) -> ProviderConfig {
        let mut c = cfg.clone();
        if let Some(k) = &self.api_key_env {
            c.api_key_env = Some(k.clone());
        }
        if !self.webhook_secret_envs.is_empty() {
            c.webhook_secret_envs = self.webhook_secret_envs.clone();
        }
        c.rate_limit = self.rate_limit;
        c.accounts.clear();
        match &mut c.adapter {
            Adapter::Adyen { adyen } => adyen.merchant_account = Some(self.id.clone()),
            Adapter::WeChat { wechat } => wechat.sub_mchid = Some(self.id.clone()),
            Adapter::Alipay { alipay } => {
                match &self.api_key_env {
                    // An app of its own, with its own key.
                    Some(k) => {
                        alipay.app_id = self.id.clone();
                        alipay.private_key_env = k.clone();
                    }
                    // The integrator's app, acting for the merchant by token.
                    None => alipay.app_auth_token_env = self.app_auth_token_env.clone(),
                }
                // The account's own seller, never the provider's: another
                // merchant's trades name another seller_id.
                alipay.seller_id = self.seller_id.clone();
            }
            _ => {}
        }
        c
    }

    /// The id the platform's calls name the account by, when it has no
    /// credentials of its own (Stripe's `Stripe-Account` header).
    pub fn on_behalf_of(&self, cfg: &ProviderConfig) -> Option<&str> {
        (matches!(cfg.adapter, Adapter::Stripe { .. }) && self.api_key_env.is_none())
            .then_some(self.id.as_str())
    }
}

/// A reference to a secret: an environment variable's name or a file's
/// absolute path, never the secret itself. A value that looks like a key
/// (lower-case letters, as in `sk_live_…` and `whsec_…`, or a long hex
/// string, as an Adyen HMAC key is) is refused without echoing it.
pub fn secret_ref(field: &str, v: &str) -> Result<(), ConfigError> {
    if v.starts_with('/') && v.len() <= 4096 && !v.contains('\0') {
        return Ok(());
    }
    let name_like = !v.is_empty()
        && v.len() <= 64
        && v.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    let hex_key = v.len() >= 32 && v.chars().all(|c| c.is_ascii_hexdigit());
    if name_like && !hex_key {
        return Ok(());
    }
    Err(ConfigError::new(
        field,
        "must name an environment variable (A-Z, 0-9 and _, at most 64) or a file's absolute \
         path holding the secret, never the secret itself (the value is not repeated here)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_named_never_given() {
        assert!(secret_ref("api_key_env", "STRIPE_KEY_ACCT_A").is_ok());
        assert!(secret_ref("api_key_env", "/run/secrets/stripe").is_ok());
        for v in [
            "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
            "whsec_abc",
            "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
            "",
        ] {
            let e = secret_ref("api_key_env", v).unwrap_err().to_string();
            assert!(!v.is_empty() && !e.contains(v) || v.is_empty(), "{e}");
        }
    }

    #[test]
    fn an_account_changes_only_its_own_settings() {
        let mut cfg = ProviderConfig::sim("http://127.0.0.1:1");
        cfg.adapter = Adapter::Adyen {
            adyen: Default::default(),
        };
        cfg.webhook_secret_envs = vec!["COMPANY_HMAC".into()];
        let mut a = AccountSpec::named("ShopA");
        a.webhook_secret_envs = vec!["SHOP_A_HMAC".into()];
        a.validate(&cfg).unwrap();
        let applied = a.applied_to(&cfg);
        assert_eq!(applied.webhook_secret_envs, vec!["SHOP_A_HMAC".to_string()]);
        match applied.adapter {
            Adapter::Adyen { adyen } => {
                assert_eq!(adyen.merchant_account.as_deref(), Some("ShopA"))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(a.on_behalf_of(&cfg), None);
        let bad = AccountSpec::named("a/b");
        assert_eq!(bad.validate(&cfg).unwrap_err().field, "id");
    }

    /// A merchant an integrator acts for sells as itself: its trades name
    /// its own `seller_id`, never the integrator's.
    #[test]
    fn an_alipay_account_never_inherits_the_providers_seller() {
        let mut cfg = ProviderConfig::sim("http://127.0.0.1:1");
        cfg.adapter = Adapter::Alipay {
            alipay: crate::alipay::AlipayConfig {
                app_id: "2021000000000001".into(),
                private_key_env: "ALIPAY_KEY".into(),
                alipay_public_key_env: "ALIPAY_PUBLIC".into(),
                seller_id: Some("2088000000000001".into()),
                app_auth_token_env: None,
            },
        };
        let seller = |a: &AccountSpec| match a.applied_to(&cfg).adapter {
            Adapter::Alipay { alipay } => alipay.seller_id,
            other => panic!("{other:?}"),
        };
        let mut a = AccountSpec::named("2021000000000002");
        a.app_auth_token_env = Some("TOKEN_2".into());
        a.validate(&cfg).unwrap();
        assert_eq!(seller(&a), None);
        a.seller_id = Some("2088000000000002".into());
        a.validate(&cfg).unwrap();
        assert_eq!(seller(&a).as_deref(), Some("2088000000000002"));
        a.seller_id = Some("1234".into());
        assert_eq!(a.validate(&cfg).unwrap_err().field, "seller_id");
        let mut adyen = cfg.clone();
        adyen.adapter = Adapter::Adyen {
            adyen: Default::default(),
        };
        a.app_auth_token_env = None;
        a.seller_id = Some("2088000000000002".into());
        assert_eq!(a.validate(&adyen).unwrap_err().field, "seller_id");
    }
}
