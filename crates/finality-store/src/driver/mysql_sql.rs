//! The roles' SQL, written once for PostgreSQL and SQLite, said in
//! MySQL's and MariaDB's words.
//!
//! The roles' statements use what PostgreSQL and SQLite share: numbered
//! parameters (`$1`), `INSERT … ON CONFLICT`, `UPDATE … RETURNING`,
//! `CAST(x AS TEXT)`. MySQL has none of these, but each has a plain
//! counterpart, so rather than a third copy of every statement the MySQL
//! connection rewrites each one as it is run (a scan of the string, a few
//! microseconds beside a round trip; no crate translates between SQL
//! dialects at this level):
//!
//! - `$n` becomes `?`, with the arguments reordered (and repeated) to match;
//! - `INSERT … ON CONFLICT … DO NOTHING` becomes `INSERT IGNORE …`;
//! - `ON CONFLICT (…) DO UPDATE SET` becomes `ON DUPLICATE KEY UPDATE`,
//!   `excluded.c` becomes `VALUES(c)`;
//! - `CAST(x AS TEXT|BIGINT|INTEGER)` becomes `CAST(x AS CHAR|SIGNED)`;
//! - identifiers MySQL reserves (`cursor`) are quoted (connections run with
//!   `ANSI_QUOTES`, so `"…"` quotes an identifier as on PostgreSQL);
//! - `UPDATE t SET … WHERE … RETURNING …` becomes [`Steps`]: lock the rows
//!   (`SELECT key … FOR UPDATE`), update them by key, read them back.
//!
//! A statement that needs steps of its own (the claims: MySQL cannot
//! update a table while selecting from it in a subquery) is written as
//! steps directly, separated by [`STEP`], with `{keys}` where the keys the
//! first step found go.

/// Separates the steps of a statement run as several (see [`Steps`]).
pub const STEP: &str = " ;; ";

/// Identifiers MySQL reserves that the schema uses as column names.
const RESERVED: &[&str] = &["cursor", "lines"];

/// A statement in MySQL's words: `?` placeholders and, for each, the
/// index (0-based) of the argument it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translated {
    pub sql: String,
    pub order: Vec<usize>,
}

/// A statement run as several in one transaction: `lock` returns the keys
/// (first column) of the rows it locks; `then` run with `{keys}` replaced
/// by them (as placeholders bound after the statement's own arguments),
/// the last one's rows being the statement's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steps {
    pub lock: String,
    pub then: Vec<String>,
}

/// The rows' key of each table the roles run `UPDATE … RETURNING` on (an
/// unlisted table's statement is sent as written, and MySQL refuses it).
fn key_of(table: &str) -> Option<&'static str> {
    match table {
        "poll_jobs" => Some("payment_id"),
        "provider_cursors" => Some("provider"),
        _ => None,
    }
}

/// Split a statement into [`Steps`] when it must run as several: written
/// so (with [`STEP`]) or an `UPDATE … RETURNING`.
pub fn steps(sql: &str) -> Option<Steps> {
    if sql.contains(STEP) {
        let mut parts = sql.split(STEP).map(str::to_string);
        let lock = parts.next()?;
        return Some(Steps {
            lock,
            then: parts.collect(),
        });
    }
    let upper = sql.to_ascii_uppercase();
    let trimmed = upper.trim_start();
    if !trimmed.starts_with("UPDATE ") {
        return None;
    }
    let ret = upper.rfind(" RETURNING ")?;
    let set = upper.find(" SET ")?;
    let start = sql.len() - trimmed.len();
    let table = sql[start + "UPDATE ".len()..set].trim();
    let key = key_of(table)?;
    let where_at = upper[set..ret].find(" WHERE ").map(|i| i + set)?;
    let assignments = &sql[set + " SET ".len()..where_at];
    let filter = &sql[where_at + " WHERE ".len()..ret];
    let cols = &sql[ret + " RETURNING ".len()..];
    Some(Steps {
        lock: format!("SELECT {key} FROM {table} WHERE {filter} FOR UPDATE"),
        then: vec![
            format!("UPDATE {table} SET {assignments} WHERE {key} IN ({{keys}})"),
            format!("SELECT {cols} FROM {table} WHERE {key} IN ({{keys}})"),
        ],
    })
}

/// Translate one statement (see the module's doc).
pub fn translate(sql: &str) -> Translated {
    // Clauses are moved before parameters are numbered, so `?`s follow
    // the text's final order.
    let sql = update_from(sql).unwrap_or_else(|| sql.to_string());
    let sql = sql.replace(" AS MATERIALIZED (", " AS (");
    let (mut out, order) = placeholders_and_words(&sql);
    if let Some(at) = find_kw(&out, " ON CONFLICT") {
        out = on_conflict(&out, at);
    }
    for (from, to) in [
        (" AS TEXT)", " AS CHAR)"),
        (" AS BIGINT)", " AS SIGNED)"),
        (" AS INTEGER)", " AS SIGNED)"),
    ] {
        if out.contains(from) {
            out = out.replace(from, to);
        }
    }
    Translated { sql: out, order }
}

/// `INSERT … RETURNING cols` as the insert and the table, so the row can
/// be read back by `LAST_INSERT_ID()` (MariaDB has `INSERT … RETURNING`,
/// but a prepared one describes no columns, and MySQL has none): `(insert,
/// table, cols)`.
pub fn insert_returning(sql: &str) -> Option<(String, String, String)> {
    let upper = sql.to_ascii_uppercase();
    let trimmed = upper.trim_start();
    if !trimmed.starts_with("INSERT INTO ") {
        return None;
    }
    let ret = find_top(sql, " RETURNING ", 0)?;
    let start = sql.len() - trimmed.len() + "INSERT INTO ".len();
    let table = sql[start..]
        .split(|c: char| c.is_whitespace() || c == '(')
        .next()?
        .to_string();
    Some((
        sql[..ret].to_string(),
        table,
        sql[ret + " RETURNING ".len()..].to_string(),
    ))
}

/// Where `kw` (upper case, as written in the statement) first appears
/// at `from` or after, outside parentheses and literals.
fn find_top(sql: &str, kw: &str, from: usize) -> Option<usize> {
    let b = sql.as_bytes();
    let (mut depth, mut quoted) = (0i32, false);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            _ if !quoted && depth == 0 && i >= from && sql[i..].starts_with(kw) => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// `UPDATE t SET s FROM f WHERE c` (PostgreSQL's and SQLite's join in an
/// update) → `UPDATE t JOIN f ON c SET s`.
fn update_from(sql: &str) -> Option<String> {
    let trimmed = sql.trim_start();
    if !trimmed.starts_with("UPDATE ") {
        return None;
    }
    let set = find_top(sql, " SET ", 0)?;
    let from = find_top(sql, " FROM ", set)?;
    let cond = find_top(sql, " WHERE ", from)?;
    Some(format!(
        "{} JOIN {} ON {} SET {}",
        &sql[..set],
        sql[from + " FROM ".len()..cond].trim(),
        &sql[cond + " WHERE ".len()..],
        sql[set + " SET ".len()..from].trim(),
    ))
}

/// `$n` to `?` (recording `n - 1`) and reserved identifiers quoted,
/// outside string literals.
fn placeholders_and_words(sql: &str) -> (String, Vec<usize>) {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            // A literal, with '' inside it, copied as it is.
            let mut j = i + 1;
            while j < b.len() {
                if b[j] == b'\'' {
                    if b.get(j + 1) == Some(&b'\'') {
                        j += 2;
                        continue;
                    }
                    break;
                }
                j += 1;
            }
            let end = (j + 1).min(b.len());
            out.push_str(&sql[i..end]);
            i = end;
        } else if c == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let n: usize = sql[i + 1..j].parse().unwrap_or(1);
            order.push(n.saturating_sub(1));
            out.push('?');
            i = j;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            let word = &sql[i..j];
            if RESERVED.contains(&word) {
                out.push('"');
                out.push_str(word);
                out.push('"');
            } else {
                out.push_str(word);
            }
            i = j;
        } else {
            // Multi-byte characters are copied whole.
            let ch = sql[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    (out, order)
}

/// The first place `kw` (upper case) appears in `sql`, whatever its case.
fn find_kw(sql: &str, kw: &str) -> Option<usize> {
    sql.to_ascii_uppercase().find(kw)
}

/// `… ON CONFLICT [(cols)] DO NOTHING` → `INSERT IGNORE …`;
/// `… ON CONFLICT (cols) DO UPDATE SET a = excluded.a` →
/// `… ON DUPLICATE KEY UPDATE a = VALUES(a)`.
fn on_conflict(sql: &str, at: usize) -> String {
    let upper = sql.to_ascii_uppercase();
    let rest = &upper[at..];
    if let Some(dn) = rest.find("DO NOTHING") {
        let end = at + dn + "DO NOTHING".len();
        let head = &sql[..at];
        let tail = &sql[end..];
        let head = match find_kw(head, "INSERT INTO") {
            Some(i) => format!("{}INSERT IGNORE INTO{}", &head[..i], &head[i + 11..]),
            None => head.to_string(),
        };
        return format!("{head}{tail}");
    }
    if let Some(du) = rest.find("DO UPDATE SET") {
        let end = at + du + "DO UPDATE SET".len();
        let set = excluded_to_values(&sql[end..]);
        let set = match find_top(&set, " WHERE ", 0) {
            Some(w) => guarded(&set[..w], set[w + " WHERE ".len()..].trim()),
            None => set,
        };
        return format!("{} ON DUPLICATE KEY UPDATE{set}", &sql[..at]);
    }
    sql.to_string()
}

/// `a = x, b = y` guarded by `cond` (an `ON CONFLICT … DO UPDATE … WHERE`,
/// which MySQL lacks) → `a = IF(cond, x, a), b = IF(cond, y, b)`. MySQL
/// assigns left to right, each seeing the ones before: `cond` must not read
/// a column assigned before the last (the one statement that has a guard
/// reads only the column it assigns last).
fn guarded(set: &str, cond: &str) -> String {
    let mut parts = Vec::new();
    let mut rest = set;
    loop {
        let (part, more) = match find_top(rest, ",", 0) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        if let Some((col, expr)) = part.split_once('=') {
            let col = col.trim();
            parts.push(format!("{col} = IF({cond}, {}, {col})", expr.trim()));
        }
        match more {
            Some(m) => rest = m,
            None => break,
        }
    }
    format!(" {}", parts.join(", "))
}

/// `excluded.c` → `VALUES(c)`.
fn excluded_to_values(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("excluded.") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "excluded.".len()..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        out.push_str("VALUES(");
        out.push_str(&after[..len]);
        out.push(')');
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_question_marks_in_order() {
        let t = translate("SELECT a FROM t WHERE b = $2 AND c = $1 AND d = '$1' AND e = $2");
        assert_eq!(
            t.sql,
            "SELECT a FROM t WHERE b = ? AND c = ? AND d = '$1' AND e = ?"
        );
        assert_eq!(t.order, vec![1, 0, 1]);
    }

    #[test]
    fn on_conflict_do_nothing_is_insert_ignore() {
        let t = translate("INSERT INTO x (a) VALUES ($1) ON CONFLICT (a) DO NOTHING");
        assert_eq!(t.sql, "INSERT IGNORE INTO x (a) VALUES (?)");
        let t = translate("INSERT INTO x (a) VALUES ($1) ON CONFLICT DO NOTHING");
        assert_eq!(t.sql, "INSERT IGNORE INTO x (a) VALUES (?)");
    }

    #[test]
    fn on_conflict_do_update_is_on_duplicate_key() {
        let t = translate(
            "INSERT INTO nodes (w, h) VALUES ($1, $2) ON CONFLICT (w) DO UPDATE SET h = excluded.h",
        );
        assert_eq!(
            t.sql,
            "INSERT INTO nodes (w, h) VALUES (?, ?) ON DUPLICATE KEY UPDATE h = VALUES(h)"
        );
    }

    #[test]
    fn a_guarded_update_assigns_only_when_its_guard_holds() {
        let t = translate(
            "INSERT INTO w (id, b) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET \
             b = excluded.b, d = NULL WHERE w.d IS NOT NULL",
        );
        assert_eq!(
            t.sql,
            "INSERT INTO w (id, b) VALUES (?, ?) ON DUPLICATE KEY UPDATE \
             b = IF(w.d IS NOT NULL, VALUES(b), b), d = IF(w.d IS NOT NULL, NULL, d)"
        );
    }

    #[test]
    fn casts_and_reserved_words() {
        let t = translate("SELECT cursor FROM provider_cursors WHERE CAST($1 AS TEXT) IS NULL");
        assert_eq!(
            t.sql,
            "SELECT \"cursor\" FROM provider_cursors WHERE CAST(? AS CHAR) IS NULL"
        );
    }

    #[test]
    fn update_from_is_a_join() {
        let t = translate(
            "UPDATE outbox SET feed_seq = $1 + t.rn \
             FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM outbox \
             WHERE feed_seq IS NULL ORDER BY id LIMIT $2) AS t WHERE outbox.id = t.id",
        );
        assert_eq!(
            t.sql,
            "UPDATE outbox JOIN (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM outbox \
             WHERE feed_seq IS NULL ORDER BY id LIMIT ?) AS t ON outbox.id = t.id SET feed_seq = ? + t.rn"
        );
        assert_eq!(t.order, vec![1, 0]);
        // A subquery's FROM is not the update's.
        let t = translate("UPDATE a SET x = 1 WHERE id = (SELECT id FROM b LIMIT 1)");
        assert_eq!(
            t.sql,
            "UPDATE a SET x = 1 WHERE id = (SELECT id FROM b LIMIT 1)"
        );
    }

    #[test]
    fn insert_returning_is_read_back() {
        let (ins, table, cols) =
            insert_returning("INSERT INTO audit_log (at) VALUES ($1) RETURNING id").expect("split");
        assert_eq!(ins, "INSERT INTO audit_log (at) VALUES ($1)");
        assert_eq!(table, "audit_log");
        assert_eq!(cols, "id");
    }

    #[test]
    fn update_returning_runs_as_steps() {
        let s =
            steps("UPDATE provider_cursors SET holder = $2 WHERE provider = $1 RETURNING cursor")
                .expect("steps");
        assert_eq!(
            s.lock,
            "SELECT provider FROM provider_cursors WHERE provider = $1 FOR UPDATE"
        );
        assert_eq!(
            s.then,
            vec![
                "UPDATE provider_cursors SET holder = $2 WHERE provider IN ({keys})".to_string(),
                "SELECT cursor FROM provider_cursors WHERE provider IN ({keys})".to_string(),
            ]
        );
        assert!(steps("INSERT INTO x VALUES ($1) RETURNING id").is_none());
    }
}
