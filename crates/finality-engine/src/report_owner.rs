//! Whose payments a settlement report's lines may reach ([`Owner`]), and a
//! report page's payments by their references ([`Index`]): a line is looked
//! for only among the payments of its own account.

use finality_core::Scope;
use finality_providers::settlement::{LineKind, SettlementLine};
use finality_store::reconciliations::Ledger;
use std::collections::HashMap;

/// Whose payments a report's lines may be matched to: a line of one
/// merchant's report (or naming one merchant) never reaches another's
/// payment, and "missing from the report" is looked for within the
/// report's account.
#[derive(Debug, Clone, Copy, Default)]
pub struct Owner<'a> {
    /// The account whose report it is: fetched or announced for it, or
    /// named at import (`None`: the provider's own).
    pub account: Option<&'a str>,
    /// Whether the provider has accounts: then a line that names one
    /// (Adyen's `Merchant Account`, WeChat Pay's 特约商户号) is that
    /// account's. Without accounts, every line is the report's.
    pub lines_name_accounts: bool,
    /// The provider's own id (Adyen's `merchant_account`, WeChat Pay's
    /// `mchid`): a line naming it is the provider's own.
    pub own_id: Option<&'a str>,
}

impl Owner<'_> {
    /// The scope the report as a whole is of.
    pub fn report(&self, provider: &str) -> Scope {
        Scope::new(provider, self.account)
    }

    /// The scope `line`'s payment is looked for in. A line naming an
    /// account is that account's when the provider has accounts, or, in
    /// the provider's own report, when the provider's own id is known and
    /// the line names another (a report Adyen made for several merchant
    /// accounts, imported where only one is configured: the others' lines
    /// reach no payment of its).
    pub fn line(&self, provider: &str, line: &SettlementLine) -> Scope {
        let routed = self.lines_name_accounts || (self.account.is_none() && self.own_id.is_some());
        match line.account.as_deref().filter(|_| routed) {
            Some(a) if Some(a) == self.own_id => Scope::own(provider),
            Some(a) => Scope::new(provider, Some(a)),
            None => self.report(provider),
        }
    }
}

/// A page's payments by each of their references.
pub(crate) struct Index<'l> {
    by_ref: HashMap<&'l str, usize>,
    by_merchant: HashMap<&'l str, usize>,
}

impl<'l> Index<'l> {
    pub(crate) fn new(ledger: &'l [Ledger]) -> Self {
        let mut ix = Index {
            by_ref: HashMap::with_capacity(ledger.len()),
            by_merchant: HashMap::new(),
        };
        for (i, p) in ledger.iter().enumerate() {
            if let Some(r) = &p.provider_ref {
                ix.by_ref.insert(r, i);
            }
            if let Some(r) = &p.merchant_ref {
                ix.by_merchant.insert(r, i);
            }
        }
        ix
    }

    /// The entry a line names: each of the line's references in turn (the
    /// provider's id, another id of the provider's, the merchant's
    /// reference), as a payment's provider id, then as its merchant
    /// reference.
    pub(crate) fn find(&self, line: &SettlementLine) -> Option<usize> {
        if !line.kind.names_a_payment() && line.kind != LineKind::Fee {
            return None;
        }
        line.references().find_map(|r| {
            self.by_ref
                .get(r)
                .or_else(|| self.by_merchant.get(r))
                .copied()
        })
    }
}
