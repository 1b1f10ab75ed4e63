//! What every CSV report reader shares: the header row and its columns by
//! name, and each record with its line in the file. Names are compared
//! without a byte-order mark and with runs of whitespace as one space
//! (PayPal's older files spell `Transaction  Debit or Credit`).

use super::ReportError;
use std::io::Read;

/// A report's column names.
pub(super) struct Header {
    names: Vec<String>,
    /// The header's own line (errors about a missing column name it).
    line: u64,
}

fn normal(name: &str) -> String {
    name.trim_start_matches('\u{feff}')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl Header {
    /// The first row of a reader built with headers.
    pub(super) fn read<R: Read>(reader: &mut csv::Reader<R>) -> Result<Self, ReportError> {
        let rec = reader
            .headers()
            .map_err(|e| ReportError::new(1, "header", e.to_string()))?
            .clone();
        Ok(Header::of(&rec, 1))
    }

    /// A row read as the header (a report whose header is not its first line).
    pub(super) fn of(rec: &csv::StringRecord, line: u64) -> Self {
        Header {
            names: rec.iter().map(normal).collect(),
            line,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    pub(super) fn pos(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The column `name`, or an error on the header's line: `why` says what
    /// its absence means.
    pub(super) fn need(&self, name: &str, why: &str) -> Result<usize, ReportError> {
        self.pos(name)
            .ok_or_else(|| ReportError::new(self.line, name, why))
    }

    /// The names found, for an error that lists them.
    pub(super) fn names(&self) -> String {
        self.names.join(", ")
    }
}

/// A record with its line, or the CSV reader's error on its line.
pub(super) fn record(
    rec: Result<csv::StringRecord, csv::Error>,
) -> Result<(csv::StringRecord, u64), ReportError> {
    match rec {
        Ok(r) => {
            let line = r.position().map_or(0, |p| p.line());
            Ok((r, line))
        }
        Err(e) => Err(ReportError::new(
            e.position().map_or(0, |p| p.line()),
            "row",
            e.to_string(),
        )),
    }
}
