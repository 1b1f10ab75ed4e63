//! Reports on an SFTP server (PayPal's daily Settlement Report, on
//! `reports.paypal.com` under `/ppreports/outgoing`): the connection's
//! settings. The server is known by its host key, pinned here: a server
//! presenting any other key is refused before a credential is sent.

use finality_core::secret::Secret;
use russh::keys::{PrivateKey, PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// Why a fetch over SFTP did not give a file.
#[derive(Debug, thiserror::Error)]
pub enum SftpError {
    /// A setting that cannot be used, naming it.
    #[error("{0}")]
    Setting(String),
    /// The day's file is not there (yet).
    #[error("{0}")]
    NotThere(String),
    /// The server or the file is not what was pinned or stated.
    #[error("{0}")]
    Refused(String),
    /// The server could not be reached or failed: tried again.
    #[error("{0}")]
    Transient(String),
    /// The server refused the credential, or the files cannot be taken
    /// as they are: a person must act.
    #[error("{0}")]
    Permanent(String),
    #[error("writing the report: {0}")]
    Io(#[from] std::io::Error),
}

/// The longest a whole fetch (connect, list, download) may take.
const WHOLE: Duration = Duration::from_secs(600);

/// The pinned key from a `host_key` setting: the first `ALGORITHM BASE64`
/// pair in it (a known_hosts line's host in front, or a comment after,
/// is allowed).
pub fn parse_host_key(text: &str) -> Result<PublicKey, SftpError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .find_map(|w| PublicKey::from_openssh(&format!("{} {}", w[0], w[1])).ok())
        .ok_or_else(|| {
            SftpError::Setting(
                "not an OpenSSH public key (`ssh-ed25519 AAAAC3Nz…`, as ssh-keyscan prints it)"
                    .into(),
            )
        })
}

enum Auth {
    Password(Secret),
    Key(Arc<PrivateKey>),
}

/// What connecting to the report server needs, checked at start.
pub struct SftpAccess {
    host: String,
    port: u16,
    user: String,
    dir: String,
    pinned: PublicKey,
    auth: Auth,
    connect: Duration,
}

impl SftpAccess {
    /// `password`/`private_key`: the secrets `password_env`/`private_key_env` name.
    pub fn new(
        cfg: &SftpConfig,
        password: Option<Secret>,
        private_key: Option<Secret>,
        connect: Duration,
    ) -> Result<Self, SftpError> {
        let setting = |m: String| SftpError::Setting(m);
        let (host, port) = match cfg.host.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.starts_with('[') => (
                h.trim_start_matches('[').trim_end_matches(']').to_string(),
                p.parse::<u16>()
                    .map_err(|_| setting(format!("sftp.host: `{p}` is not a port")))?,
            ),
            _ => (cfg.host.clone(), 22),
        };
        let pinned =
            parse_host_key(&cfg.host_key).map_err(|e| setting(format!("sftp.host_key: {e}")))?;
        let auth = match (password, private_key) {
            (Some(p), None) => Auth::Password(p),
            (None, Some(k)) => Auth::Key(Arc::new(
                russh::keys::decode_secret_key(k.expose(), None).map_err(|e| {
                    setting(format!(
                        "sftp.private_key_env ({}): not an OpenSSH private key: {e}",
                        k.var()
                    ))
                })?,
            )),
            _ => {
                return Err(setting(
                    "sftp: set one of password_env and private_key_env (the user's credential)"
                        .into(),
                ))
            }
        };
        Ok(SftpAccess {
            host,
            port,
            user: cfg.user.clone(),
            dir: cfg.dir.trim_end_matches('/').to_string(),
            pinned,
            auth,
            connect,
        })
    }

    /// Download the newest version of the file in the report directory whose
    /// name `wanted` accepts (`None` from it: not this day's) into `dest`,
    /// checked against the size the server states. Returns the file's name
    /// and size.
    pub async fn fetch(
        &self,
        wanted: impl Fn(&str) -> Option<(String, String)>,
        dest: &Path,
    ) -> Result<(String, u64), SftpError> {
        match tokio::time::timeout(WHOLE, self.fetch_inner(&wanted, dest)).await {
            Ok(r) => r,
            Err(_) => Err(transient(format!(
                "SFTP fetch from {} took longer than {WHOLE:?}",
                self.host
            ))),
        }
    }

    async fn fetch_inner(
        &self,
        wanted: &impl Fn(&str) -> Option<(String, String)>,
        dest: &Path,
    ) -> Result<(String, u64), SftpError> {
        let sftp = self.session().await?;
        let entries = sftp
            .read_dir(self.dir.clone())
            .await
            .map_err(|e| transient(format!("listing {} on {}: {e}", self.dir, self.host)))?;
        // (sequence, version, name) of the day's files.
        let mut found: Vec<(String, String, String)> = entries
            .filter_map(|e| {
                let name = e.file_name();
                wanted(&name).map(|(seq, ver)| (seq, ver, name))
            })
            .collect();
        found.sort();
        let sequences: std::collections::BTreeSet<&String> = found.iter().map(|f| &f.0).collect();
        if sequences.len() > 1 {
            return Err(SftpError::Permanent(format!(
                "the report is split across {} files ({}): import them with `finality \
                     reconcile`",
                sequences.len(),
                found
                    .iter()
                    .map(|f| f.2.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let Some((_, _, name)) = found.pop() else {
            return Err(SftpError::NotThere(format!(
                "no file for the day in {} on {} yet",
                self.dir, self.host
            )));
        };
        let path = format!("{}/{name}", self.dir);
        let size = sftp
            .metadata(path.clone())
            .await
            .map_err(|e| transient(format!("{path}: {e}")))?
            .size
            .ok_or_else(|| SftpError::Refused(format!("{path}: the server states no size")))?;
        let mut file = sftp
            .open(path.clone())
            .await
            .map_err(|e| transient(format!("opening {path}: {e}")))?;
        let mut out = tokio::fs::File::create(dest).await?;
        let bytes = tokio::io::copy(&mut file, &mut out).await?;
        tokio::io::AsyncWriteExt::flush(&mut out).await?;
        let _ = sftp.close().await;
        if bytes != size {
            return Err(SftpError::Refused(format!(
                "{path} is {bytes} bytes, the SFTP server says {size}: cut short or altered in \
                 transit"
            )));
        }
        Ok((name, size))
    }

    /// Connected, the host key checked against the pinned one before any
    /// credential is sent, authenticated, the `sftp` subsystem started.
    async fn session(&self) -> Result<russh_sftp::client::SftpSession, SftpError> {
        let addr = format!("{}:{}", self.host, self.port);
        let tcp = tokio::time::timeout(self.connect, tokio::net::TcpStream::connect(&addr))
            .await
            .map_err(|_| {
                transient(format!(
                    "connecting to {addr}: no answer in {:?}",
                    self.connect
                ))
            })?
            .map_err(|e| transient(format!("connecting to {addr}: {e}")))?;
        let seen = Arc::new(Mutex::new(None));
        let handler = Pinned {
            pinned: self.pinned.clone(),
            seen: seen.clone(),
        };
        let config = Arc::new(russh::client::Config {
            inactivity_timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        });
        let mut handle = match russh::client::connect_stream(config, tcp, handler).await {
            Ok(h) => h,
            Err(e) => {
                let presented = seen.lock().unwrap_or_else(|p| p.into_inner()).take();
                return Err(match presented {
                    Some(fp) => SftpError::Refused(format!(
                        "{addr} presented host key {fp}, not the pinned {}: refused before any \
                         credential was sent (a changed key is updated in sftp.host_key by hand)",
                        self.pinned.fingerprint(Default::default())
                    )),
                    None => transient(format!("SSH to {addr}: {e}")),
                });
            }
        };
        let auth = match &self.auth {
            Auth::Password(p) => handle.authenticate_password(&self.user, p.expose()).await,
            Auth::Key(k) => {
                let hash = handle
                    .best_supported_rsa_hash()
                    .await
                    .ok()
                    .flatten()
                    .flatten();
                handle
                    .authenticate_publickey(&self.user, PrivateKeyWithHashAlg::new(k.clone(), hash))
                    .await
            }
        }
        .map_err(|e| transient(format!("SSH authentication at {addr}: {e}")))?;
        if !auth.success() {
            return Err(SftpError::Permanent(format!(
                "{addr} refused user `{}`'s credential",
                self.user
            )));
        }
        let channel = handle
            .channel_open_session()
            .await
            .map_err(|e| transient(format!("SSH session at {addr}: {e}")))?;
        channel
            .request_subsystem(true, "sftp")
            .await
            .map_err(|e| transient(format!("SFTP subsystem at {addr}: {e}")))?;
        russh_sftp::client::SftpSession::new(channel.into_stream())
            .await
            .map_err(|e| transient(format!("SFTP at {addr}: {e}")))
    }
}

fn transient(message: String) -> SftpError {
    SftpError::Transient(message)
}

/// Accepts the pinned host key and nothing else; remembers what another
/// server presented, for the error.
struct Pinned {
    pinned: PublicKey,
    seen: Arc<Mutex<Option<String>>>,
}

impl russh::client::Handler for Pinned {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key = key.public_key();
        if key.key_data() == self.pinned.key_data() {
            return Ok(true);
        }
        *self.seen.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(key.fingerprint(Default::default()).to_string());
        Ok(false)
    }
}
