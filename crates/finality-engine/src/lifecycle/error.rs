//! Why a retention run or a restore stopped.

use std::path::{Path, PathBuf};

/// Why a run or a restore stopped.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    #[error(transparent)]
    Store(#[from] finality_store::StoreError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {detail}")]
    Archive { path: PathBuf, detail: String },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LifecycleError + '_ {
    move |source| LifecycleError::Io {
        path: path.to_path_buf(),
        source,
    }
}
