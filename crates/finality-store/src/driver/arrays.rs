//! PostgreSQL statements that take whole columns as arrays (`UNNEST`) with
//! named parameters: the SQL says `{pay_id}` where it needs that column, and
//! [`Params`] lists each name with its values, once. The `$n::type`
//! placeholders are numbered from that list and the values are bound in the
//! same order, so a placeholder cannot point at another column's array (with
//! 29 positional parameters lined up by hand, one could). The rendered SQL
//! is kept after its first use; the tests render every statement and check
//! that its placeholders and its binds match one to one.
//!
//! sqlx binds by position only; no crate renders named parameters for it,
//! hence this module.

use crate::error::{Result, StoreError};
use serde_json::Value;
use sqlx::postgres::PgArguments;
use sqlx::Postgres;
use std::borrow::Cow;
use std::sync::OnceLock;

/// One parameter's values: a column as an array, or a single value.
#[derive(Debug)]
pub(crate) enum Param<'a> {
    /// A column as it is kept (bound without a copy).
    Strings(&'a [String]),
    /// A column gathered from rows.
    Texts(Vec<&'a str>),
    Strs(&'a [&'a str]),
    OptStrings(&'a [Option<String>]),
    OptTexts(Vec<Option<&'a str>>),
    /// A column made for the statement (rows' JSON written out).
    OwnedOptTexts(Vec<Option<String>>),
    Int8s(Cow<'a, [i64]>),
    OptInt8s(Cow<'a, [Option<i64>]>),
    Int4s(&'a [i32]),
    Bools(&'a [bool]),
    Bytes(Vec<&'a [u8]>),
    Jsons(Vec<Value>),
    Int8(i64),
    Text(&'a str),
}

impl<'a> Param<'a> {
    /// The SQL type the placeholder is cast to.
    fn sql_type(&self) -> &'static str {
        match self {
            Param::Strings(_)
            | Param::Texts(_)
            | Param::Strs(_)
            | Param::OptStrings(_)
            | Param::OptTexts(_)
            | Param::OwnedOptTexts(_) => "text[]",
            Param::Int8s(_) | Param::OptInt8s(_) => "int8[]",
            Param::Int4s(_) => "int4[]",
            Param::Bools(_) => "bool[]",
            Param::Bytes(_) => "bytea[]",
            Param::Jsons(_) => "jsonb[]",
            Param::Int8(_) => "int8",
            Param::Text(_) => "text",
        }
    }
}

/// A statement's parameters by name, in the order they are numbered.
#[derive(Debug)]
pub(crate) struct Params<'a> {
    list: Vec<(&'static str, Param<'a>)>,
}

impl<'a> Params<'a> {
    pub(crate) fn new() -> Self {
        Params {
            list: Vec::with_capacity(32),
        }
    }

    /// Add `name`, numbered after those before it.
    pub(crate) fn with(mut self, name: &'static str, p: Param<'a>) -> Self {
        self.list.push((name, p));
        self
    }

    /// The names and SQL types, in order.
    pub(crate) fn signature(&self) -> Vec<(&'static str, &'static str)> {
        self.list.iter().map(|(n, p)| (*n, p.sql_type())).collect()
    }
}

/// Bind every parameter of a [`Params`] to a sqlx query or query-as, in
/// order (the two have no common trait to write this as a function over).
macro_rules! bind_all {
    ($q:expr, $params:expr) => {{
        let mut q = $q;
        for (_, p) in $params.list {
            q = match p {
                Param::Strings(v) => q.bind(v),
                Param::Texts(v) => q.bind(v),
                Param::Strs(v) => q.bind(v),
                Param::OptStrings(v) => q.bind(v),
                Param::OptTexts(v) => q.bind(v),
                Param::OwnedOptTexts(v) => q.bind(v),
                Param::Int8s(Cow::Borrowed(v)) => q.bind(v),
                Param::Int8s(Cow::Owned(v)) => q.bind(v),
                Param::OptInt8s(Cow::Borrowed(v)) => q.bind(v),
                Param::OptInt8s(Cow::Owned(v)) => q.bind(v),
                Param::Int4s(v) => q.bind(v),
                Param::Bools(v) => q.bind(v),
                Param::Bytes(v) => q.bind(v),
                Param::Jsons(v) => q.bind(v),
                Param::Int8(v) => q.bind(v),
                Param::Text(v) => q.bind(v),
            };
        }
        q
    }};
}

/// A statement over named array parameters. Its SQL is rendered from
/// `parts` (joined as they are) on first use.
#[derive(Debug)]
pub(crate) struct ArrayStmt {
    parts: &'static [&'static str],
    op: &'static str,
    sql: OnceLock<String>,
}

impl ArrayStmt {
    /// `op` says what the statement does, for its errors.
    pub(crate) const fn new(parts: &'static [&'static str], op: &'static str) -> Self {
        ArrayStmt {
            parts,
            op,
            sql: OnceLock::new(),
        }
    }

    pub(crate) fn op(&self) -> &'static str {
        self.op
    }

    /// The SQL with `$n::type` for each name of `params`.
    pub(crate) fn sql(&'static self, params: &Params<'_>) -> Result<&'static str> {
        if let Some(sql) = self.sql.get() {
            return Ok(sql);
        }
        let sql = render(&self.parts.concat(), &params.signature()).map_err(|detail| {
            StoreError::Statement {
                op: self.op,
                detail: detail.to_string(),
            }
        })?;
        Ok(self.sql.get_or_init(|| sql))
    }

    /// The statement with `params` bound in their numbered order.
    pub(crate) fn query<'q>(
        &'static self,
        params: Params<'q>,
    ) -> Result<sqlx::query::Query<'q, Postgres, PgArguments>> {
        let q = sqlx::query(self.sql(&params)?);
        Ok(bind_all!(q, params))
    }

    /// [`ArrayStmt::query`] whose rows decode into `O` by position.
    pub(crate) fn query_as<'q, O>(
        &'static self,
        params: Params<'q>,
    ) -> Result<sqlx::query::QueryAs<'q, Postgres, O, PgArguments>>
    where
        O: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>,
    {
        let q = sqlx::query_as(self.sql(&params)?);
        Ok(bind_all!(q, params))
    }
}

/// Why a template could not be rendered.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RenderError {
    #[error("`{{{0}}}` is not a parameter")]
    Unknown(String),
    #[error("parameter `{0}` is never used")]
    Unused(&'static str),
    #[error("an unclosed `{{`")]
    Unclosed,
}

/// `template` with each `{name}` replaced by `$i::type`, `i` the name's
/// place in `params` (from 1). Every parameter must be used.
pub(crate) fn render(
    template: &str,
    params: &[(&'static str, &'static str)],
) -> std::result::Result<String, RenderError> {
    let mut out = String::with_capacity(template.len() + 8 * params.len());
    let mut used = vec![false; params.len()];
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or(RenderError::Unclosed)?;
        let name = &after[..close];
        let i = params
            .iter()
            .position(|(n, _)| *n == name)
            .ok_or_else(|| RenderError::Unknown(name.to_string()))?;
        used[i] = true;
        out.push_str(&format!("${}::{}", i + 1, params[i].1));
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(RenderError::Unused(params[i].0));
    }
    Ok(out)
}

/// The distinct `$n` of `sql`, in order.
#[cfg(test)]
pub(crate) fn placeholders_in(sql: &str) -> std::collections::BTreeSet<usize> {
    let mut found = std::collections::BTreeSet::new();
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        let digits: String = rest[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(n) = digits.parse() {
            found.insert(n);
        }
        rest = &rest[at + 1..];
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_numbered_typed_placeholders() {
        let sql = render(
            "SELECT * FROM UNNEST({a}, {b}) WHERE x = ANY({a}) AND t = {now}",
            &[("a", "text[]"), ("b", "int8[]"), ("now", "int8")],
        );
        assert_eq!(
            sql.as_deref(),
            Ok("SELECT * FROM UNNEST($1::text[], $2::int8[]) WHERE x = ANY($1::text[]) AND t = $3::int8")
        );
    }

    #[test]
    fn a_name_without_values_or_values_without_a_name_are_refused() {
        assert_eq!(
            render("UNNEST({a}, {c})", &[("a", "text[]")]),
            Err(RenderError::Unknown("c".into()))
        );
        assert_eq!(
            render("UNNEST({a})", &[("a", "text[]"), ("b", "text[]")]),
            Err(RenderError::Unused("b"))
        );
        assert_eq!(
            render("UNNEST({a", &[("a", "text[]")]),
            Err(RenderError::Unclosed)
        );
    }

    #[test]
    fn placeholders_are_counted_once_each() {
        let found = placeholders_in("$1::text[], $2, $10 and $1 again, $ alone");
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec![1, 2, 10]);
    }
}
