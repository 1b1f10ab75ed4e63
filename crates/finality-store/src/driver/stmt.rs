//! A statement as data: its SQL, its arguments in order and what it is
//! for, bound in one place per backend ([`bind`]).
//!
//! sqlx types every query by its database, so code generic over
//! `sqlx::Database` needs a wall of trait bounds repeated on every function
//! (Rust does not carry where-clauses along). Describing a statement as data
//! and binding it in one place keeps the roles ordinary: each is written
//! once, generic over one bound (`C: Conn`), and the type checker and the
//! editor see all of it. No crate does this narrow job (sqlx's own `Any`
//! driver has no JSON or array types), hence these few dozen lines.

use serde_json::Value;

/// One bound value. Borrowed: binding never copies a string.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Int4(Option<i32>),
    Real(f64),
    Flag(bool),
    Json(&'a Value),
    Bytes(&'a [u8]),
}

/// A statement with its parameters (`$1`, `$2`, … in order) and what it is
/// for, which a database error will name.
#[derive(Debug, Clone)]
pub struct Stmt<'a> {
    pub sql: &'a str,
    pub args: Vec<Arg<'a>>,
    pub op: &'static str,
}

/// Start a statement; `op` says what it does ("writing a status").
pub fn stmt<'a>(sql: &'a str, op: &'static str) -> Stmt<'a> {
    Stmt {
        sql,
        args: Vec::new(),
        op,
    }
}

impl<'a> Stmt<'a> {
    pub fn text(mut self, v: &'a str) -> Self {
        self.args.push(Arg::Text(Some(v)));
        self
    }
    pub fn opt_text(mut self, v: Option<&'a str>) -> Self {
        self.args.push(Arg::Text(v));
        self
    }
    pub fn int(mut self, v: i64) -> Self {
        self.args.push(Arg::Int(Some(v)));
        self
    }
    pub fn opt_int(mut self, v: Option<i64>) -> Self {
        self.args.push(Arg::Int(v));
        self
    }
    pub fn int4(mut self, v: i32) -> Self {
        self.args.push(Arg::Int4(Some(v)));
        self
    }
    pub fn opt_int4(mut self, v: Option<i32>) -> Self {
        self.args.push(Arg::Int4(v));
        self
    }
    pub fn real(mut self, v: f64) -> Self {
        self.args.push(Arg::Real(v));
        self
    }
    pub fn flag(mut self, v: bool) -> Self {
        self.args.push(Arg::Flag(v));
        self
    }
    pub fn json(mut self, v: &'a Value) -> Self {
        self.args.push(Arg::Json(v));
        self
    }
    pub fn bytes(mut self, v: &'a [u8]) -> Self {
        self.args.push(Arg::Bytes(v));
        self
    }
}

/// Bind a statement's arguments to a sqlx query, for any backend that can
/// encode our seven argument types (both can).
pub fn bind<'q, DB>(s: &'q Stmt<'q>) -> sqlx::query::Query<'q, DB, DB::Arguments<'q>>
where
    DB: sqlx::Database,
    Option<&'q str>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i32>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    f64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    sqlx::types::Json<&'q Value>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q [u8]: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let mut q = sqlx::query::<DB>(s.sql);
    for a in &s.args {
        q = match *a {
            Arg::Text(v) => q.bind(v),
            Arg::Int(v) => q.bind(v),
            Arg::Int4(v) => q.bind(v),
            Arg::Real(v) => q.bind(v),
            Arg::Flag(v) => q.bind(v),
            Arg::Json(v) => q.bind(sqlx::types::Json(v)),
            Arg::Bytes(v) => q.bind(v),
        };
    }
    q
}
