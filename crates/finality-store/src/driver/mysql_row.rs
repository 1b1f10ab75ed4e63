//! MySQL's rows as the roles read them.
//!
//! sqlx checks a column's declared type before decoding, and MySQL's
//! declared types do not match the roles' reads one for one: a text column
//! under a binary collation (`utf8mb4_bin`, which finality's tables use so
//! ids are case-sensitive) is flagged `BINARY` and refused as a string;
//! `SUM` of integers is a `DECIMAL`; `JSON` is `LONGTEXT` on MariaDB. So
//! each read looks at the value's type and decodes it by what it is.

use super::conn::corrupt;
use super::Fields;
use crate::error::Result;
use serde_json::Value;
use sqlx::mysql::MySqlRow;
use sqlx::{Row, TypeInfo, ValueRef};

/// A value's SQL type name, or `None` for NULL.
fn kind(row: &MySqlRow, col: &str, table: &'static str) -> Result<Option<String>> {
    let v = row.try_get_raw(col).map_err(|e| corrupt(table, e))?;
    if v.is_null() {
        return Ok(None);
    }
    Ok(Some(v.type_info().name().to_string()))
}

/// A number MySQL sends as text (`DECIMAL`, or a string column).
fn textual(name: &str) -> bool {
    name == "DECIMAL"
        || name.contains("CHAR")
        || name.contains("TEXT")
        || name.contains("BLOB")
        || name == "JSON"
}

fn opt_int(row: &MySqlRow, col: &str, table: &'static str) -> Result<Option<i64>> {
    let Some(name) = kind(row, col, table)? else {
        return Ok(None);
    };
    if textual(&name) {
        let s: String = row.try_get_unchecked(col).map_err(|e| corrupt(table, e))?;
        let s = s.trim();
        return match s.parse::<i64>() {
            Ok(n) => Ok(Some(n)),
            // `DECIMAL` with a scale ("12.000"): whole numbers only.
            Err(_) => s
                .parse::<f64>()
                .ok()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map(|f| Some(f as i64))
                .ok_or_else(|| corrupt(table, format!("{col}: {s:?} is not a whole number"))),
        };
    }
    if name == "DOUBLE" || name == "FLOAT" {
        let f: f64 = row.try_get_unchecked(col).map_err(|e| corrupt(table, e))?;
        return Ok(Some(f as i64));
    }
    row.try_get_unchecked::<i64, _>(col)
        .map(Some)
        .map_err(|e| corrupt(table, e))
}

fn opt_text(row: &MySqlRow, col: &str, table: &'static str) -> Result<Option<String>> {
    if kind(row, col, table)?.is_none() {
        return Ok(None);
    }
    row.try_get_unchecked::<String, _>(col)
        .map(Some)
        .map_err(|e| corrupt(table, e))
}

fn missing(col: &str, table: &'static str) -> crate::StoreError {
    corrupt(table, format!("{col} is NULL"))
}

impl Fields for MySqlRow {
    fn text(&self, col: &str, table: &'static str) -> Result<String> {
        opt_text(self, col, table)?.ok_or_else(|| missing(col, table))
    }
    fn opt_text(&self, col: &str, table: &'static str) -> Result<Option<String>> {
        opt_text(self, col, table)
    }
    fn int(&self, col: &str, table: &'static str) -> Result<i64> {
        opt_int(self, col, table)?.ok_or_else(|| missing(col, table))
    }
    fn opt_int(&self, col: &str, table: &'static str) -> Result<Option<i64>> {
        opt_int(self, col, table)
    }
    fn int4(&self, col: &str, table: &'static str) -> Result<i32> {
        let n = self.int(col, table)?;
        i32::try_from(n).map_err(|e| corrupt(table, format!("{col}: {e}")))
    }
    fn opt_int4(&self, col: &str, table: &'static str) -> Result<Option<i32>> {
        opt_int(self, col, table)?
            .map(|n| i32::try_from(n).map_err(|e| corrupt(table, format!("{col}: {e}"))))
            .transpose()
    }
    fn real(&self, col: &str, table: &'static str) -> Result<f64> {
        let name = kind(self, col, table)?.ok_or_else(|| missing(col, table))?;
        if textual(&name) {
            let s: String = self.try_get_unchecked(col).map_err(|e| corrupt(table, e))?;
            return s
                .trim()
                .parse()
                .map_err(|e| corrupt(table, format!("{col}: {e}")));
        }
        if name == "DOUBLE" {
            return self.try_get_unchecked(col).map_err(|e| corrupt(table, e));
        }
        if name == "FLOAT" {
            let f: f32 = self.try_get_unchecked(col).map_err(|e| corrupt(table, e))?;
            return Ok(f64::from(f));
        }
        Ok(self.int(col, table)? as f64)
    }
    fn json(&self, col: &str, table: &'static str) -> Result<Value> {
        let s = self.text(col, table)?;
        serde_json::from_str(&s).map_err(|e| corrupt(table, format!("{col}: {e}")))
    }
    fn bytes(&self, col: &str, table: &'static str) -> Result<Vec<u8>> {
        self.try_get_unchecked(col).map_err(|e| corrupt(table, e))
    }
}
