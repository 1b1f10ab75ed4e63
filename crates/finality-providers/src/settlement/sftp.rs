//! Reports on an SFTP server (PayPal's daily Settlement Report, on
//! `reports.paypal.com` under `/ppreports/outgoing`): the connection's
//! settings. The server is known by its host key, pinned here: a server
//! presenting any other key is refused before a credential is sent.

use serde::{Deserialize, Serialize};

/// `[providers.NAME.settlement.sftp]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SftpConfig {
    /// `host` or `host:port` (22 when not given).
    pub host: String,
    pub user: String,
    /// The server's public host key as `ssh-keyscan` prints it
    /// (`ssh-ed25519 AAAAC3Nz…`, with or without the host in front): the
    /// only key accepted. Never "accept any".
    pub host_key: String,
    /// The environment variable holding `user`'s password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// The environment variable holding `user`'s private key (OpenSSH
    /// format), used instead of a password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_env: Option<String>,
    /// The directory the reports are in.
    #[serde(default = "default_dir")]
    pub dir: String,
}

fn default_dir() -> String {
    "/ppreports/outgoing".into()
}
