//! [`Scope`]: whose fact this is. A provider and one of its accounts.
//!
//! Every payment belongs to one scope, and every fact (a webhook, an
//! answer, a report line) is stored with the scope that named or verified
//! it. The store looks payments up by reference only through a `Scope`, so
//! a lookup that forgets the account does not compile: one merchant's
//! `order-1001` can never find another merchant's `order-1001`.

use std::fmt;

/// A provider and one of its accounts; the provider's own payments are in
/// the scope with no account (stored as `''`, so a unique index and an
/// equality comparison treat it as a value, which SQL's NULL is not).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope {
    provider: String,
    account: String,
}

impl Scope {
    /// `account` `None` (or empty): the provider's own.
    pub fn new(provider: impl Into<String>, account: Option<&str>) -> Self {
        Scope {
            provider: provider.into(),
            account: account.unwrap_or_default().to_string(),
        }
    }

    /// The provider's own account.
    pub fn own(provider: impl Into<String>) -> Self {
        Scope::new(provider, None)
    }

    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The account, `None` for the provider's own.
    pub fn account(&self) -> Option<&str> {
        (!self.account.is_empty()).then_some(self.account.as_str())
    }

    /// The account as stored: `''` for the provider's own.
    pub fn account_key(&self) -> &str {
        &self.account
    }
}

/// `provider` or `provider/account`: how health, metrics and logs name it.
impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.account() {
            Some(a) => write!(f, "{}/{a}", self.provider),
            None => f.write_str(&self.provider),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_and_empty_are_one_scope() {
        assert_eq!(Scope::own("stripe"), Scope::new("stripe", Some("")));
        assert_eq!(Scope::own("stripe").account(), None);
        assert_eq!(Scope::own("stripe").account_key(), "");
        assert_ne!(Scope::own("stripe"), Scope::new("stripe", Some("acct_A")));
        assert_eq!(
            Scope::new("stripe", Some("acct_A")).to_string(),
            "stripe/acct_A"
        );
        assert_eq!(Scope::own("adyen").to_string(), "adyen");
    }
}
