//! A provider's table read by hand: its adapter's keys to [`Adapter`],
//! the rest to [`Settings`], each refusing fields it does not know (serde
//! cannot combine `flatten` with `deny_unknown_fields`), every error naming
//! its field.

use crate::config::{Adapter, ProviderConfig, Settings, ADAPTER_KEYS};
use serde::Deserialize;

/// Split the table by key: the adapter's keys to [`Adapter`], the rest to
/// [`Settings`], each refusing fields it does not know. (serde cannot
/// combine `flatten` with `deny_unknown_fields`, hence by hand.)
impl<'de> Deserialize<'de> for ProviderConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let table = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let (adapter, settings): (serde_json::Map<_, _>, serde_json::Map<_, _>) = table
            .into_iter()
            .partition(|(k, _)| ADAPTER_KEYS.contains(&k.as_str()));
        let adapter = Adapter::from_table(adapter).map_err(D::Error::custom)?;
        let settings: Settings =
            inner(serde_json::Value::Object(settings), "").map_err(D::Error::custom)?;
        Ok(ProviderConfig { adapter, settings })
    }
}

impl Adapter {
    /// Read the adapter's keys of a provider's table: `adapter` names the
    /// variant, which takes its own keys; another adapter's key is an
    /// unknown field.
    pub(crate) fn from_table(
        mut t: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Adapter, TableError> {
        let name = match t.remove("adapter") {
            Some(serde_json::Value::String(n)) => n,
            Some(other) => return Err(TableError::AdapterNotText(other)),
            None => return Err(TableError::Missing("adapter".into())),
        };
        let adapter = match name.as_str() {
            "sim" => Adapter::Sim,
            "bakong" => Adapter::Bakong,
            "stripe" => Adapter::Stripe {
                merchant_ref_key: may(&mut t, "merchant_ref_key")?,
            },
            "adyen" => Adapter::Adyen {
                adyen: may(&mut t, "adyen")?,
            },
            "generic" => Adapter::Generic {
                generic: need(&mut t, "generic")?,
            },
            "paypal" => Adapter::PayPal {
                paypal: may(&mut t, "paypal")?,
            },
            "wechat" => Adapter::WeChat {
                wechat: need(&mut t, "wechat")?,
            },
            "alipay" => Adapter::Alipay {
                alipay: need(&mut t, "alipay")?,
            },
            other => return Err(TableError::UnknownAdapter(other.to_string())),
        };
        if let Some(key) = t.keys().next() {
            let takes = match &adapter {
                Adapter::Stripe { .. } => "`merchant_ref_key`",
                Adapter::Adyen { .. } => "an `adyen` table",
                Adapter::Generic { .. } => "a `generic` table",
                Adapter::PayPal { .. } => "a `paypal` table",
                Adapter::WeChat { .. } => "a `wechat` table",
                Adapter::Alipay { .. } => "an `alipay` table",
                Adapter::Sim | Adapter::Bakong => "nothing of its own",
            };
            return Err(TableError::UnknownField {
                key: key.clone(),
                adapter: adapter.name(),
                takes,
            });
        }
        Ok(adapter)
    }
}

pub(crate) type Table = serde_json::Map<String, serde_json::Value>;

/// A key the adapter requires.
pub(crate) fn need<T: serde::de::DeserializeOwned>(
    t: &mut Table,
    key: &str,
) -> Result<T, TableError> {
    match t.remove(key) {
        Some(v) => inner(v, key),
        None => Err(TableError::Missing(key.to_string())),
    }
}

/// A key the adapter may take, with a default.
pub(crate) fn may<T: serde::de::DeserializeOwned + Default>(
    t: &mut Table,
    key: &str,
) -> Result<T, TableError> {
    t.remove(key)
        .map_or_else(|| Ok(T::default()), |v| inner(v, key))
}

/// Deserialize one part of a provider's table; an error inside it reads
/// `path.inside: problem` so the file loader can name the whole field.
pub(crate) fn inner<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
    key: &str,
) -> Result<T, TableError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        let path = match (key, path.as_str()) {
            ("", ".") => String::new(),
            ("", p) => p.to_string(),
            (k, ".") => k.to_string(),
            (k, p) => format!("{k}.{p}"),
        };
        TableError::Field { path, message }
    })
}

/// A provider's table that does not read as its adapter's, naming the
/// field (the file loader adds the file and line).
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("adapter: expected a string, found {0}")]
    AdapterNotText(serde_json::Value),
    #[error("missing field `{0}`")]
    Missing(String),
    #[error(
        "adapter: unknown adapter `{0}`, expected one of `sim`, `stripe`, `adyen`, `generic`, \
         `bakong`, `paypal`, `wechat`, `alipay`"
    )]
    UnknownAdapter(String),
    #[error("unknown field `{key}` for the {adapter} adapter, which takes {takes}")]
    UnknownField {
        key: String,
        adapter: &'static str,
        takes: &'static str,
    },
    /// A value inside the table: `path: problem` (just the problem at the
    /// table's top).
    #[error("{}", at(.path, .message))]
    Field { path: String, message: String },
}

pub(crate) fn at(path: &str, message: &str) -> String {
    if path.is_empty() {
        message.to_string()
    } else {
        format!("{path}: {message}")
    }
}
