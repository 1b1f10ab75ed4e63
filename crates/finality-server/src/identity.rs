//! Who is calling: named API tokens with a role, so that a manual action is
//! recorded under the name of the token that made it, never a name the
//! caller typed, and a service that only registers payments cannot settle
//! them.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A backend that registers payments and reads them.
    Service,
    /// A person working the review queue: read, resolve, poll now.
    Reviewer,
    /// Everything.
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Service => "service",
            Role::Reviewer => "reviewer",
            Role::Admin => "admin",
        }
    }

    pub fn allows(self, p: Permission) -> bool {
        matches!(
            (self, p),
            (Role::Admin, _)
                | (_, Permission::Read)
                | (Role::Service, Permission::Register)
                | (
                    Role::Reviewer,
                    Permission::Resolve | Permission::PollNow | Permission::Audit
                )
        )
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is none of [`Role`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role `{0}` (one of: service, reviewer, admin)")]
pub struct UnknownRole(pub String);

impl std::str::FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, UnknownRole> {
        match s {
            "service" => Ok(Role::Service),
            "reviewer" => Ok(Role::Reviewer),
            "admin" => Ok(Role::Admin),
            other => Err(UnknownRole(other.to_string())),
        }
    }
}

/// What a request asks to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    Read,
    Register,
    Resolve,
    PollNow,
    /// Read the audit trail.
    Audit,
    /// Rewind, redeliver to, pause or resume an event destination.
    ManageEvents,
    /// Add, change or disable a provider's account.
    ManageAccounts,
}

impl Permission {
    /// The action, as an error message names it.
    pub fn doing(self) -> &'static str {
        match self {
            Permission::Read => "reading",
            Permission::Register => "registering a payment",
            Permission::Resolve => "resolving a payment",
            Permission::PollNow => "asking for a poll now",
            Permission::Audit => "reading the audit trail",
            Permission::ManageEvents => {
                "rewinding, redelivering to, pausing or resuming an event destination"
            }
            Permission::ManageAccounts => "adding, changing or disabling a provider's account",
        }
    }

    /// The roles that may do it, for error messages.
    pub fn roles(self) -> &'static str {
        match self {
            Permission::Read => "any role",
            Permission::Register => "service or admin",
            Permission::Resolve | Permission::PollNow | Permission::Audit => "reviewer or admin",
            Permission::ManageEvents | Permission::ManageAccounts => "admin",
        }
    }
}

/// One configured token. Its secret never leaves this type: `Debug` masks it.
#[derive(Clone)]
pub struct ApiToken {
    pub name: String,
    pub role: Role,
    secret: Vec<u8>,
}

impl fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiToken")
            .field("name", &self.name)
            .field("role", &self.role)
            .field("secret", &"***")
            .finish()
    }
}

impl ApiToken {
    pub fn new(name: impl Into<String>, role: Role, secret: impl Into<Vec<u8>>) -> Self {
        ApiToken {
            name: name.into(),
            role,
            secret: secret.into(),
        }
    }

    /// Key for the console's session and form signatures: a token's own
    /// secret, so that every node that knows the token can check them (no
    /// shared session store) and changing the secret ends its sessions.
    pub(crate) fn secret(&self) -> &[u8] {
        &self.secret
    }
}

/// Fewest bytes a token's secret may have.
pub const MIN_SECRET: usize = 16;

/// The configured tokens.
#[derive(Debug, Clone)]
pub struct Tokens {
    list: Vec<ApiToken>,
    /// One unnamed token shared by every caller (the `api_token_env`
    /// configuration): it cannot tell people apart, so the actor of a
    /// manual action is still taken from the request body.
    shared: bool,
    /// Whether the console's session cookies made from these tokens are
    /// `Secure` (`[server] secure_cookies`): always, never, or (`None`)
    /// when the request says it came over TLS.
    secure_cookies: Option<bool>,
}

/// A token list that cannot be used, naming the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenListError {
    #[error("no API token is configured")]
    Empty,
    #[error("token name `{0}` must be 1 to 64 printable characters without spaces")]
    Name(String),
    #[error("the secret of token `{name}` has {bytes} bytes; at least {MIN_SECRET} are needed")]
    Short { name: String, bytes: usize },
    #[error("token name `{0}` is configured twice")]
    Twice(String),
    #[error("tokens `{0}` and `{1}` have the same secret")]
    SameSecret(String, String),
}

/// The name the one shared token goes by.
pub const SHARED_NAME: &str = "api";

impl Tokens {
    /// Named tokens; refused when a name or a secret repeats, or a secret
    /// is shorter than [`MIN_SECRET`] (the error names the token).
    pub fn named(list: Vec<ApiToken>) -> Result<Self, TokenListError> {
        if list.is_empty() {
            return Err(TokenListError::Empty);
        }
        for (i, t) in list.iter().enumerate() {
            if t.name.trim().is_empty()
                || !t.name.chars().all(|c| c.is_ascii_graphic())
                || t.name.len() > 64
            {
                return Err(TokenListError::Name(t.name.clone()));
            }
            if t.secret.len() < MIN_SECRET {
                return Err(TokenListError::Short {
                    name: t.name.clone(),
                    bytes: t.secret.len(),
                });
            }
            for other in &list[..i] {
                if other.name == t.name {
                    return Err(TokenListError::Twice(t.name.clone()));
                }
                if bool::from(other.secret.ct_eq(&t.secret)) {
                    return Err(TokenListError::SameSecret(
                        other.name.clone(),
                        t.name.clone(),
                    ));
                }
            }
        }
        Ok(Tokens {
            list,
            shared: false,
            secure_cookies: None,
        })
    }

    /// The one shared token of older configurations: role `admin`, name
    /// [`SHARED_NAME`].
    pub fn shared(secret: impl Into<Vec<u8>>) -> Self {
        Tokens {
            list: vec![ApiToken::new(SHARED_NAME, Role::Admin, secret)],
            shared: true,
            secure_cookies: None,
        }
    }

    /// With the console's cookie policy: `Some(true)` always `Secure` (a
    /// proxy that terminates TLS but sends no `X-Forwarded-Proto`),
    /// `Some(false)` never (plain HTTP on a trusted network only), `None`
    /// by the request.
    pub fn with_secure_cookies(mut self, secure: Option<bool>) -> Self {
        self.secure_cookies = secure;
        self
    }

    /// Whether a session cookie for a request with `over_tls` is `Secure`.
    pub fn cookie_secure(&self, over_tls: bool) -> bool {
        self.secure_cookies.unwrap_or(over_tls)
    }

    pub fn is_shared(&self) -> bool {
        self.shared
    }

    pub fn iter(&self) -> impl Iterator<Item = &ApiToken> {
        self.list.iter()
    }

    /// The token whose secret is `given`, compared in constant time
    /// (`subtle`) against every configured token, so neither timing nor
    /// order reveals how much of a guess was right.
    pub fn find(&self, given: &[u8]) -> Option<&ApiToken> {
        let mut found = None;
        for t in &self.list {
            if bool::from(t.secret.ct_eq(given)) {
                found = Some(t);
            }
        }
        found
    }

    pub fn by_name(&self, name: &str) -> Option<&ApiToken> {
        self.list.iter().find(|t| t.name == name)
    }

    pub(crate) fn identity(&self, t: &ApiToken) -> Identity {
        Identity {
            name: Arc::from(t.name.as_str()),
            role: t.role,
            shared: self.shared,
        }
    }
}

/// The caller of one request, as authenticated.
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: Arc<str>,
    pub role: Role,
    /// Authenticated by the one shared token (see [`Tokens::shared`]).
    pub shared: bool,
}

impl Identity {
    /// 403 unless this caller's role allows `p`. The refusal rides on the
    /// answer ([`Refused`]), so one layer audits every refusal, the API's
    /// and the console's alike.
    pub fn require(&self, p: Permission) -> Result<(), crate::ApiError> {
        if self.role.allows(p) {
            Ok(())
        } else {
            Err(crate::ApiError::Forbidden(crate::error::Refused {
                actor: self.name.to_string(),
                role: self.role.to_string(),
                doing: p.doing(),
                message: format!(
                    "token `{}` has role `{}`; {} needs {}",
                    self.name,
                    self.role,
                    p.doing(),
                    p.roles()
                ),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[server] secure_cookies`: unset, the request decides (a proxy's
    /// `X-Forwarded-Proto`); set, it decides whatever the request says.
    #[test]
    fn secure_cookies_decide_whatever_the_request_says() {
        let t = Tokens::shared(vec![b'x'; 32]);
        assert!(!t.cookie_secure(false));
        assert!(t.cookie_secure(true));
        let t = t.with_secure_cookies(Some(true));
        assert!(t.cookie_secure(false), "no X-Forwarded-Proto, still Secure");
        let t = t.with_secure_cookies(Some(false));
        assert!(!t.cookie_secure(true));
    }

    #[test]
    fn roles_allow_what_the_docs_say() {
        use Permission::*;
        let table = [
            (
                Role::Service,
                [true, true, false, false, false, false, false],
            ),
            (
                Role::Reviewer,
                [true, false, true, true, true, false, false],
            ),
            (Role::Admin, [true, true, true, true, true, true, true]),
        ];
        for (role, allowed) in table {
            for (p, want) in [
                Read,
                Register,
                Resolve,
                PollNow,
                Audit,
                ManageEvents,
                ManageAccounts,
            ]
            .into_iter()
            .zip(allowed)
            {
                assert_eq!(role.allows(p), want, "{role} {p:?}");
            }
        }
    }

    #[test]
    fn find_matches_whole_secrets_only() {
        let tokens = Tokens::named(vec![
            ApiToken::new("checkout", Role::Service, "service-secret-0123456789"),
            ApiToken::new("alice", Role::Reviewer, "alice-secret-0123456789"),
        ])
        .unwrap();
        assert_eq!(
            tokens
                .find(b"alice-secret-0123456789")
                .map(|t| t.name.as_str()),
            Some("alice")
        );
        assert!(tokens.find(b"alice-secret-012345678").is_none());
        assert!(tokens.find(b"").is_none());
        assert!(format!("{tokens:?}").contains("***"));
        assert!(!format!("{tokens:?}").contains("alice-secret"));
    }

    #[test]
    fn bad_token_lists_are_refused_by_name() {
        let e = Tokens::named(vec![ApiToken::new("a", Role::Admin, "short")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`a`") && e.contains("16"), "{e}");
        let e = Tokens::named(vec![
            ApiToken::new("a", Role::Admin, "same-secret-0123456789"),
            ApiToken::new("b", Role::Admin, "same-secret-0123456789"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("same secret"), "{e}");
        let e = Tokens::named(vec![
            ApiToken::new("a", Role::Admin, "secret-one-0123456789"),
            ApiToken::new("a", Role::Admin, "secret-two-0123456789"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("twice"), "{e}");
    }
}
