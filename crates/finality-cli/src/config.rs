//! `finality.toml`: one file, every field with a sane default, secrets only
//! from environment variables the file names. Errors name the file, the line
//! and the field.

use anyhow::{anyhow, Context};
use finality_core::ConfigError;
use finality_engine::{EngineConfig, ProviderEntry, Providers};
use finality_providers::config::ProviderConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The file read when `--config` is not given, if it exists.
pub const DEFAULT_PATH: &str = "finality.toml";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// Address the HTTP API listens on.
    pub listen: String,
    /// Name of the environment variable holding the one shared API bearer
    /// token; used only when no `[[server.tokens]]` are configured.
    pub api_token_env: String,
    /// Named tokens, each with a role; the name is the actor of every
    /// manual action made with it.
    pub tokens: Vec<TokenConfig>,
    /// On SIGTERM: how long open requests and in-flight polls may finish
    /// before they are cut off (their leases handed back to other nodes).
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: std::time::Duration,
    /// How long a client may take to send a request's headers, and then
    /// its body, before its connection is closed (a client trickling bytes
    /// must not hold a connection forever).
    #[serde(with = "humantime_serde")]
    pub client_timeout: std::time::Duration,
    /// Connections served at once; more are closed at once. Keep it below
    /// the file-descriptor limit (`ulimit -n`, systemd `LimitNOFILE`) less
    /// the database pool.
    pub max_connections: usize,
    /// Connections at once from one address (unset: half of
    /// `max_connections`), so one client cannot take every slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connections_per_address: Option<usize>,
    /// A connection with no request in flight this long is closed,
    /// whatever HTTP/2 pings it answers.
    #[serde(with = "humantime_serde")]
    pub idle_timeout: std::time::Duration,
    /// Directories secret files may be read from (a setting that gives a
    /// secret as an absolute path: `/run/secrets/…`); a file elsewhere,
    /// links resolved, is refused.
    pub secret_dirs: Vec<std::path::PathBuf>,
    /// The console's session cookie `Secure` flag: `true` always (TLS ends
    /// at a proxy that sends no `X-Forwarded-Proto`), `false` never (plain
    /// HTTP on a trusted network); unset: when the request says it came
    /// over TLS (`X-Forwarded-Proto: https`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secure_cookies: Option<bool>,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: "127.0.0.1:8080".into(),
            api_token_env: "FINALITY_API_TOKEN".into(),
            tokens: Vec::new(),
            shutdown_grace: finality_server::SHUTDOWN_GRACE,
            client_timeout: finality_server::serve::CLIENT_TIMEOUT,
            max_connections: finality_server::serve::MAX_CONNECTIONS,
            max_connections_per_address: None,
            idle_timeout: finality_server::serve::IDLE_TIMEOUT,
            secret_dirs: finality_core::secret::DEFAULT_SECRET_DIRS
                .iter()
                .map(std::path::PathBuf::from)
                .collect(),
            secure_cookies: None,
        }
    }
}

/// One `[[server.tokens]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Who holds it (`checkout-service`, `alice`): recorded as the actor.
    pub name: String,
    /// `service` (register, read), `reviewer` (read, resolve, poll now) or
    /// `admin` (everything).
    pub role: finality_server::identity::Role,
    /// The environment variable holding its secret (never the file).
    pub secret_env: String,
}

impl ServerSection {
    /// The tokens the API accepts, secrets read from the environment: the
    /// named list when there is one, else the one shared token.
    pub fn build_tokens(&self) -> anyhow::Result<finality_server::identity::Tokens> {
        use finality_core::secret::{Secret, SecretError};
        use finality_server::identity::{ApiToken, Tokens, MIN_SECRET};
        if self.tokens.is_empty() {
            let token =
                Secret::from_env_min(&self.api_token_env, "server.api_token_env", MIN_SECRET)
                    .map_err(|e| match e {
                        SecretError::Unset { .. } => anyhow!(
                    "set {} to the bearer token the API must require (server.api_token_env), \
                     or configure named tokens in [[server.tokens]]",
                    self.api_token_env
                ),
                        other => anyhow!("{other}; use a long random token"),
                    })?;
            return Ok(Tokens::shared(token.expose()));
        }
        let mut list = Vec::with_capacity(self.tokens.len());
        for t in &self.tokens {
            let secret =
                Secret::from_env_min(&t.secret_env, "server.tokens secret_env", MIN_SECRET)
                    .map_err(|e| anyhow!("token `{}`: {e}", t.name))?;
            list.push(ApiToken::new(t.name.clone(), t.role, secret.expose()));
        }
        Tokens::named(list).map_err(|e| anyhow!("server.tokens: {e}"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSection {
    /// `sqlite://PATH` (embedded default) or `postgres://…`. A password is
    /// better passed in `url_env` than written here.
    pub url: String,
    /// Name of an environment variable that, when set, overrides `url`.
    pub url_env: String,
    pub max_connections: u32,
    /// PostgreSQL cancels a statement running longer than this (`0s`: no
    /// limit); a `statement_timeout` in the URL's options wins.
    #[serde(with = "humantime_serde")]
    pub statement_timeout: std::time::Duration,
    /// A PostgreSQL streaming replica of `url` for the API's and console's
    /// reads (empty: none). A password is better passed in `read_url_env`.
    pub read_url: String,
    /// Name of an environment variable that, when set, overrides `read_url`.
    pub read_url_env: String,
    /// Past this lag (or while the replica is down) reads go to the primary.
    #[serde(with = "humantime_serde")]
    pub read_max_lag: std::time::Duration,
}

impl Default for DatabaseSection {
    fn default() -> Self {
        DatabaseSection {
            url: "sqlite://finality.db".into(),
            url_env: "FINALITY_DATABASE_URL".into(),
            max_connections: 10,
            statement_timeout: finality_store::postgres::DEFAULT_STATEMENT_TIMEOUT,
            read_url: String::new(),
            read_url_env: "FINALITY_READ_URL".into(),
            read_max_lag: finality_server::replica::DEFAULT_MAX_LAG,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerSection,
    pub database: DatabaseSection,
    pub engine: EngineConfig,
    pub providers: BTreeMap<String, ProviderConfig>,
    pub events: finality_relay::config::EventsConfig,
    pub sweep: finality_engine::sweep::SweepConfig,
    pub retention: finality_engine::lifecycle::RetentionConfig,
    pub metrics: finality_server::metrics::MetricsConfig,
    pub log: LogSection,
    pub tracing: TracingSection,
}

/// `[tracing]` in `finality.toml`: OpenTelemetry spans, off by default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TracingSection {
    /// Where to send spans, OTLP over HTTP/protobuf (a collector's
    /// `http://HOST:4318/v1/traces`); empty: no traces.
    pub otlp_endpoint: String,
    /// The `service.name` of the spans.
    pub service_name: String,
}

impl Default for TracingSection {
    fn default() -> Self {
        TracingSection {
            otlp_endpoint: String::new(),
            service_name: "finality".into(),
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// JSON when standard error is not a terminal (a file, journald, a log
    /// collector), text with colours when it is.
    #[default]
    Auto,
    Text,
    Json,
}

/// `[log]` in `finality.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    pub format: LogFormat,
}

impl Default for Config {
    fn default() -> Self {
        let mut providers = BTreeMap::new();
        providers.insert("sim".into(), ProviderConfig::sim("http://127.0.0.1:8090"));
        Config {
            server: ServerSection::default(),
            database: DatabaseSection::default(),
            engine: EngineConfig::default(),
            providers,
            events: finality_relay::config::EventsConfig::default(),
            sweep: finality_engine::sweep::SweepConfig::default(),
            retention: finality_engine::lifecycle::RetentionConfig::default(),
            metrics: finality_server::metrics::MetricsConfig::default(),
            log: LogSection::default(),
            tracing: TracingSection::default(),
        }
    }
}

impl Config {
    /// Load `path`, or `finality.toml` if present, or the defaults.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Config> {
        let path = match path {
            Some(p) => p.to_path_buf(),
            None if Path::new(DEFAULT_PATH).exists() => DEFAULT_PATH.into(),
            None => return Ok(Config::default()),
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Parse and validate; every error reads `FILE:LINE:COL: FIELD: problem`.
    pub fn parse(text: &str, file: &str) -> anyhow::Result<Config> {
        let de = toml::Deserializer::new(text);
        let cfg: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            let message = inner.message().trim().to_string();
            let (line, col) = inner
                .span()
                .map(|s| line_col(text, s.start))
                .unwrap_or((0, 0));
            // A provider's table is read whole (its adapter decides which
            // fields it takes), so the span is the table's and the path
            // inside it comes first in the message: join the two, and point
            // at the line that assigns the field when there is one.
            let (field, message) = match message.split_once(": ") {
                Some((path, rest))
                    if field.starts_with("providers.")
                        && !path.contains(' ')
                        && !path.contains('`') =>
                {
                    (format!("{field}.{path}"), rest.to_string())
                }
                _ => (field, message),
            };
            let table = field.split('.').take(2).collect::<Vec<_>>().join(".");
            let path: Vec<&str> = field.split('.').skip(2).collect();
            let keys = unknown_field(&message)
                .into_iter()
                .chain(path.into_iter().rev());
            let (line, col) = keys
                .filter_map(|key| key_line_after(text, line, &table, key))
                .next()
                .map_or((line, col), |l| (l, 1));
            anyhow!("{file}:{line}:{col}: {field}: {message}")
        })?;
        cfg.validate().map_err(|e| {
            let line = find_line(text, &e.field);
            anyhow!("{file}:{line}: {}: {}", e.field, e.message)
        })?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.engine.validate().map_err(|e| e.within("engine"))?;
        for (name, p) in &self.providers {
            p.validate()
                .map_err(|e| e.within(&format!("providers.{name}")))?;
        }
        if self.engine.lease
            <= self
                .providers
                .values()
                .map(|p| p.timeout)
                .max()
                .unwrap_or_default()
        {
            return Err(ConfigError::new(
                "engine.lease",
                "must be longer than every provider's timeout, or a slow call loses its lease",
            ));
        }
        if self.sweep.every < std::time::Duration::from_secs(1) {
            return Err(ConfigError::new("sweep.every", "must be at least 1s"));
        }
        if self.sweep.page == 0 {
            return Err(ConfigError::new("sweep.page", "must be at least 1"));
        }
        self.retention.check()?;
        Ok(())
    }

    /// The database URL, from `url_env` when that variable is set.
    pub fn database_url(&self) -> String {
        std::env::var(&self.database.url_env).unwrap_or_else(|_| self.database.url.clone())
    }

    /// The replica's URL, from `read_url_env` when that variable is set;
    /// `None` without a replica.
    pub fn read_url(&self) -> Option<String> {
        let url = std::env::var(&self.database.read_url_env)
            .unwrap_or_else(|_| self.database.read_url.clone());
        (!url.trim().is_empty()).then_some(url)
    }

    /// Build every configured provider's adapter.
    pub fn build_providers(&self) -> anyhow::Result<Arc<Providers>> {
        let mut map = Providers::new();
        for (name, p) in &self.providers {
            let adapter = finality_providers::config::build(name, p)
                .map_err(|e| anyhow!("provider `{name}`: {e}"))?;
            let entry = ProviderEntry::named(name, adapter, p);
            // A file's account that cannot be set up is a configuration
            // error, refused at start as the provider's own would be.
            if let Some(e) = entry.accounts.file_errors().into_iter().next() {
                return Err(anyhow!("{e}"));
            }
            map.insert(name.clone(), entry);
        }
        Ok(Arc::new(map))
    }
}

/// The field serde named in "unknown field `x`, expected …", if any.
fn unknown_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
}

/// The 1-based line where `key` is assigned at or after line `from`, within
/// `table` (`providers.acme`) and its sub-tables.
fn key_line_after(text: &str, from: usize, table: &str, key: &str) -> Option<usize> {
    let own = format!("[{table}");
    text.lines()
        .enumerate()
        .skip(from.max(1) - 1)
        .take_while(|(i, l)| {
            let l = l.trim_start();
            *i + 1 == from || !l.starts_with('[') || l.starts_with(&own)
        })
        .find(|(_, l)| {
            let l = l.trim_start();
            l.starts_with(key) && l[key.len()..].trim_start().starts_with('=')
        })
        .map(|(i, _)| i + 1)
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Best effort: the line where the last segment of `field` is assigned, or
/// else the header of the table `field` names.
fn find_line(text: &str, field: &str) -> String {
    let key = field.rsplit('.').next().unwrap_or(field);
    let header = format!("[{field}]");
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with(key) && l[key.len()..].trim_start().starts_with('=')
        })
        .or_else(|| text.lines().position(|l| l.trim() == header))
        .map_or_else(|| "?".into(), |i| (i + 1).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_the_example_file_parses() {
        assert!(Config::default().validate().is_ok());
        let example = include_str!("../../../finality.toml");
        let cfg = Config::parse(example, "finality.toml").expect("example config parses");
        assert!(cfg.providers.contains_key("sim"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

        /// The example file with a few bytes changed, inserted or cut:
        /// either it still parses and validates, or the error names the
        /// file (and, where TOML can say, the line). Never a panic.
        #[test]
        fn mutated_example_file_parses_or_names_the_file(
            edits in proptest::collection::vec((0usize..20_000, proptest::prelude::any::<u8>(), 0u8..3), 1..5)
        ) {
            let mut b = include_bytes!("../../../finality.toml").to_vec();
            for (at, byte, op) in edits {
                let at = at % (b.len() + 1);
                match op {
                    0 if at < b.len() => b[at] = byte,
                    1 => b.insert(at, byte),
                    _ => b.truncate(at),
                }
            }
            let text = String::from_utf8_lossy(&b);
            if let Err(e) = Config::parse(&text, "finality.toml") {
                proptest::prop_assert!(e.to_string().starts_with("finality.toml"), "{e}");
            }
        }
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let text = "[engine]\nconcurrency = 8\nbatch_size = \"lots\"\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(err.starts_with("f.toml:3:"), "{err}");
        assert!(err.contains("engine.batch_size"), "{err}");

        let text = "[engine]\nconcurency = 8\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(
            err.contains("f.toml:2:") && err.contains("concurency"),
            "{err}"
        );

        let text =
            "[providers.sim]\nadapter = \"sim\"\nbase_url = \"http://x\"\nmax_attempts = 0\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert_eq!(
            err,
            "f.toml:4: providers.sim.max_attempts: must be at least 1"
        );

        let text = "[providers.sim]\nadapter = \"sim\"\nbase_url = \"http://x\"\nschedule = { kind = \"exponential\", base = \"10s\", factor = 2.0, cap = \"1s\" }\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(
            err.contains("providers.sim.schedule") && err.contains("cap"),
            "{err}"
        );
    }

    #[test]
    fn named_tokens_from_the_file_and_the_environment() {
        let text = "[[server.tokens]]\nname = \"checkout\"\nrole = \"service\"\n\
                    secret_env = \"FINALITY_TEST_TOKEN_CHECKOUT\"\n\n[[server.tokens]]\n\
                    name = \"alice\"\nrole = \"reviewer\"\nsecret_env = \"FINALITY_TEST_TOKEN_ALICE\"\n";
        let cfg = Config::parse(text, "f.toml").unwrap();
        assert_eq!(cfg.server.tokens.len(), 2);
        // A missing secret names the variable and the token.
        let err = cfg.server.build_tokens().unwrap_err().to_string();
        assert!(
            err.contains("FINALITY_TEST_TOKEN_CHECKOUT") && err.contains("`checkout`"),
            "{err}"
        );
        // A role that does not exist is refused at its line.
        let text = "[[server.tokens]]\nname = \"x\"\nrole = \"owner\"\nsecret_env = \"X\"\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(
            err.starts_with("f.toml:3:") && err.contains("owner"),
            "{err}"
        );
    }

    /// Each adapter takes only its own settings: another adapter's, or a
    /// misspelt shared one, is refused when the file is read, at its line.
    #[test]
    fn a_field_the_adapter_does_not_take_is_refused_at_its_line() {
        let text = "[engine]\nconcurrency = 8\n\n[providers.acme]\nadapter = \"sim\"\n\
                    base_url = \"http://x\"\nmerchant_ref_key = \"order\"\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(err.starts_with("f.toml:7:"), "{err}");
        assert!(
            err.contains("providers.acme")
                && err.contains("unknown field `merchant_ref_key` for the sim adapter"),
            "{err}"
        );

        let text =
            "[providers.acme]\nadapter = \"stripe\"\nbase_url = \"http://x\"\ntimout = \"1s\"\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(
            err.starts_with("f.toml:4:") && err.contains("timout"),
            "{err}"
        );

        let text = "[providers.acme]\nadapter = \"generic\"\nbase_url = \"http://x\"\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(
            err.starts_with("f.toml:1:") && err.contains("missing field `generic`"),
            "{err}"
        );

        let text = "[providers.acme]\nadapter = \"stripe\"\nbase_url = \"http://x\"\nmerchant_ref_key = \"order\"\n";
        let cfg = Config::parse(text, "f.toml").expect("stripe takes merchant_ref_key");
        assert_eq!(cfg.providers["acme"].adapter.name(), "stripe");
    }

    /// A provider finality has no code for, from the file alone.
    #[test]
    fn a_generic_provider_from_the_file() {
        let text = r#"
[providers.acme]
adapter = "generic"
base_url = "https://api.acme.example"
webhook_secret_envs = ["ACME_WEBHOOK_SECRET"]

[providers.acme.generic]
url = "{base_url}/v2/transfers/{provider_ref}"
headers = { Authorization = "Bearer ${ACME_API_KEY}" }
status_pointer = "/data/state"
status_map = { CREATED = "pending", IN_PROGRESS = "processing", COMPLETED = "succeeded", REJECTED = "failed" }
errors = { "409" = "transient" }

[providers.acme.generic.webhook]
scheme = "hmac"
header = "X-Acme-Signature"
prefix = "sha256="
event_id_pointer = "/id"
ref_pointer = "/data/id"
status_pointer = "/data/state"
"#;
        let cfg = Config::parse(text, "f.toml").expect("parses");
        let finality_providers::config::Adapter::Generic { generic: g } =
            &cfg.providers["acme"].adapter
        else {
            panic!("a generic adapter")
        };
        assert_eq!(g.status_map["COMPLETED"], finality_core::Status::Succeeded);

        let bad = text.replace("\"succeeded\"", "\"done\"");
        let err = Config::parse(&bad, "f.toml").unwrap_err().to_string();
        assert!(err.contains("providers.acme.generic.status_map"), "{err}");

        let bad = text.replace("{provider_ref}", "{ref}");
        let err = Config::parse(&bad, "f.toml").unwrap_err().to_string();
        assert!(
            err.contains("providers.acme.generic") && err.contains("{provider_ref}"),
            "{err}"
        );
    }
}
