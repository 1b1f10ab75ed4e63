//! The one error type of configuration checks, whatever the table.

/// A configuration value that cannot be used: the dotted path of the field
/// (`providers.acme.generic.url`) and why. A check reports the field
/// relative to its own table; each caller further out prefixes its table
/// with [`ConfigError::within`], so the path is complete when it reaches
/// the file loader, which adds the file and line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error seen from the table that holds this one.
    pub fn within(self, table: &str) -> Self {
        ConfigError {
            field: format!("{table}.{}", self.field),
            message: self.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_builds_the_dotted_path() {
        let e = ConfigError::new("url", "bad")
            .within("generic")
            .within("providers.acme");
        assert_eq!(e.field, "providers.acme.generic.url");
        assert_eq!(e.to_string(), "providers.acme.generic.url: bad");
    }
}
