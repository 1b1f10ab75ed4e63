//! Checking a webhook's candidate signatures: one MAC per key over the
//! signed content, compared in constant time with each candidate, and no
//! more than [`MAX_CANDIDATES`] candidates read. A MAC costs a pass over
//! the whole body; computing one per candidate let a forged 1 MiB body
//! carrying 670 candidates cost 0.43 s of CPU instead of 5 ms.

use super::{RejectReason, WebhookError};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// Candidate signatures one header may carry. Providers send one per
/// active secret (two while a secret is rotated); more is not a delivery.
pub const MAX_CANDIDATES: usize = 8;

/// Refuse a header carrying more than [`MAX_CANDIDATES`] candidates,
/// before any MAC is computed.
pub fn check_count(found: usize, header: &str) -> Result<(), WebhookError> {
    if found > MAX_CANDIDATES {
        return Err(WebhookError::reject(
            RejectReason::BadSignature,
            format!(
                "{header} carries {found} signatures; at most {MAX_CANDIDATES} are read \
                 (one per active secret)"
            ),
        ));
    }
    Ok(())
}

/// HMAC-SHA256 of `parts` under `key`.
pub fn tag(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes keys of any length: `new_from_slice` cannot fail here.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

/// Whether any candidate is the MAC of `parts` under any of `keys`: one
/// MAC per key, each compared in constant time with every candidate.
pub fn any_matches<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    parts: &[&[u8]],
    candidates: &[Vec<u8>],
) -> bool {
    matches_with(keys, candidates, |key| tag(key, parts))
}

/// [`any_matches`] with the MAC computed by `mac` (what the tests count).
fn matches_with<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    candidates: &[Vec<u8>],
    mut mac: impl FnMut(&[u8]) -> [u8; 32],
) -> bool {
    let mut found = false;
    for key in keys {
        let expected = mac(key);
        for c in candidates {
            // Every comparison is made (no early exit): the time taken does
            // not say which candidate or key matched.
            found |= bool::from(expected.as_slice().ct_eq(c.as_slice()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three keys and eight candidates cost three MACs, not 24, whichever
    /// candidate matches (or none).
    #[test]
    fn hostile_one_mac_per_key_whatever_the_candidates() {
        let keys: Vec<&[u8]> = vec![b"k1", b"k2", b"k3"];
        let body: &[u8] = b"a body";
        let good = tag(b"k3", &[body]).to_vec();
        for at in [None, Some(0), Some(7)] {
            let mut candidates: Vec<Vec<u8>> = (0..8).map(|i| vec![i; 32]).collect();
            if let Some(i) = at {
                candidates[i] = good.clone();
            }
            let mut macs = 0;
            let ok = matches_with(keys.iter().copied(), &candidates, |k| {
                macs += 1;
                tag(k, &[body])
            });
            assert_eq!(ok, at.is_some());
            assert_eq!(macs, 3, "one MAC per key");
        }
        assert!(any_matches(
            keys.iter().copied(),
            &[body],
            std::slice::from_ref(&good)
        ));
        assert!(!any_matches(
            keys.iter().copied(),
            &[b"another body"],
            &[good]
        ));
    }

    #[test]
    fn hostile_more_candidates_than_secrets_could_need_are_refused() {
        assert!(check_count(MAX_CANDIDATES, "webhook-signature").is_ok());
        let err = check_count(670, "webhook-signature")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("670 signatures") && err.contains("at most 8"),
            "{err}"
        );
    }
}
