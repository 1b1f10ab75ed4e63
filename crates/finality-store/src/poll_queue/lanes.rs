//! Fair claiming: each claim round is shared between the lanes (a
//! provider's account, or the provider itself) that have due work, in
//! proportion to their weights, so one merchant's backlog of a million due
//! polls delays its own polls and not another merchant's fresh one.
//!
//! The lanes with due work are found by a skip scan of the
//! `(provider, account, next_poll_at)` index: three index seeks per lane,
//! whatever the backlog (a `GROUP BY` would read every due row). With one
//! lane due, the claim is the plain one; with several, one claim per lane
//! with its share, then the round's rest to whoever still has work.

use crate::model::Lane;
use finality_core::Timestamp;
use std::collections::HashMap;

/// Both backends' lanes, by two seeks per lane (the statements below add
/// how a lane's earliest poll is read).
macro_rules! lanes_cte {
    () => {
        "WITH RECURSIVE lanes(provider, account) AS ( \
        SELECT (SELECT provider FROM poll_jobs WHERE next_poll_at IS NOT NULL \
                AND payment_id <> '' ORDER BY provider, account LIMIT 1), \
               (SELECT account FROM poll_jobs WHERE next_poll_at IS NOT NULL \
                AND payment_id <> '' ORDER BY provider, account LIMIT 1) \
        UNION ALL \
        SELECT COALESCE( \
                (SELECT j.provider FROM poll_jobs j WHERE j.next_poll_at IS NOT NULL \
                 AND j.payment_id <> '' AND j.provider = l.provider AND j.account > l.account \
                 ORDER BY j.provider, j.account LIMIT 1), \
                (SELECT j.provider FROM poll_jobs j WHERE j.next_poll_at IS NOT NULL \
                 AND j.payment_id <> '' AND j.provider > l.provider \
                 ORDER BY j.provider, j.account LIMIT 1)), \
               COALESCE( \
                (SELECT j.account FROM poll_jobs j WHERE j.next_poll_at IS NOT NULL \
                 AND j.payment_id <> '' AND j.provider = l.provider AND j.account > l.account \
                 ORDER BY j.provider, j.account LIMIT 1), \
                (SELECT j.account FROM poll_jobs j WHERE j.next_poll_at IS NOT NULL \
                 AND j.payment_id <> '' AND j.provider > l.provider \
                 ORDER BY j.provider, j.account LIMIT 1)) \
        FROM lanes l WHERE l.provider IS NOT NULL) "
    };
}

/// Every lane with an unparked job, and its earliest `next_poll_at`, the
/// lanes due by `$1` first-due first (PostgreSQL's form). Each step seeks
/// the index to the provider's next account, else to the next provider's
/// first: two seeks on either backend (SQLite narrows a row-value range
/// `(provider, account) > (…)` by `provider` alone, which would read every
/// entry of a big lane to find the next).
///
/// Every seek lands on a lane's earliest `next_poll_at`, where a busy lane
/// leaves the index entries of the rows it just claimed and completed.
/// `payment_id <> ''` (always true) names a column the index lacks, so
/// PostgreSQL reads these by index scan, which marks the entries of dead
/// rows as dead for every later scan, and not by index-only scan, which
/// does not. A lane is selected by a range of row values, not by
/// `provider = … AND account = …`, and ordered by the lane index's columns:
/// with equalities, a generic plan (a prepared statement run many times)
/// takes the `next_poll_at` index as ordered enough and filters every row
/// of the other lanes (0.35 s for a small lane beside a million-job one).
pub const DUE_LANES: &str = concat!(
    lanes_cte!(),
    "SELECT provider, account, first_due FROM ( \
        SELECT l.provider, l.account, \
            (SELECT j.next_poll_at FROM poll_jobs j WHERE j.next_poll_at IS NOT NULL \
             AND (j.provider, j.account, j.next_poll_at) >= (l.provider, l.account, -9223372036854775807) \
             AND (j.provider, j.account, j.next_poll_at) <= (l.provider, l.account, 9223372036854775807) \
             AND j.payment_id <> '' \
             ORDER BY j.provider, j.account, j.next_poll_at LIMIT 1) AS first_due \
        FROM lanes l WHERE l.provider IS NOT NULL) x \
    WHERE first_due <= $1 ORDER BY first_due"
);

/// [`DUE_LANES`] for SQLite, whose planner narrows a row-value range by its
/// first column only: a lane's earliest poll is found by equalities (its
/// planner then takes the lane index, unlike PostgreSQL's generic plans).
pub const DUE_LANES_SQLITE: &str = concat!(
    lanes_cte!(),
    "SELECT provider, account, first_due FROM ( \
        SELECT l.provider, l.account, \
            (SELECT j.next_poll_at FROM poll_jobs j WHERE j.next_poll_at IS NOT NULL \
             AND j.provider = l.provider AND j.account = l.account \
             ORDER BY j.provider, j.account, j.next_poll_at LIMIT 1) AS first_due \
        FROM lanes l WHERE l.provider IS NOT NULL) x \
    WHERE first_due <= $1 ORDER BY first_due"
);

/// How many of a round of `limit` each due lane may take: in proportion to
/// its weight (1 unless named), at least one, the lanes waiting longest
/// served first (`lanes` comes first-due first). With more lanes than
/// `limit`, the longest-waiting `limit` lanes get one each this round and
/// the others are first in the next.
pub(crate) fn shares(
    lanes: &[(Lane, Timestamp)],
    weights: &HashMap<Lane, u32>,
    limit: u32,
) -> Vec<(Lane, u32)> {
    let weight = |l: &Lane| u64::from(weights.get(l).copied().unwrap_or(1).max(1));
    let total: u64 = lanes.iter().map(|(l, _)| weight(l)).sum();
    let mut left = limit;
    let mut out = Vec::with_capacity(lanes.len());
    for (lane, _) in lanes {
        if left == 0 || total == 0 {
            break;
        }
        let share = (u64::from(limit) * weight(lane)).div_ceil(total).max(1);
        let share = u32::try_from(share).unwrap_or(u32::MAX).min(left);
        left -= share;
        out.push((lane.clone(), share));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(p: &str, a: &str) -> Lane {
        (p.to_string(), a.to_string())
    }

    #[test]
    fn a_round_is_shared_by_weight_longest_waiting_first() {
        let lanes = vec![
            (lane("stripe", "acct_big"), Timestamp(1)),
            (lane("stripe", "acct_small"), Timestamp(5)),
        ];
        let even = shares(&lanes, &HashMap::new(), 100);
        assert_eq!(even.iter().map(|s| s.1).collect::<Vec<_>>(), vec![50, 50]);
        let weights = HashMap::from([(lane("stripe", "acct_small"), 3)]);
        let weighted = shares(&lanes, &weights, 100);
        assert_eq!(
            weighted.iter().map(|s| s.1).collect::<Vec<_>>(),
            vec![25, 75]
        );
        // More lanes than room: one each, in order of waiting.
        let many: Vec<_> = (0..10)
            .map(|i| (lane("sim", &format!("a{i}")), Timestamp(i)))
            .collect();
        let few = shares(&many, &HashMap::new(), 3);
        assert_eq!(
            few,
            vec![
                (lane("sim", "a0"), 1),
                (lane("sim", "a1"), 1),
                (lane("sim", "a2"), 1)
            ]
        );
    }
}
