//! Findings of `canvas validate`: what is wrong, how bad, and where.

use serde::Serialize;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The canvas cannot run as written (or RAGFlow would crash on it).
    Error,
    /// It runs, but probably not as its author meant.
    Warning,
    /// Worth knowing; never a failure.
    Info,
}

impl Level {
    /// The lowercase name (`error`, `warning`, `info`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
        }
    }
}

/// One validation finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable code (`C001`...), documented in `docs/validate.md`.
    pub code: &'static str,
    /// Severity.
    pub level: Level,
    /// The component it is about, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// What is wrong: one lowercase sentence fragment.
    pub message: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// JSON pointer (RFC 6901) of the offending value, relative to the canvas DSL object
    /// (`""` for the whole document).
    pub pointer: String,
}

impl Finding {
    /// A finding without component or hint.
    pub fn new(code: &'static str, level: Level, message: impl Into<String>) -> Finding {
        Finding {
            code,
            level,
            component: None,
            message: message.into(),
            hint: None,
            pointer: String::new(),
        }
    }

    /// Set the component id.
    pub fn component(mut self, id: impl Into<String>) -> Finding {
        self.component = Some(id.into());
        self
    }

    /// Set the hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Finding {
        self.hint = Some(hint.into());
        self
    }

    /// Set the JSON pointer from its unescaped segments.
    pub fn at<S: AsRef<str>>(mut self, segments: &[S]) -> Finding {
        self.pointer = pointer(segments);
        self
    }
}

/// Build a JSON pointer from unescaped segments (`~` → `~0`, `/` → `~1`).
pub fn pointer<S: AsRef<str>>(segments: &[S]) -> String {
    let mut p = String::new();
    for s in segments {
        p.push('/');
        p.push_str(&s.as_ref().replace('~', "~0").replace('/', "~1"));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_escape_tilde_and_slash() {
        assert_eq!(
            pointer(&["components", "a/b~c", "obj"]),
            "/components/a~1b~0c/obj"
        );
        assert_eq!(pointer::<&str>(&[]), "");
        let v = serde_json::json!({"components": {"a/b~c": {"obj": 1}}});
        assert_eq!(
            v.pointer(&pointer(&["components", "a/b~c", "obj"])),
            Some(&serde_json::json!(1))
        );
    }
}
