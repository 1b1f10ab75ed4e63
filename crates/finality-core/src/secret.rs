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
            std::fs::read_to_string(var).map_err(|e| SecretError::Unreadable {
                var: var.into(),
                what: what.into(),
                detail: e.kind().to_string(),
            })?
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
