//! Several accounts behind one simulated provider, in each provider's own
//! wire format: Stripe Connect's connected accounts (the platform's key
//! with `Stripe-Account: acct_…`; an object of another account is not
//! found, an account whose access was revoked answers 401; its events carry
//! a top-level `account`), and Adyen's merchant accounts (each
//! notification names its `merchantAccountCode` and is signed with that
//! merchant account's own HMAC key), and Alipay's merchants an integrator
//! acts for (each trade answers only calls carrying the `app_auth_token`
//! its merchant granted), and WeChat Pay's sub-merchants a service
//! provider acts for (`sub_mchid`, server/wechat.rs).

use crate::model::{SimAccounts, Simulator};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

impl Simulator {
    fn lock_accounts(&self) -> std::sync::MutexGuard<'_, SimAccounts> {
        self.accounts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Payment `id` belongs to `account` (created by the platform for it).
    pub fn assign_account(&self, id: &str, account: &str) {
        self.lock_accounts()
            .of_payment
            .insert(id.to_string(), account.to_string());
    }

    /// Standard Webhooks: `account`'s payments' webhooks go to the
    /// account's own URL, `{target}/{account}`, signed with `key` (`None`:
    /// the target's key), as a merchant whose endpoint is its own.
    pub fn set_standard_account(&self, account: &str, key: Option<Vec<u8>>) {
        self.lock_accounts()
            .standard_accounts
            .insert(account.to_string(), key);
    }

    /// Where and with which key `id`'s Standard Webhooks go, when its
    /// account has an endpoint of its own.
    pub(crate) fn standard_route(&self, id: &str) -> Option<(String, Option<Vec<u8>>)> {
        let a = self.lock_accounts();
        let account = a.of_payment.get(id)?;
        let key = a.standard_accounts.get(account)?.clone();
        Some((account.clone(), key))
    }

    pub fn account_of(&self, id: &str) -> Option<String> {
        self.lock_accounts().of_payment.get(id).cloned()
    }

    /// The platform's access to `account` is revoked: every call made for
    /// it answers 401 from now on.
    pub fn revoke_account(&self, account: &str) {
        self.lock_accounts().revoked.insert(account.to_string());
    }

    /// Whether `account`'s access was revoked ([`Self::revoke_account`]).
    pub(crate) fn is_revoked(&self, account: &str) -> bool {
        self.lock_accounts().revoked.contains(account)
    }

    /// Sign `account`'s Stripe events with `secret`.
    pub fn set_stripe_account_secret(&self, account: &str, secret: &str) {
        self.lock_accounts()
            .stripe_secrets
            .insert(account.to_string(), secret.to_string());
    }

    /// Sign `account`'s Adyen notifications with `key` (decoded bytes).
    pub fn set_adyen_account_key(&self, account: &str, key: Vec<u8>) {
        self.lock_accounts()
            .adyen_keys
            .insert(account.to_string(), key);
    }

    /// The merchant `account` (an Alipay `auth_app_id`) granted the
    /// integrator `token`: its trades answer only calls that carry it.
    pub fn set_alipay_app_auth_token(&self, account: &str, token: &str) {
        self.lock_accounts()
            .alipay_tokens
            .insert(account.to_string(), token.to_string());
    }

    /// The merchant that granted the integrator `token`.
    pub(crate) fn alipay_account_by_token(&self, token: &str) -> Option<String> {
        self.lock_accounts()
            .alipay_tokens
            .iter()
            .find(|(_, t)| t.as_str() == token)
            .map(|(a, _)| a.clone())
    }

    /// Alipay's answer to a call about trade `id` whose merchant granted a
    /// token the call does not carry: the public error for an invalid
    /// `app_auth_token` (code 20001, `aop.invalid-app-auth-token`).
    pub(crate) fn alipay_token_gate(
        &self,
        id: &str,
        params: &std::collections::BTreeMap<String, String>,
    ) -> Option<serde_json::Value> {
        let a = self.lock_accounts();
        let want = a
            .of_payment
            .get(id)
            .and_then(|acct| a.alipay_tokens.get(acct))?;
        (params.get("app_auth_token") != Some(want)).then(|| {
            json!({"code": "20001", "msg": "Insufficient Token Permissions",
                   "sub_code": "aop.invalid-app-auth-token", "sub_msg": "无效的应用授权令牌"})
        })
    }

    pub(crate) fn stripe_secret_for(&self, account: &str) -> Option<String> {
        self.lock_accounts().stripe_secrets.get(account).cloned()
    }

    pub(crate) fn adyen_key_for(&self, account: &str) -> Option<Vec<u8>> {
        self.lock_accounts().adyen_keys.get(account).cloned()
    }

    /// Stripe's answer for a request made for the account its
    /// `Stripe-Account` header names, about object `id`: `Some` answer when
    /// Stripe would refuse it (revoked access: 401 as Stripe words it; an object
    /// of another account, or of the platform asked for as an account:
    /// 404 `resource_missing`).
    pub(crate) fn stripe_account_gate(&self, id: &str, headers: &HeaderMap) -> Option<Response> {
        let asked = headers
            .get("stripe-account")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let a = self.lock_accounts();
        if let Some(acct) = &asked {
            if a.revoked.contains(acct) {
                return Some(
                    (
                        StatusCode::UNAUTHORIZED,
                        Json(json!({"error": {"type": "invalid_request_error",
                        "code": "account_invalid",
                        "message": format!("The provided key does not have access to account \
                            '{acct}' (or that account does not exist). Application access may \
                            have been revoked.")}})),
                    )
                        .into_response(),
                );
            }
        }
        if a.of_payment.get(id) != asked.as_ref() {
            return Some(
                (
                StatusCode::NOT_FOUND,
                Json(
                    json!({"error": {"code": "resource_missing", "type": "invalid_request_error",
                                      "message": format!("No such payment_intent: '{id}'")}}),
                ),
            )
                .into_response(),
            );
        }
        None
    }
}
