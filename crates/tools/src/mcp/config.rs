//! MCP server records: the `--mcp-config` YAML file (servers by the canvas's
//! `mcp_id`), servers carried inline by a canvas `mcp` entry, and the headers sent
//! to a server (RAGFlow's `${var}` substitution and empty-value rule, §7.5).

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use super::McpError;

/// MCP servers by id.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    servers: IndexMap<String, McpServer>,
}

/// One MCP server: where it is and how to talk to it.
#[derive(Clone, PartialEq)]
pub struct McpServer {
    /// The canvas's `mcp_id`.
    pub id: String,
    /// How it is reached.
    pub endpoint: McpEndpoint,
    /// Values for `${VAR}` in headers, args and env (before the process environment).
    pub variables: IndexMap<String, String>,
}

/// How a server is reached (`Debug` shows no header, env or variable values: they
/// hold tokens).
#[derive(Clone, PartialEq)]
pub enum McpEndpoint {
    /// A remote server over HTTP.
    Http {
        /// The MCP URL (the SSE URL for the legacy transport).
        url: String,
        /// Which HTTP transport.
        transport: McpTransport,
        /// Headers as configured, `${VAR}` unresolved.
        headers: IndexMap<String, String>,
    },
    /// A local program speaking MCP on stdin/stdout (configuration file only).
    Stdio {
        /// The program.
        command: String,
        /// Its arguments (`${VAR}` resolved at start).
        args: Vec<String>,
        /// Extra environment (`${VAR}` resolved at start).
        env: IndexMap<String, String>,
    },
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpEndpoint::Http {
                url,
                transport,
                headers,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("transport", transport)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
            McpEndpoint::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", &args.len())
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("id", &self.id)
            .field("endpoint", &self.endpoint)
            .field("variables", &self.variables.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// RAGFlow's `server_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpTransport {
    /// MCP streamable HTTP (`streamable-http`).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (`sse`).
    Sse,
}

impl McpTransport {
    /// Parse a transport name as RAGFlow and common configs spell it.
    fn parse(s: &str) -> Option<McpTransport> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "streamable-http" | "streamablehttp" | "http" => Some(McpTransport::StreamableHttp),
            "sse" => Some(McpTransport::Sse),
            _ => None,
        }
    }
}

/// A YAML scalar taken as text (tokens and ports are often written unquoted).
#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
    Null(()),
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Scalar {
    fn text(self) -> Option<String> {
        match self {
            Scalar::Null(()) => None,
            Scalar::Bool(b) => Some(b.to_string()),
            Scalar::Int(i) => Some(i.to_string()),
            Scalar::Float(f) => Some(f.to_string()),
            Scalar::Str(s) => Some(s),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    servers: IndexMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    url: Option<String>,
    #[serde(alias = "type", alias = "server_type")]
    transport: Option<String>,
    #[serde(default)]
    headers: IndexMap<String, Scalar>,
    #[serde(default)]
    variables: IndexMap<String, Scalar>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<Scalar>,
    #[serde(default)]
    env: IndexMap<String, Scalar>,
}

fn texts(m: IndexMap<String, Scalar>) -> IndexMap<String, String> {
    m.into_iter()
        .filter_map(|(k, v)| v.text().map(|v| (k, v)))
        .collect()
}

impl RawServer {
    fn build(self, id: &str) -> Result<McpServer, String> {
        let variables = texts(self.variables);
        let endpoint = match (self.url, self.command) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "server {id:?} has both `url` and `command`: keep one"
                ));
            }
            (None, None) => {
                return Err(format!(
                    "server {id:?} needs `url` (remote server) or `command` (local program)"
                ));
            }
            (Some(url), None) => {
                if !self.args.is_empty() || !self.env.is_empty() {
                    return Err(format!(
                        "server {id:?}: `args` and `env` are for `command` servers"
                    ));
                }
                let transport = match self.transport.as_deref() {
                    None => McpTransport::StreamableHttp,
                    Some(t) => McpTransport::parse(t).ok_or_else(|| {
                        format!(
                            "server {id:?}: unknown transport {t:?} (use streamable-http or sse)"
                        )
                    })?,
                };
                match reqwest::Url::parse(url.trim()) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                    _ => {
                        return Err(format!(
                            "server {id:?}: `url` {url:?} is not an http(s) URL"
                        ));
                    }
                }
                McpEndpoint::Http {
                    url: url.trim().to_string(),
                    transport,
                    headers: texts(self.headers),
                }
            }
            (None, Some(command)) => {
                if !self.headers.is_empty() {
                    return Err(format!("server {id:?}: `headers` are for `url` servers"));
                }
                if let Some(t) = self.transport.as_deref()
                    && t.trim() != "stdio"
                {
                    return Err(format!(
                        "server {id:?}: a `command` server speaks stdio, not {t:?}"
                    ));
                }
                if command.trim().is_empty() {
                    return Err(format!("server {id:?}: `command` is empty"));
                }
                McpEndpoint::Stdio {
                    command,
                    args: self.args.into_iter().filter_map(Scalar::text).collect(),
                    env: texts(self.env),
                }
            }
        };
        Ok(McpServer {
            id: id.to_string(),
            endpoint,
            variables,
        })
    }
}

impl McpConfig {
    /// Read the `--mcp-config` YAML file.
    pub fn load(path: &Path) -> Result<McpConfig, McpError> {
        let err = |reason: String| McpError::Config {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        McpConfig::parse(&text).map_err(err)
    }

    /// Parse the configuration text (YAML, or JSON which is YAML too).
    pub fn parse(text: &str) -> Result<McpConfig, String> {
        if text.trim().is_empty() {
            return Ok(McpConfig::default());
        }
        let raw: RawFile = yaml_serde::from_str(text).map_err(|e| e.to_string())?;
        let mut servers = IndexMap::new();
        for (id, s) in raw.servers {
            let server = s.build(&id)?;
            servers.insert(id, server);
        }
        Ok(McpConfig { servers })
    }

    /// The server the canvas calls `id`.
    pub fn server(&self, id: &str) -> Option<&McpServer> {
        self.servers.get(id)
    }

    /// The server the canvas calls `id`, or an error telling how to configure it.
    pub fn get(&self, id: &str) -> Result<&McpServer, McpError> {
        self.server(id).ok_or_else(|| McpError::UnknownServer {
            server: id.to_string(),
        })
    }

    /// Server ids, in file order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// A server given inline in a canvas `mcp` entry (`url` with `server_type` /
    /// `transport`, `headers`, `variables` next to `mcp_id`). Only remote servers: a
    /// canvas never gets to start a local program. `None` when the entry carries no
    /// usable URL or names an unknown transport.
    pub fn from_entry(entry: &Value) -> Option<McpServer> {
        let url = entry.get("url")?.as_str()?.trim();
        let parsed = reqwest::Url::parse(url).ok()?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return None;
        }
        let transport = ["server_type", "transport", "type"]
            .iter()
            .find_map(|k| entry.get(*k).and_then(Value::as_str))
            .map_or(Some(McpTransport::StreamableHttp), McpTransport::parse)?;
        let id = entry
            .get("mcp_id")
            .or_else(|| entry.get("id"))
            .and_then(Value::as_str)
            .unwrap_or("inline")
            .to_string();
        Some(McpServer {
            id,
            endpoint: McpEndpoint::Http {
                url: url.to_string(),
                transport,
                headers: string_map(entry.get("headers")),
            },
            variables: string_map(entry.get("variables")),
        })
    }
}

/// A JSON object (or a JSON string holding one, as RAGFlow's database stores them)
/// as text values; non-scalar values are dropped.
fn string_map(v: Option<&Value>) -> IndexMap<String, String> {
    let parsed;
    let obj = match v {
        Some(Value::Object(o)) => o,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) => {
                parsed = o;
                &parsed
            }
            _ => return IndexMap::new(),
        },
        _ => return IndexMap::new(),
    };
    obj.iter()
        .filter_map(|(k, v)| {
            let t = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            Some((k.clone(), t))
        })
        .collect()
}

/// Header names the MCP transports set themselves; configured values would
/// conflict with the protocol, so they are left out.
const RESERVED: &[&str] = &["accept", "mcp-session-id", "last-event-id", "content-type"];

impl McpServer {
    /// `${VAR}` / `$VAR` in `text` replaced from the server's variables, then the
    /// process environment (Python `Template` syntax, `$$` is a dollar). An unknown
    /// `${VAR}` is an error; an unknown bare `$VAR` stays as written, as RAGFlow's
    /// `safe_substitute` leaves it.
    pub fn substitute(&self, text: &str) -> Result<String, McpError> {
        substitute(text, |name| {
            self.variables
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
        })
        .map_err(|var| McpError::UnknownVariable {
            server: self.id.clone(),
            var,
        })
    }

    /// The headers sent to the server: the configured ones with variables
    /// substituted, dropping those whose name is blank or whose value is blank or
    /// only "Bearer" (RAGFlow strips the characters of "Bearer" from both ends, so a
    /// template whose token resolved to nothing is not sent), then `custom` (the
    /// request's `custom_header`), which replaces a configured header of the same name.
    pub fn headers(&self, custom: &[(String, String)]) -> Result<Vec<(String, String)>, McpError> {
        let configured = match &self.endpoint {
            McpEndpoint::Http { headers, .. } => headers,
            McpEndpoint::Stdio { .. } => return Ok(Vec::new()),
        };
        let mut out: Vec<(String, String)> = Vec::new();
        let mut put = |name: String, value: String| {
            if RESERVED.contains(&name.trim().to_ascii_lowercase().as_str()) {
                return;
            }
            out.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            out.push((name, value));
        };
        for (name, value) in configured {
            let name = self.substitute(name)?;
            let value = self.substitute(value)?;
            let bare = value
                .trim()
                .trim_matches(|c| matches!(c, 'B' | 'e' | 'a' | 'r'));
            if name.trim().is_empty() || bare.is_empty() {
                continue;
            }
            put(name.trim().to_string(), value);
        }
        for (name, value) in custom {
            if !name.trim().is_empty() {
                put(name.trim().to_string(), value.clone());
            }
        }
        for (name, value) in &out {
            let ok = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
                && reqwest::header::HeaderValue::from_str(value).is_ok();
            if !ok {
                return Err(McpError::BadHeader {
                    server: self.id.clone(),
                    name: name.clone(),
                });
            }
        }
        Ok(out)
    }
}

/// Python `string.Template` substitution; `Err(name)` for an unknown `${name}`.
fn substitute(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let ident_len = |s: &str| -> usize {
        let mut n = 0;
        for (i, c) in s.char_indices() {
            let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
            if !ok {
                break;
            }
            n = i + c.len_utf8();
        }
        n
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('{') {
            let n = ident_len(inner);
            if n > 0 && inner[n..].starts_with('}') {
                let name = &inner[..n];
                out.push_str(&lookup(name).ok_or_else(|| name.to_string())?);
                rest = &inner[n + 1..];
            } else {
                out.push('$');
                rest = after;
            }
        } else {
            let n = ident_len(after);
            match (n > 0).then(|| lookup(&after[..n])).flatten() {
                Some(v) => out.push_str(&v),
                None => out.push_str(&rest[pos..pos + 1 + n]),
            }
            rest = &after[n..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(text: &str) -> Result<String, String> {
        substitute(text, |n| match n {
            "TOKEN" => Some("abc".into()),
            "_x1" => Some("X".into()),
            _ => None,
        })
    }

    #[test]
    fn template_substitution_follows_python() {
        assert_eq!(vars("Bearer ${TOKEN}").unwrap(), "Bearer abc");
        assert_eq!(vars("$TOKEN-$_x1.").unwrap(), "abc-X.");
        assert_eq!(vars("cost $$5 ${_x1}").unwrap(), "cost $5 X");
        // Unknown bare names and invalid placeholders stay as written.
        assert_eq!(vars("$nope $ ${a-b} $1").unwrap(), "$nope $ ${a-b} $1");
        assert_eq!(vars("${MISSING}").unwrap_err(), "MISSING");
        assert_eq!(vars("tail $").unwrap(), "tail $");
        assert_eq!(vars("é${TOKEN}é").unwrap(), "éabcé");
    }

    #[test]
    fn loads_http_and_stdio_servers() {
        let cfg = McpConfig::parse(
            "servers:\n  weather:\n    url: https://mcp.example.com/mcp\n    transport: sse\n    headers: {Authorization: \"Bearer ${WEATHER_TOKEN}\", X-Num: 7}\n    variables: {WEATHER_TOKEN: 12345}\n  files:\n    command: python3\n    args: [server.py, 3]\n    env: {KEY: value}\n",
        )
        .unwrap();
        assert_eq!(cfg.ids().collect::<Vec<_>>(), ["weather", "files"]);
        let w = cfg.server("weather").unwrap();
        assert_eq!(w.variables["WEATHER_TOKEN"], "12345");
        let McpEndpoint::Http {
            url,
            transport,
            headers,
        } = &w.endpoint
        else {
            panic!("not http: {w:?}")
        };
        assert_eq!(url, "https://mcp.example.com/mcp");
        assert_eq!(*transport, McpTransport::Sse);
        assert_eq!(headers["X-Num"], "7");
        assert_eq!(
            w.headers(&[]).unwrap(),
            vec![
                ("Authorization".to_string(), "Bearer 12345".to_string()),
                ("X-Num".to_string(), "7".to_string())
            ]
        );
        let f = cfg.server("files").unwrap();
        assert_eq!(
            f.endpoint,
            McpEndpoint::Stdio {
                command: "python3".into(),
                args: vec!["server.py".into(), "3".into()],
                env: [("KEY".to_string(), "value".to_string())]
                    .into_iter()
                    .collect(),
            }
        );
        assert!(cfg.server("nope").is_none());
        assert!(
            cfg.get("nope")
                .unwrap_err()
                .to_string()
                .contains("\"nope\" is not configured")
        );
        // Transport defaults to streamable HTTP.
        let d = McpConfig::parse("servers: {a: {url: 'http://h/mcp'}}").unwrap();
        assert!(matches!(
            d.server("a").unwrap().endpoint,
            McpEndpoint::Http {
                transport: McpTransport::StreamableHttp,
                ..
            }
        ));
        assert!(McpConfig::parse("  \n").unwrap().is_empty());
        // Tokens stay out of debug output.
        let shown = format!("{cfg:?}");
        assert!(shown.contains("WEATHER_TOKEN") && shown.contains("Authorization"));
        assert!(
            !shown.contains("12345") && !shown.contains("value"),
            "{shown}"
        );
    }

    #[test]
    fn rejects_malformed_configs_with_the_reason() {
        for (text, needle) in [
            ("servers: {a: {url: 'http://h', command: x}}", "both"),
            ("servers: {a: {}}", "needs `url`"),
            (
                "servers: {a: {url: 'http://h', transport: ws}}",
                "unknown transport",
            ),
            ("servers: {a: {url: 'ftp://h'}}", "not an http(s) URL"),
            (
                "servers: {a: {url: 'http://h', args: [x]}}",
                "for `command`",
            ),
            ("servers: {a: {command: x, headers: {A: b}}}", "for `url`"),
            (
                "servers: {a: {url: 'http://h', header: {}}}",
                "unknown field `header`",
            ),
            ("server: {}", "unknown field `server`"),
        ] {
            let e = McpConfig::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mcp.yaml");
        std::fs::write(&p, "servers: {a: {}}").unwrap();
        let e = McpConfig::load(&p).unwrap_err().to_string();
        assert!(
            e.starts_with("MCP config ") && e.contains("mcp.yaml"),
            "{e}"
        );
        let e = McpConfig::load(&dir.path().join("missing.yaml")).unwrap_err();
        assert!(matches!(e, McpError::Config { .. }));
    }

    fn http(headers: &[(&str, &str)], variables: &[(&str, &str)]) -> McpServer {
        McpServer {
            id: "s1".into(),
            endpoint: McpEndpoint::Http {
                url: "http://h/mcp".into(),
                transport: McpTransport::StreamableHttp,
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            },
            variables: variables
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn headers_skip_blank_and_bearer_only_values_and_take_custom_last() {
        let s = http(
            &[
                ("Authorization", "Bearer ${tok}"),
                ("X-Empty", "${empty}"),
                ("  ", "v"),
                ("X-Keep", "abc"),
                ("Accept", "text/plain"),
            ],
            &[("tok", ""), ("empty", "  ")],
        );
        let custom = [
            ("x-keep".to_string(), "from request".to_string()),
            ("X-Req".to_string(), "1".to_string()),
        ];
        assert_eq!(
            s.headers(&custom).unwrap(),
            vec![
                ("x-keep".to_string(), "from request".to_string()),
                ("X-Req".to_string(), "1".to_string())
            ]
        );
        let s = http(&[("Authorization", "Bearer ${tok}")], &[("tok", "t0k")]);
        assert_eq!(
            s.headers(&[]).unwrap(),
            vec![("Authorization".to_string(), "Bearer t0k".to_string())]
        );
    }

    #[test]
    fn unknown_variables_and_bad_headers_are_named() {
        let s = http(
            &[("Authorization", "Bearer ${CANVAS_TEST_SURELY_UNSET_VAR}")],
            &[],
        );
        let e = s.headers(&[]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("\"s1\"")
                && msg.contains("${CANVAS_TEST_SURELY_UNSET_VAR}")
                && msg.contains("variables:"),
            "{msg}"
        );
        let s = http(&[("X-A", "line\nbreak")], &[]);
        assert!(matches!(s.headers(&[]), Err(McpError::BadHeader { name, .. }) if name == "X-A"));
        // The process environment is the fallback.
        let path = std::env::var("PATH").unwrap_or_default();
        let s = http(&[("X-Path", "${PATH}")], &[]);
        if !path.trim().is_empty() {
            assert_eq!(s.headers(&[]).unwrap()[0].1, path);
        }
    }

    #[test]
    fn inline_entries_give_remote_servers_only() {
        let s = McpConfig::from_entry(&json!({"mcp_id": "m1", "url": " https://x.example/sse ",
            "server_type": "sse", "headers": "{\"Authorization\": \"Bearer ${k}\"}",
            "variables": {"k": "v", "tools": {"a": 1}}, "tools": {}}))
        .unwrap();
        assert_eq!(s.id, "m1");
        assert_eq!(s.variables.len(), 1);
        assert_eq!(
            s.endpoint,
            McpEndpoint::Http {
                url: "https://x.example/sse".into(),
                transport: McpTransport::Sse,
                headers: [("Authorization".to_string(), "Bearer ${k}".to_string())]
                    .into_iter()
                    .collect(),
            }
        );
        assert_eq!(s.headers(&[]).unwrap()[0].1, "Bearer v");
        assert!(McpConfig::from_entry(&json!({"mcp_id": "m", "tools": {}})).is_none());
        assert!(McpConfig::from_entry(&json!({"mcp_id": "m", "command": "sh"})).is_none());
        assert!(McpConfig::from_entry(&json!({"url": "file:///etc/passwd"})).is_none());
        assert!(McpConfig::from_entry(&json!({"url": "http://h", "server_type": "ws"})).is_none());
        let d = McpConfig::from_entry(&json!({"url": "http://h/mcp"})).unwrap();
        assert_eq!(d.id, "inline");
    }
}
