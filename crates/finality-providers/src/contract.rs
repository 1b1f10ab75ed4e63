//! Each adapter's contract with its provider: one row for every status and
//! event code the provider publishes, saying what finality does with it and
//! which sentence of the provider's own material justifies that.
//!
//! The rows are the adapters' maps, not a description of them: an adapter
//! decides a provider word by looking up its row ([`lookup`]), so a word
//! with no row is a word the adapter does not know. The matrix test
//! (`tests/contract.rs`) reads every enum value and event code from the
//! providers' vendored specifications under `testdata/*/spec/` and fails
//! when one has no row; `docs/PROVIDERS.md` holds the tables rendered from
//! these rows ([`render`]), checked by the same test.

use finality_core::{Kind, Status};

/// What finality does with one published value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Applied as this status (final or not) through `apply`.
    Status(Status),
    /// A fact only a human can act on: an open payment goes to
    /// `needs_review` with the provider's words; a final one keeps its
    /// status and the event is kept as a review row.
    Review,
    /// Authentic and about nothing finality follows: acknowledged and kept
    /// as ignored, with the row's words as the reason.
    Ignore,
    /// Decided from other fields of the same answer, as `does` says (an
    /// Adyen `CANCEL_OR_REFUND` by its `modification.action`).
    Depends,
}

/// One published value and what finality does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The published list the value belongs to (`payment_intent.status`,
    /// `eventCode`, `event_type`), as the matrix test names it.
    pub list: &'static str,
    /// The value as the provider writes it. A value ending in `.*` covers a
    /// family of event types finality does not follow (`customer.*`).
    pub value: &'static str,
    /// The operations it applies to.
    pub kinds: &'static [Kind],
    pub action: Action,
    /// What finality does, in a few words (the documentation's column).
    pub does: &'static str,
    /// The provider's sentence that justifies it, quoted, with where it is
    /// from.
    pub source: &'static str,
}

/// A row, in the tables' one-line form.
pub const fn row(
    list: &'static str,
    value: &'static str,
    kinds: &'static [Kind],
    action: Action,
    does: &'static str,
    source: &'static str,
) -> Row {
    Row {
        list,
        value,
        kinds,
        action,
        does,
        source,
    }
}

/// Applied as `s`.
pub const fn to(s: Status) -> Action {
    Action::Status(s)
}

/// Payments only.
pub const PAYMENT: &[Kind] = &[Kind::Payment];
/// Refunds only.
pub const REFUND: &[Kind] = &[Kind::Refund];
/// Payouts only.
pub const PAYOUT: &[Kind] = &[Kind::Payout];
/// Any operation.
pub const ANY: &[Kind] = &[Kind::Payment, Kind::Refund, Kind::Payout];

/// The row for `value` in `list`: an exact row first, else the family row
/// (`prefix.*`) that covers it.
pub fn lookup<'a>(rows: &'a [Row], list: &str, value: &str) -> Option<&'a Row> {
    let in_list = || rows.iter().filter(move |r| r.list == list);
    in_list().find(|r| r.value == value).or_else(|| {
        in_list().find(|r| {
            r.value
                .strip_suffix('*')
                .is_some_and(|prefix| value.starts_with(prefix))
        })
    })
}

/// The status a row applies, if it applies one.
pub fn status(rows: &[Row], list: &str, value: &str) -> Option<Status> {
    match lookup(rows, list, value)?.action {
        Action::Status(s) => Some(s),
        Action::Review => Some(Status::NeedsReview),
        Action::Ignore | Action::Depends => None,
    }
}

/// The rows as Markdown tables, one per list, for `docs/PROVIDERS.md`.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::new();
    let mut lists: Vec<&str> = Vec::new();
    for r in rows {
        if !lists.contains(&r.list) {
            lists.push(r.list);
        }
    }
    for list in lists {
        out.push_str(&format!(
            "\n`{list}`:\n\n| value | applies to | finality | source |\n| --- | --- | --- | --- |\n"
        ));
        for r in rows.iter().filter(|r| r.list == list) {
            let kinds: Vec<&str> = r.kinds.iter().map(|k| k.as_str()).collect();
            let action = match r.action {
                Action::Status(s) => format!("**{s}**"),
                Action::Review => "**review**".to_string(),
                Action::Ignore => "ignore".to_string(),
                Action::Depends => "depends".to_string(),
            };
            out.push_str(&format!(
                "| `{}` | {} | {action}: {} | {} |\n",
                r.value,
                kinds.join(", "),
                r.does.replace('|', "\\|"),
                r.source.replace('|', "\\|")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &[Row] = &[
        Row {
            list: "status",
            value: "paid",
            kinds: PAYMENT,
            action: Action::Status(Status::Succeeded),
            does: "the money arrived",
            source: "\"Paid.\" (docs)",
        },
        Row {
            list: "event",
            value: "customer.*",
            kinds: ANY,
            action: Action::Ignore,
            does: "not a payment",
            source: "-",
        },
    ];

    #[test]
    fn exact_rows_then_families() {
        assert_eq!(status(ROWS, "status", "paid"), Some(Status::Succeeded));
        assert_eq!(status(ROWS, "status", "unpaid"), None);
        assert!(lookup(ROWS, "event", "customer.created").is_some());
        assert!(lookup(ROWS, "event", "charge.succeeded").is_none());
        assert!(lookup(ROWS, "status", "customer.created").is_none());
    }

    #[test]
    fn renders_a_table_per_list() {
        let md = render(ROWS);
        assert!(md.contains("`status`:"));
        assert!(md.contains(
            "| `paid` | payment | **succeeded**: the money arrived | \"Paid.\" (docs) |"
        ));
        assert!(
            md.contains("| `customer.*` | payment, refund, payout | ignore: not a payment | - |")
        );
    }
}

/// One money rule: a published value of `list` (a capture's or a
/// refund's status) names a piece of `kind` in `state`, counted into the
/// payment's amounts ([`finality_core::amounts`]); `None`: named, not
/// counted. The adapter reads its piece by looking the row up, so the
/// "money" tables of `docs/PROVIDERS.md` are the behaviour.
#[derive(Debug, Clone, Copy)]
pub struct MoneyRow {
    pub list: &'static str,
    pub value: &'static str,
    pub kind: finality_core::amounts::PieceKind,
    pub state: Option<finality_core::amounts::PieceState>,
    /// Where the piece's id and amount are read from.
    pub fields: &'static str,
    pub source: &'static str,
}

/// The row for `value` of `list`.
pub fn money_lookup<'a>(rows: &'a [MoneyRow], list: &str, value: &str) -> Option<&'a MoneyRow> {
    rows.iter().find(|r| r.list == list && r.value == value)
}

/// Money rows as one Markdown table, for `docs/PROVIDERS.md`.
pub fn render_money(rows: &[MoneyRow]) -> String {
    let mut out =
        String::from("\n| value | counts as | from | source |\n| --- | --- | --- | --- |\n");
    for r in rows {
        let counts = match r.state {
            Some(s) => format!("{} {}", r.kind.as_str(), s.as_str()),
            None => "not counted".to_string(),
        };
        out.push_str(&format!(
            "| `{}` {} | {counts} | {} | {} |\n",
            r.value,
            r.list,
            r.fields.replace('|', "\\|"),
            r.source.replace('|', "\\|")
        ));
    }
    out
}
