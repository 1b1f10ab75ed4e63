//! The one reader of secrets: every API key, webhook secret, push signing
//! secret and bearer token finality uses comes from an environment
//! variable the configuration names, through [`Secret`], so each is
//! refused at start when unset, empty or shorter than its floor (the error
//! names the variable and the setting, never the value), and none can be
//! printed by accident (`Debug` shows the variable's name; there is no
//! `Display`).

/// A secret read from the environment once, at start.
#[derive(Clone)]
pub struct Secret {
    var: String,
    value: String,
}

/// Why a secret could not be read. Names the variable and the setting
/// that named it, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("environment variable {var} ({what}) is not set")]
    Unset { var: String, what: String },
    #[error("secret file {var} ({what}) could not be read: {detail}")]
    Unreadable {
        var: String,
        what: String,
        detail: String,
    },
    #[error(
        "secret file {var} ({what}) is not under a directory secrets may be read from \
         ({dirs}); mount it there, or add its directory to [server] secret_dirs"
    )]
    OutsideDirs {
        var: String,
        what: String,
        dirs: String,
    },
    #[error("environment variable {var} ({what}) is empty")]
    Empty { var: String, what: String },
    #[error("environment variable {var} ({what}) holds {len} bytes; at least {min} are needed")]
    Short {
        var: String,
        what: String,
        len: usize,
        min: usize,
    },
}

/// Where secret files may be read from unless configured otherwise: where
/// container runtimes, Kubernetes and systemd mount credentials.
pub const DEFAULT_SECRET_DIRS: &[&str] = &["/run/secrets", "/run/credentials", "/var/run/secrets"];

static SECRET_DIRS: std::sync::OnceLock<Vec<std::path::PathBuf>> = std::sync::OnceLock::new();

/// Set, once at start (`[server] secret_dirs`), the directories secret
/// files may be read from; `false` if they were set already.
pub fn set_secret_dirs(dirs: Vec<std::path::PathBuf>) -> bool {
    SECRET_DIRS.set(dirs).is_ok()
}

/// The directories secret files may be read from.
pub fn secret_dirs() -> Vec<std::path::PathBuf> {
    SECRET_DIRS.get().cloned().unwrap_or_else(|| {
        DEFAULT_SECRET_DIRS
            .iter()
            .map(std::path::PathBuf::from)
            .collect()
    })
}

/// Read the secret file `path` if it is (links resolved) under one of
/// `dirs`: a setting (an account added through the API) may name a file,
/// and without the bound any file the process can read would do
/// (`/proc/self/environ` holds every other secret).
pub fn read_under(
    path: &std::path::Path,
    what: &str,
    dirs: &[std::path::PathBuf],
) -> Result<String, SecretError> {
    let var = path.display().to_string();
    let unreadable = |e: std::io::Error| SecretError::Unreadable {
        var: var.clone(),
        what: what.into(),
        detail: e.kind().to_string(),
    };
    let real = path.canonicalize().map_err(unreadable)?;
    let inside = dirs
        .iter()
        .filter_map(|d| d.canonicalize().ok())
        .any(|d| real.starts_with(d));
    if !inside {
        return Err(SecretError::OutsideDirs {
            var,
            what: what.into(),
            dirs: dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    std::fs::read_to_string(&real).map_err(unreadable)
}

impl Secret {
    /// Read `var` (named by the setting `what`), refusing it unset or
    /// empty (surrounding whitespace, a paste's newline, is dropped).
    pub fn from_env(var: &str, what: &str) -> Result<Self, SecretError> {
        Self::from_env_min(var, what, 1)
    }

    /// [`Secret::from_env`], and at least `min` bytes long.
    ///
    /// A `var` that is an absolute path (`/run/secrets/…`, a mounted
    /// Kubernetes or systemd credential) is read from that file instead.
    pub fn from_env_min(var: &str, what: &str, min: usize) -> Result<Self, SecretError> {
        let raw = if var.starts_with('/') {
            read_under(std::path::Path::new(var), what, &secret_dirs())?
        } else {
            std::env::var(var).map_err(|_| SecretError::Unset {
                var: var.into(),
                what: what.into(),
            })?
        };
        Self::new(var, what, &raw, min)
    }

    /// A secret given as a value (tests, a value from a file) under the
    /// name `var`, with the same checks and trimming.
    pub fn new(var: &str, what: &str, value: &str, min: usize) -> Result<Self, SecretError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(SecretError::Empty {
                var: var.into(),
                what: what.into(),
            });
        }
        if value.len() < min {
            return Err(SecretError::Short {
                var: var.into(),
                what: what.into(),
                len: value.len(),
                min,
            });
        }
        Ok(Secret {
            var: var.to_string(),
            value: value.to_string(),
        })
    }

    /// The value, for the one call that needs it.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// The variable it was read from.
    pub fn var(&self) -> &str {
        &self.var
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret(${})", self.var)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A secret file is read only under the directories allowed, links
    /// resolved: `/proc/self/environ`, a file elsewhere, and a link from
    /// inside to outside are refused, naming the file and the directories.
    #[test]
    fn hostile_secret_files_only_under_the_directories_allowed() {
        let allowed = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let dirs = vec![allowed.path().to_path_buf()];
        let inside = allowed.path().join("key");
        std::fs::write(&inside, "s3cret-value\n").unwrap();
        assert_eq!(read_under(&inside, "t", &dirs).unwrap(), "s3cret-value\n");
        let outside = elsewhere.path().join("key");
        std::fs::write(&outside, "other").unwrap();
        for p in [
            outside.clone(),
            std::path::PathBuf::from("/proc/self/environ"),
            allowed
                .path()
                .join("..")
                .join(elsewhere.path().file_name().unwrap())
                .join("key"),
        ] {
            let e = read_under(&p, "accounts.webhook_secret_envs", &dirs).unwrap_err();
            assert!(matches!(e, SecretError::OutsideDirs { .. }), "{p:?}: {e}");
            assert!(e.to_string().contains("secret_dirs"), "{e}");
        }
        let link = allowed.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert!(matches!(
            read_under(&link, "t", &dirs),
            Err(SecretError::OutsideDirs { .. })
        ));
    }

    #[test]
    fn refused_by_name_and_never_printed() {
        let e = Secret::from_env("FINALITY_TEST_SURELY_UNSET_VAR", "api_key_env").unwrap_err();
        assert_eq!(
            e.to_string(),
            "environment variable FINALITY_TEST_SURELY_UNSET_VAR (api_key_env) is not set"
        );
        let e = Secret::new("V", "secret_env", "  ", 1).unwrap_err();
        assert!(matches!(e, SecretError::Empty { .. }), "{e}");
        let e = Secret::new("V", "secret_env", "short", 16).unwrap_err();
        assert_eq!(
            e.to_string(),
            "environment variable V (secret_env) holds 5 bytes; at least 16 are needed"
        );
        let s = Secret::new("V", "secret_env", "sk_test_0123456789abcdef", 16).unwrap();
        assert_eq!(format!("{s:?}"), "Secret($V)");
        assert_eq!(s.expose(), "sk_test_0123456789abcdef");
    }
}
