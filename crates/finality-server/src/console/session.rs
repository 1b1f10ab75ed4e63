//! Console sign-in: a session cookie signed with the token's own secret,
//! and a per-session form token against cross-site requests.
//!
//! Nothing is stored: every node that knows a token can check its sessions
//! (no shared session table between nodes), a session ends when it expires
//! or when its token's secret is changed, and a stolen cookie is no better
//! than the token it was made from (it expires; the token does not). The
//! cookie is `HttpOnly`, `SameSite=Strict`, and `Secure` when the request
//! came over TLS (directly or through a proxy that says so).

use crate::identity::{ApiToken, Identity, Tokens};
use crate::App;
use axum::http::header::{COOKIE, LOCATION};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use finality_core::Timestamp;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

pub const COOKIE_NAME: &str = "finality_console";
/// How the session cookie starts in a `Cookie` header.
pub const COOKIE_PREFIX: &str = "finality_console=";
/// How long a sign-in lasts.
pub const SESSION_MS: i64 = 12 * 3600 * 1000;

fn mac(secret: &[u8], parts: &[&[u8]]) -> String {
    // HMAC accepts a key of any length; `new_from_slice` cannot fail for it.
    let Ok(mut m) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    for p in parts {
        m.update(p);
        m.update(b"\0");
    }
    hex::encode(m.finalize().into_bytes())
}

/// The cookie value of a session of `token` ending at `expires`.
pub fn issue(token: &ApiToken, expires: Timestamp) -> String {
    let name = hex::encode(token.name.as_bytes());
    let exp = expires.0.to_string();
    let sig = mac(
        token.secret(),
        &[b"session", name.as_bytes(), exp.as_bytes()],
    );
    format!("{name}.{exp}.{sig}")
}

/// The token a cookie value was issued for, if its signature holds and it
/// has not expired.
pub fn verify<'t>(tokens: &'t Tokens, value: &str, now: Timestamp) -> Option<&'t ApiToken> {
    let mut it = value.split('.');
    let (name_hex, exp, sig) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() {
        return None;
    }
    let name = String::from_utf8(hex::decode(name_hex).ok()?).ok()?;
    let token = tokens.by_name(&name)?;
    let want = mac(
        token.secret(),
        &[b"session", name_hex.as_bytes(), exp.as_bytes()],
    );
    if !bool::from(want.as_bytes().ct_eq(sig.as_bytes())) {
        return None;
    }
    let exp: i64 = exp.parse().ok()?;
    (exp > now.0).then_some(token)
}

/// The configured token a cookie names when its signature does not hold
/// (an expired but genuine session is not a failure).
fn forged_name(tokens: &Tokens, value: &str) -> Option<String> {
    let name_hex = value.split('.').next()?;
    let name = String::from_utf8(hex::decode(name_hex).ok()?).ok()?;
    tokens.by_name(&name)?;
    // At the earliest time there is, only the signature can fail.
    let genuine = verify(tokens, value, Timestamp(i64::MIN)).is_some();
    (!genuine).then_some(name)
}

/// The form token of a session: every console form carries it, and a POST
/// without the right one is refused (a page on another site cannot read it).
pub fn csrf_token(token: &ApiToken, cookie: &str) -> String {
    mac(token.secret(), &[b"csrf", cookie.as_bytes()])[..32].to_string()
}

/// `Set-Cookie` for a new session (or, with `value` empty, for signing out).
pub fn set_cookie(value: &str, secure: bool, max_age_s: i64) -> String {
    format!(
        "{COOKIE_NAME}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{}",
        if secure { "; Secure" } else { "" }
    )
}

/// Whether the browser reached us over TLS, as the reverse proxy in front
/// says (`X-Forwarded-Proto: https`): finality itself listens on plain
/// HTTP, so a proxy is where TLS ends.
pub fn over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

fn cookie_value(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE_NAME)
        .map(|(_, v)| v.to_string())
}

/// A signed-in console user.
#[derive(Debug, Clone)]
pub struct Session {
    pub identity: Identity,
    /// The form token every form of this session carries.
    pub csrf: String,
    pub remote: Option<String>,
}

impl Session {
    /// Refuse a form whose token is not this session's (403).
    pub fn check_csrf(&self, given: Option<&str>) -> Result<(), Box<Response>> {
        let ok = given.is_some_and(|g| bool::from(g.as_bytes().ct_eq(self.csrf.as_bytes())));
        if ok {
            Ok(())
        } else {
            Err(Box::new(
                (
                    StatusCode::FORBIDDEN,
                    "This form is not from a console page of this session (missing or wrong \
                     form token). Reload the page and try again.",
                )
                    .into_response(),
            ))
        }
    }

    /// The caller, as the API handlers know it.
    pub(crate) fn caller(&self) -> crate::auth::Caller {
        crate::auth::Caller {
            identity: self.identity.clone(),
            remote: self.remote.clone(),
        }
    }
}

impl axum::extract::FromRequestParts<App> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Response> {
        let now = app.clock.now();
        let cookie = cookie_value(&parts.headers);
        let found = cookie
            .as_deref()
            .and_then(|v| verify(&app.tokens, v, now).map(|t| (t, v.to_string())));
        let Some((token, value)) = found else {
            // A cookie naming a configured token whose signature fails is
            // a forgery (or a changed secret): counted against its source
            // and that name, as a failed sign-in.
            if let Some(name) = cookie.as_deref().and_then(|v| forged_name(&app.tokens, v)) {
                metrics::counter!("finality_auth_failures_total", "surface" => "console")
                    .increment(1);
                let source = crate::auth::remote_addr(parts);
                let refused = crate::auth::refuse(
                    "console",
                    app,
                    source.as_deref(),
                    Some(&name),
                    now.0,
                    || tracing::warn!(remote = ?source, token = %name, "console session cookie with a bad signature"),
                );
                if let crate::ApiError::TooMany { .. } = refused {
                    return Err(refused.into_response());
                }
            }
            // Not signed in (or expired): to the sign-in page, then back.
            let next = parts
                .uri
                .path_and_query()
                .map(|p| p.as_str())
                .unwrap_or("/console");
            let to = format!(
                "/console/login?next={}",
                form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
            );
            return Err((StatusCode::SEE_OTHER, [(LOCATION, to)]).into_response());
        };
        Ok(Session {
            identity: app.tokens.identity(token),
            csrf: csrf_token(token, &value),
            remote: crate::auth::remote_addr(parts),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Role;

    fn tokens() -> Tokens {
        Tokens::named(vec![
            ApiToken::new("alice", Role::Reviewer, "alice-secret-0123456789"),
            ApiToken::new("bob", Role::Reviewer, "bob-secret-0123456789ab"),
        ])
        .unwrap()
    }

    #[test]
    fn a_session_is_its_tokens_until_it_expires() {
        let t = tokens();
        let alice = t.by_name("alice").unwrap();
        let c = issue(alice, Timestamp(2_000));
        assert_eq!(verify(&t, &c, Timestamp(1_000)).unwrap().name, "alice");
        assert!(verify(&t, &c, Timestamp(2_000)).is_none(), "expired");
    }

    #[test]
    fn forged_or_altered_sessions_are_refused() {
        let t = tokens();
        let alice = t.by_name("alice").unwrap();
        let c = issue(alice, Timestamp(2_000));
        // Longer life, same signature.
        let longer = c.replace(".2000.", ".9999.");
        assert!(verify(&t, &longer, Timestamp(1_000)).is_none());
        // Bob's name on Alice's signature.
        let parts: Vec<&str> = c.split('.').collect();
        let as_bob = format!("{}.{}.{}", hex::encode("bob"), parts[1], parts[2]);
        assert!(verify(&t, &as_bob, Timestamp(1_000)).is_none());
        assert!(verify(&t, "garbage", Timestamp(1_000)).is_none());
        assert!(verify(&t, "", Timestamp(1_000)).is_none());
        // The same cookie after the secret changed.
        let rotated = Tokens::named(vec![ApiToken::new(
            "alice",
            Role::Reviewer,
            "alice-new-secret-0123456789",
        )])
        .unwrap();
        assert!(verify(&rotated, &c, Timestamp(1_000)).is_none());
    }

    #[test]
    fn form_tokens_differ_per_session() {
        let t = tokens();
        let alice = t.by_name("alice").unwrap();
        let a = csrf_token(alice, &issue(alice, Timestamp(2_000)));
        let b = csrf_token(alice, &issue(alice, Timestamp(3_000)));
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
    }

    #[test]
    fn cookie_flags() {
        let c = set_cookie("v", false, 60);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && !c.contains("Secure"));
        assert!(set_cookie("v", true, 60).ends_with("; Secure"));
    }
}
