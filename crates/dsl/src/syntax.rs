//! The reference syntax of canvas texts (`engine.md` §3.1): RAGFlow's regexes, shared by
//! the engine (resolution) and `lint` (static checks).

use std::sync::LazyLock;

use regex::Regex;

/// The reference pattern, case-insensitive (`variable_ref_patt_re`).
pub static REF_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?is)\{* *\{([a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+|sys\.[A-Za-z0-9_.]+|env\.[A-Za-z0-9_.]+)\} *\}*",
    )
    .expect("static regex")
});

/// The same pattern without IGNORECASE, as the streaming Message uses it.
pub static REF_RE_CASED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?s)\{* *\{([a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+|sys\.[A-Za-z0-9_.]+|env\.[A-Za-z0-9_.]+)\} *\}*",
    )
    .expect("static regex")
});

/// Iteration aliases `{item}`, `{index}`, `{result}`.
pub static ALIAS_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\{* *\{(item|index|result)\} *\}*").expect("static regex"));

/// A whole string that is one `cpn@var` reference, without braces.
pub static BARE_CPN_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+$").expect("static regex"));
