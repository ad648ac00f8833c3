//! A PostgreSQL store's URL: `postgres://` or `postgresql://` as libpq reads it, plus
//! `schema=NAME` (ours: the schema that holds the store's tables, `canvas` by default;
//! `options=-csearch_path=NAME` names it too). What is shown of it never holds the
//! password.

use std::fmt;
use std::time::Duration;

use super::pg_err;
use crate::{Result, StoreError};

/// The schema used when the URL names none.
pub const DEFAULT_SCHEMA: &str = "canvas";
/// How long connecting may take, unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// PostgreSQL cuts longer identifiers, so two long names could meet.
const MAX_IDENT: usize = 63;

/// A parsed PostgreSQL store URL.
#[derive(Clone)]
pub struct PgUrl {
    pub(crate) config: postgres::Config,
    schema: String,
    shown: String,
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PgUrl").field(&self.shown).finish()
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl PgUrl {
    /// True when `s` names a PostgreSQL store (`postgres://…` or `postgresql://…`).
    pub fn is_postgres(s: &str) -> bool {
        let lower = s.trim_start().to_ascii_lowercase();
        lower.starts_with("postgres://") || lower.starts_with("postgresql://")
    }

    /// Parse a store URL. A missing password is taken from `$PGPASSWORD`.
    pub fn parse(url: &str) -> Result<PgUrl> {
        let url = url.trim();
        let shown = redact(url);
        let bad = |why: String| StoreError::BadUrl {
            url: shown.clone(),
            why,
        };
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (url, None),
        };
        let mut schema = None;
        let mut kept = Vec::new();
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            match pair.split_once('=') {
                Some(("schema", v)) => schema = Some(percent_decode(v).map_err(bad)?),
                _ if pair.is_empty() => {}
                _ => kept.push(pair),
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let mut config: postgres::Config = rest
            .parse()
            .map_err(|e| pg_err(&format!("reading the store URL {shown}"), e))?;
        let schema = schema
            .or_else(|| config.get_options().and_then(search_path))
            .unwrap_or_else(|| DEFAULT_SCHEMA.to_string());
        if schema.is_empty() || schema.len() > MAX_IDENT {
            return Err(bad(format!(
                "the schema name must be 1 to {MAX_IDENT} bytes long"
            )));
        }
        // The client has no TLS: say so, rather than let the handshake blame the server.
        if matches!(config.get_ssl_mode(), postgres::config::SslMode::Require) {
            return Err(bad(
                "sslmode=require: this build connects without TLS (use a tunnel or a private network)"
                    .into(),
            ));
        }
        if config.get_password().is_none() {
            if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
                config.password(pw.as_encoded_bytes());
            }
        }
        if config.get_application_name().is_none() {
            config.application_name("canvas");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        Ok(PgUrl {
            config,
            schema,
            shown,
        })
    }

    /// The schema holding the store's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The same server and database with another schema (tests isolate themselves so).
    pub fn with_schema(&self, schema: &str) -> PgUrl {
        PgUrl {
            schema: schema.to_string(),
            ..self.clone()
        }
    }
}

/// The first schema of a `search_path` set in libpq's `options` (`-c search_path=a,b`
/// or `-csearch_path=a`).
fn search_path(options: &str) -> Option<String> {
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let setting = match w.strip_prefix("-c") {
            Some("") => words.next().unwrap_or_default(),
            Some(s) => s,
            None => continue,
        };
        if let Some(v) = setting.strip_prefix("search_path=") {
            let first = v.split(',').next().unwrap_or_default().trim();
            let first = first.trim_matches('"');
            return Some(first.to_string()).filter(|s| !s.is_empty());
        }
    }
    None
}

/// `%XX` escapes decoded (as in a URL's query).
fn percent_decode(s: &str) -> std::result::Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("a bad %-escape in {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8"))
}

/// The URL with its password (in the authority, or a `password=` parameter) replaced by
/// `***`.
pub(crate) fn redact(url: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let mut out = match head.split_once("://") {
        Some((scheme, rest)) => {
            // The authority ends at the first `/`; its user info at its last `@`.
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let authority = match authority.rsplit_once('@') {
                Some((user_info, host)) => match user_info.split_once(':') {
                    Some((user, _)) => format!("{user}:***@{host}"),
                    None => format!("{user_info}@{host}"),
                },
                None => authority.to_string(),
            };
            format!("{scheme}://{authority}{path}")
        }
        None => head.to_string(),
    };
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://ada:s3cr%40t@db.example:5432/runs?schema=team"),
            "postgres://ada:***@db.example:5432/runs?schema=team"
        );
        assert_eq!(
            redact("postgresql://db/runs?user=ada&password=hunter2&sslmode=prefer"),
            "postgresql://db/runs?user=ada&password=***&sslmode=prefer"
        );
        assert_eq!(redact("postgres://ada@db/runs"), "postgres://ada@db/runs");
        // A password holding `@` or `/` is still hidden whole.
        assert_eq!(redact("postgres://ada:a@b@db/x"), "postgres://ada:***@db/x");
        let url = PgUrl::parse("postgres://ada:hunter2@127.0.0.1:1/x").unwrap();
        assert!(!format!("{url} {url:?}").contains("hunter2"));
        let e = PgUrl::parse("postgres://ada:hunter2@127.0.0.1:notaport/x").unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert!(!e.to_string().contains('\n'), "{e}");
    }

    #[test]
    fn the_schema_comes_from_the_url() {
        let at = |u: &str| PgUrl::parse(u).map(|p| p.schema().to_string());
        assert_eq!(at("postgres://h/db").unwrap(), DEFAULT_SCHEMA);
        assert_eq!(at("postgresql://h/db?schema=team_a").unwrap(), "team_a");
        assert_eq!(
            at("postgres://h/db?schema=a%20b&sslmode=disable").unwrap(),
            "a b"
        );
        assert_eq!(
            at("postgres://h/db?options=-csearch_path%3Dtests").unwrap(),
            "tests"
        );
        assert_eq!(
            at("postgres://h/db?options=-c%20search_path%3Dx,public").unwrap(),
            "x"
        );
        assert!(at("postgres://h/db?schema=").is_err());
        let e = at("postgres://h/db?sslmode=require").unwrap_err();
        assert!(e.to_string().contains("without TLS"), "{e}");
        assert!(at(&format!("postgres://h/db?schema={}", "s".repeat(64))).is_err());
        assert!(PgUrl::is_postgres("PostgreSQL://h/db"));
        assert!(!PgUrl::is_postgres("/tmp/postgres://x"));
        assert!(!PgUrl::is_postgres("canvas.db"));
    }
}
