//! `finality config check`: what a node would run with, before it runs.
//!
//! Parses and validates the file (errors name `FILE:LINE:COLUMN: field`),
//! builds what `serve` builds from it (tokens, providers, event
//! destinations: each reads the environment variables it names, and a
//! missing one is an error naming the variable), then prints the effective
//! configuration, every default filled in, with secrets masked: values of
//! keys that hold secrets, and a password inside a database URL.

use crate::config::Config;
use anyhow::anyhow;

/// Keys whose values are secrets when written inline.
fn secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    !k.ends_with("_env")
        && !k.ends_with("_envs")
        && ["secret", "password", "token", "api_key", "private_key"]
            .iter()
            .any(|s| k.contains(s))
}

/// A URL without its secrets, by its structure rather than by what looks
/// secret: the password of `user:PASSWORD@` (split at the *last* `@`, so a
/// password holding `@` is masked whole; the whole userinfo when it is one
/// token, `nats://TOKEN@host`), every path segment past the first (a push
/// or webhook URL's path often is a capability token:
/// `https://hooks.example/services/T0/B0/XXXX`), and every query value.
fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return mask_query(url);
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((auth, host)) => match auth.split_once(':') {
            Some((user, _)) => format!("{user}:****@{host}"),
            None => format!("****@{host}"),
        },
        None => authority.to_string(),
    };
    let path: String = path
        .split('/')
        .enumerate()
        .map(|(i, seg)| if i < 2 || seg.is_empty() { seg } else { "****" })
        .collect::<Vec<_>>()
        .join("/");
    let url = format!("{scheme}://{authority}{path}");
    match query {
        Some(q) => format!("{url}?{}", mask_pairs(q)),
        None => url,
    }
}

/// A template without a scheme (`{base_url}/v1/x?key=…`): its query values.
fn mask_query(text: &str) -> String {
    match text.split_once('?') {
        Some((head, q)) if q.contains('=') => format!("{head}?{}", mask_pairs(q)),
        _ => text.to_string(),
    }
}

/// `k=v&k=v` with every value masked, `${VAR}` references kept.
fn mask_pairs(q: &str) -> String {
    q.split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if v.starts_with("${") && v.ends_with('}') => format!("{k}={v}"),
            Some((k, _)) => format!("{k}=****"),
            None => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The `${VAR}` references in a value.
fn env_refs(v: &str) -> Vec<String> {
    v.split("${")
        .skip(1)
        .filter_map(|r| r.split_once('}').map(|(name, _)| name.to_string()))
        .collect()
}

/// Mask secrets in place; collect the environment variables named. Inside
/// `headers` every value is masked unless it is only `${VAR}` references.
fn walk(v: &mut toml::Value, key: &str, vars: &mut Vec<String>) {
    walk_in(v, key, false, vars);
}

fn walk_in(v: &mut toml::Value, key: &str, in_headers: bool, vars: &mut Vec<String>) {
    match v {
        toml::Value::Table(t) => {
            let headers = in_headers || key == "headers";
            for (k, v) in t.iter_mut() {
                walk_in(v, k, headers, vars);
            }
        }
        toml::Value::Array(a) => {
            for v in a.iter_mut() {
                walk_in(v, key, in_headers, vars);
            }
        }
        toml::Value::String(s) => {
            let refs = env_refs(s);
            vars.extend(refs.iter().cloned());
            let only_refs = !refs.is_empty()
                && s.split("${")
                    .skip(1)
                    .all(|r| r.split_once('}').is_some_and(|(_, rest)| rest.is_empty()))
                && s.starts_with("${");
            if key.ends_with("_env") || key.ends_with("_envs") {
                if !s.is_empty() {
                    vars.push(s.clone());
                }
            } else if (in_headers && !only_refs)
                || (secret_key(key) && !s.is_empty() && refs.is_empty())
            {
                *s = "****".into();
            } else if s.contains("://") || s.contains('?') {
                *s = mask_url(s);
            }
        }
        _ => {}
    }
}

pub fn run(config: &Config, path: Option<&std::path::Path>) -> anyhow::Result<()> {
    // What `serve` builds: each step reads the variables it needs.
    config.server.build_tokens()?;
    config.build_providers()?;
    for h in &config.events.http {
        if std::env::var(&h.secret_env).map_or(true, |v| v.is_empty()) {
            return Err(anyhow!(
                "events.http `{}`: {} (secret_env) is not set",
                h.name,
                h.secret_env
            ));
        }
    }
    let mut value = toml::Value::try_from(config)?;
    let mut vars = Vec::new();
    walk(&mut value, "", &mut vars);
    vars.sort();
    vars.dedup();
    let file = path.map_or_else(
        || {
            if std::path::Path::new(crate::config::DEFAULT_PATH).exists() {
                crate::config::DEFAULT_PATH.to_string()
            } else {
                "(no file: defaults)".to_string()
            }
        },
        |p| p.display().to_string(),
    );
    println!("# {file}: valid. The effective configuration, secrets masked:\n");
    print!("{}", toml::to_string_pretty(&value)?);
    println!("\n# Environment variables it names:");
    for v in &vars {
        match std::env::var(v) {
            Ok(s) if !s.is_empty() => println!("#   {v}: set ({} characters)", s.chars().count()),
            _ => println!("#   {v}: not set"),
        }
    }
    let warnings = warnings(config);
    if !warnings.is_empty() {
        println!("\n# Warnings:");
        for w in &warnings {
            println!("#   {w}");
            eprintln!("warning: {w}");
        }
    }
    Ok(())
}

/// What is valid but weaker than the operator may think: a generic
/// provider whose successes are not checked against the registered money.
fn warnings(config: &Config) -> Vec<String> {
    config
        .providers
        .iter()
        .filter_map(|(name, p)| match &p.adapter {
            finality_providers::config::Adapter::Generic { generic } => generic
                .money_unchecked()
                .map(|why| format!("providers.{name}.generic: {why}")),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_headers_and_tokens() {
        assert_eq!(mask_url("nats://s3cret@nats:4222"), "nats://****@nats:4222");
        assert_eq!(
            mask_url("postgres://db/f?user=app&password=x"),
            "postgres://db/f?user=****&password=****"
        );
        assert_eq!(mask_url("https://hook.example/x"), "https://hook.example/x");
        // Hostile: a password holding `@`, a token in a push URL's path, a
        // key in a generic adapter's URL template.
        assert_eq!(
            mask_url("postgres://app:p@ss@w0rd@db:5432/f"),
            "postgres://app:****@db:5432/f"
        );
        assert_eq!(
            mask_url("https://hooks.example/services/T0AB/B0CD/xyzSECRET"),
            "https://hooks.example/services/****/****/****"
        );
        assert_eq!(
            mask_url("{base_url}/v1/transfers/{provider_ref}?key=sk_live_9&v=${API_V}"),
            "{base_url}/v1/transfers/{provider_ref}?key=****&v=${API_V}"
        );
        let mut v: toml::Value = toml::from_str(
            "[providers.acme.headers]\nAuthorization = \"Bearer abc123\"\nX-Api-Key = \"${ACME_KEY}\"\n",
        )
        .unwrap();
        let mut vars = Vec::new();
        walk(&mut v, "", &mut vars);
        let text = toml::to_string(&v).unwrap();
        assert!(!text.contains("abc123"), "{text}");
        assert!(text.contains("${ACME_KEY}"), "{text}");
        assert_eq!(vars, ["ACME_KEY"]);
    }

    #[test]
    fn secrets_and_passwords_are_masked_names_are_not() {
        let mut v: toml::Value = toml::from_str(
            "[database]\nurl = \"postgres://app:hunter2@db:5432/f\"\nurl_env = \"DB_URL\"\n\
             [providers.x]\napi_key = \"sk_live_1\"\napi_key_env = \"X_KEY\"\nwebhook_secret_envs = [\"A\", \"B\"]\n",
        )
        .unwrap();
        let mut vars = Vec::new();
        walk(&mut v, "", &mut vars);
        let text = toml::to_string(&v).unwrap();
        assert!(
            !text.contains("hunter2") && !text.contains("sk_live_1"),
            "{text}"
        );
        assert!(text.contains("postgres://app:****@db:5432/f"), "{text}");
        vars.sort();
        assert_eq!(vars, ["A", "B", "DB_URL", "X_KEY"]);
    }
}
