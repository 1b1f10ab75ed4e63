//! Finding a payment by the merchant's reference, for payments registered
//! before the provider answered with its own id (the create call timed
//! out). What every adapter with such a query shares.

use crate::{Observation, PollTarget};
use finality_core::Status;

/// `unqueryable` for an adapter that can query by either reference.
pub fn needs_some_ref(t: &PollTarget<'_>) -> Option<String> {
    (t.provider_ref.is_none() && t.merchant_ref.is_none())
        .then(|| "the payment has neither a provider nor a merchant reference".to_string())
}

/// The observation for a search by merchant reference: nothing found is
/// not a failure (the create may never have reached the provider, or the
/// provider's search lags), exactly one is adopted with its id, and more
/// than one is left for a human: which of them is "the" payment is not
/// something finality can decide.
pub fn one_of<T>(
    found: Vec<T>,
    describe: impl Fn(T) -> (String, Option<Status>, String),
) -> Observation {
    let mut found: Vec<(String, Option<Status>, String)> =
        found.into_iter().map(describe).collect();
    match found.len() {
        0 => Observation::new(None, "not_found"),
        1 => {
            let (id, status, provider_status) = found.remove(0);
            Observation {
                status,
                provider_status,
                provider_ref: Some(id),
                reported: Default::default(),
            }
        }
        n => {
            let ids: Vec<&str> = found.iter().map(|f| f.0.as_str()).take(5).collect();
            Observation::new(
                None,
                format!(
                    "ambiguous: {n} objects carry this merchant reference ({})",
                    ids.join(", ")
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_one_or_many() {
        let d = |(id, s): (&str, &str)| (id.to_string(), None, s.to_string());
        assert_eq!(one_of(Vec::new(), d).provider_status, "not_found");
        let one = one_of(vec![("pi_1", "processing")], d);
        assert_eq!(one.provider_ref.as_deref(), Some("pi_1"));
        assert_eq!(one.provider_status, "processing");
        let two = one_of(vec![("pi_1", "x"), ("pi_2", "y")], d);
        assert_eq!(two.provider_ref, None);
        assert!(
            two.provider_status.contains("pi_1, pi_2"),
            "{}",
            two.provider_status
        );
    }
}
