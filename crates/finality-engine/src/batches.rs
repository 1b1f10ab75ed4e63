//! Announced settlement files by account: gaps in each account's batch
//! numbers (each merchant account numbers its batches on its own), and
//! the folder each account's files are kept in.

use finality_store::reconciliations::AnnouncedFile;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Batch numbers between the lowest and highest of `names`' that none has.
pub fn batch_gaps<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<u64> {
    let seen: std::collections::BTreeSet<u64> = names
        .into_iter()
        .filter_map(|n| {
            finality_providers::adyen::reports::batch_of(n)?
                .parse()
                .ok()
        })
        .collect();
    match (seen.first(), seen.last()) {
        (Some(lo), Some(hi)) => (*lo..*hi).filter(|n| !seen.contains(n)).collect(),
        _ => Vec::new(),
    }
}

/// The gaps of the provider's own files, and of each account's that has
/// any: looked for in each account's files apart.
pub(crate) fn gaps_by_account(recent: &[AnnouncedFile]) -> (Vec<u64>, BTreeMap<String, Vec<u64>>) {
    let mut by: BTreeMap<Option<&str>, Vec<&str>> = BTreeMap::new();
    for f in recent {
        by.entry(f.account.as_deref()).or_default().push(&f.name);
    }
    let own = batch_gaps(by.remove(&None).unwrap_or_default());
    let accounts = by
        .into_iter()
        .filter_map(|(a, names)| {
            let g = batch_gaps(names);
            (!g.is_empty()).then(|| (a.unwrap_or_default().to_string(), g))
        })
        .collect();
    (own, accounts)
}

/// Where `account`'s files are kept under the provider's folder `dir`: an
/// id that is not a plain name (a path separator, a dot first) is written
/// in hex, so it names a folder, never a path.
pub(crate) fn account_dir(dir: &Path, account: Option<&str>) -> PathBuf {
    match account {
        Some(a)
            if !a.starts_with('.')
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) =>
        {
            dir.join(format!("account-{a}"))
        }
        Some(a) => dir.join(format!("account-x{}", hex::encode(a))),
        None => dir.to_path_buf(),
    }
}

/// Keep the settlement reports `events` announce (Adyen's
/// `REPORT_AVAILABLE`) for the fetcher of `provider`. Called with a
/// webhook's verified events before it is acknowledged: a failure here
/// answers 5xx, and the provider's redelivery announces again (a file
/// announced before changes nothing). Returns how many were new.
pub async fn announce<S: ?Sized + crate::reconcile::ReconcileStore>(
    store: &S,
    scope: &finality_core::Scope,
    events: &[finality_providers::webhook::WebhookEvent],
    now: finality_core::Timestamp,
) -> Result<usize, finality_store::StoreError> {
    use finality_providers::webhook::Disposition;
    let mut new = 0;
    for ev in events {
        if let Disposition::Report { name, url } = &ev.disposition {
            if store.file_announce(scope, name, url, now).await? {
                tracing::info!(%scope, file = %name, "settlement report announced; kept for the settlement fetcher");
                new += 1;
            }
        }
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::{account_dir, batch_gaps};

    #[test]
    fn a_batch_never_announced_is_a_gap() {
        let names = [
            "settlement_detail_report_batch_12.csv",
            "settlement_detail_report_batch_15.csv",
            "settlement_detail_report_batch_13.csv",
            "received_payments_report_2026_12_03.csv",
        ];
        assert_eq!(batch_gaps(names), vec![14]);
        assert!(batch_gaps(["settlement_detail_report_batch_7.csv"]).is_empty());
        assert!(batch_gaps(std::iter::empty()).is_empty());
    }

    #[test]
    fn an_account_is_a_folder_never_a_path() {
        let d = std::path::Path::new("/f/adyen");
        assert_eq!(account_dir(d, None), d);
        assert_eq!(account_dir(d, Some("ShopB")), d.join("account-ShopB"));
        assert_eq!(account_dir(d, Some("../x")), d.join("account-x2e2e2f78"));
        assert_eq!(
            account_dir(d, Some(".hidden")),
            d.join("account-x2e68696464656e")
        );
    }
}
