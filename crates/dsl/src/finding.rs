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
    /// Whether `canvas run` refuses the canvas for it before anything is stored (unless
    /// `--no-validate`): every error but those RAGFlow itself meets only when the run
    /// reaches them ([`REACHED_ONLY`]).
    #[serde(skip)]
    pub stops_run: bool,
}

/// Error codes RAGFlow runs a canvas with, failing (or crashing, or looping) only when
/// the run reaches the offending component: a route or reference to a component that
/// does not exist (C013–C016, C030), an unknown global (C032, C033), a cycle (C021), an
/// Iteration or Loop that fails when it runs (C043, C045, C046). `run` runs them as
/// RAGFlow does (the conformance suite pins the events up to the failure) and warns.
pub const REACHED_ONLY: &[&str] = &[
    "C013", "C014", "C015", "C016", "C021", "C030", "C032", "C033", "C043", "C045", "C046",
];

impl Finding {
    /// A finding without component or hint; an error stops a run unless its code is in
    /// [`REACHED_ONLY`].
    pub fn new(code: &'static str, level: Level, message: impl Into<String>) -> Finding {
        Finding {
            code,
            level,
            component: None,
            message: message.into(),
            hint: None,
            pointer: String::new(),
            stops_run: level == Level::Error && !REACHED_ONLY.contains(&code),
        }
    }

    /// Say whether `canvas run` refuses the canvas for it (an error whose code is
    /// reached-only may still be one the run refuses, such as a `parent_id` naming no
    /// component at all, which compile rejects).
    pub fn stops_run(mut self, stops: bool) -> Finding {
        self.stops_run = stops;
        self
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
