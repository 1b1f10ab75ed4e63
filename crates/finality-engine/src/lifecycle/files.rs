//! Archive files: gzip-compressed JSON lines written in chunks, each
//! hashed and synced before its rows are deleted, and the manifest that
//! lists them.

use crate::lifecycle::error::{io, LifecycleError};
use finality_core::Timestamp;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// One archive file, as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchiveFile {
    /// Relative to the archive directory.
    pub file: String,
    pub kind: String,
    pub table: String,
    pub day: String,
    pub rows: u64,
    pub bytes: u64,
    pub sha256: String,
    pub written_at: i64,
}

/// A writer that hashes and counts what passes through it.
pub(crate) struct Hashing<W> {
    inner: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

pub(crate) type Gz = flate2::write::GzEncoder<Hashing<std::io::BufWriter<std::fs::File>>>;

/// The files of one chunk: one per table and day, written to a temporary
/// name and moved into place only when complete and on disk.
pub(crate) struct Chunk<'a> {
    dir: &'a Path,
    kind: &'static str,
    stamp: String,
    open: BTreeMap<(&'static str, String), (PathBuf, Gz, u64)>,
}

impl<'a> Chunk<'a> {
    pub(crate) fn new(dir: &'a Path, kind: &'static str, now: Timestamp, n: u32) -> Self {
        Chunk {
            dir,
            kind,
            stamp: format!("{}-{n}", now.0),
            open: BTreeMap::new(),
        }
    }

    pub(crate) fn rel(&self, table: &str, day: &str) -> String {
        format!("{}/{table}/{day}.{}.jsonl.gz", self.kind, self.stamp)
    }

    pub(crate) fn write(
        &mut self,
        table: &'static str,
        day: &str,
        row: &serde_json::Value,
    ) -> Result<(), LifecycleError> {
        let key = (table, day.to_string());
        if !self.open.contains_key(&key) {
            let path = self.dir.join(self.rel(table, day));
            if let Some(parent) = path.parent() {
                create_dirs(parent)?;
            }
            let tmp = path.with_extension("gz.tmp");
            let f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
            let w = Hashing {
                inner: std::io::BufWriter::new(f),
                hash: Sha256::new(),
                bytes: 0,
            };
            self.open.insert(
                key.clone(),
                (
                    tmp,
                    flate2::write::GzEncoder::new(w, flate2::Compression::default()),
                    0,
                ),
            );
        }
        let Some((tmp, gz, rows)) = self.open.get_mut(&key) else {
            return Ok(());
        };
        serde_json::to_writer(&mut *gz, row).map_err(|e| LifecycleError::Archive {
            path: tmp.clone(),
            detail: e.to_string(),
        })?;
        gz.write_all(b"\n").map_err(io(tmp))?;
        *rows += 1;
        Ok(())
    }

    /// Finish every file: complete, fsynced, renamed, and in the manifest
    /// (fsynced too) before anything is deleted.
    pub(crate) fn finish(
        self,
        now: Timestamp,
    ) -> Result<HashMap<String, ArchiveFile>, LifecycleError> {
        let mut out = HashMap::new();
        for ((table, day), (tmp, gz, rows)) in self.open {
            let rel = format!("{}/{table}/{day}.{}.jsonl.gz", self.kind, self.stamp);
            let hashing = gz.finish().map_err(io(&tmp))?;
            let (buf, hash, bytes) = (hashing.inner, hashing.hash, hashing.bytes);
            let file = buf.into_inner().map_err(|e| LifecycleError::Io {
                path: tmp.clone(),
                source: e.into_error(),
            })?;
            file.sync_all().map_err(io(&tmp))?;
            let path = self.dir.join(&rel);
            std::fs::rename(&tmp, &path).map_err(io(&path))?;
            if let Some(parent) = path.parent() {
                sync_dir(parent)?;
            }
            let entry = ArchiveFile {
                file: rel.clone(),
                kind: self.kind.to_string(),
                table: table.to_string(),
                day: day.clone(),
                rows,
                bytes,
                sha256: hex::encode(hash.finalize()),
                written_at: now.0,
            };
            append_manifest(self.dir, &entry)?;
            out.insert(format!("{table}/{day}"), entry);
        }
        Ok(out)
    }
}

/// `create_dir_all`, with each directory it made fsynced into its parent
/// (a power loss must not lose a directory whose files' rows are gone).
pub(crate) fn create_dirs(dir: &Path) -> Result<(), LifecycleError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        if !parent.as_os_str().is_empty() {
            create_dirs(parent)?;
        }
    }
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(io(dir)(e)),
    }
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
        _ => Ok(()),
    }
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), LifecycleError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

/// The manifest beside the archive files.
pub fn manifest_path(dir: &Path) -> PathBuf {
    dir.join("manifest.jsonl")
}

pub(crate) fn append_manifest(dir: &Path, entry: &ArchiveFile) -> Result<(), LifecycleError> {
    let path = manifest_path(dir);
    let created = !path.exists();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io(&path))?;
    let mut line = serde_json::to_vec(entry).map_err(|e| LifecycleError::Archive {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    line.push(b'\n');
    f.write_all(&line).map_err(io(&path))?;
    f.sync_all().map_err(io(&path))?;
    if created {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Every file the manifest lists; a bad line is an error naming its number.
pub fn read_manifest(dir: &Path) -> Result<Vec<ArchiveFile>, LifecycleError> {
    let path = manifest_path(dir);
    let f = std::fs::File::open(&path).map_err(io(&path))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(io(&path))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line).map_err(|e| LifecycleError::Archive {
                path: path.clone(),
                detail: format!("line {}: {e}", i + 1),
            })?,
        );
    }
    Ok(out)
}
