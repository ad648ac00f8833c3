//! Reference rules: every `{cpn@var}`, `{sys.x}`, `{env.x}` and bare selector in the
//! params must name something that exists, written in lower case (C030–C033). Also the
//! reference scanner the other rule files use.

use std::cell::OnceCell;
use std::collections::HashSet;

use serde_json::Value;

use super::Catalog;
use super::graph::{Canvas, Comp};
use crate::finding::{Finding, Level};
use crate::model::Object;
use crate::syntax::{REF_PATTERN, is_bare_cpn_ref};

/// The `sys.*` names RAGFlow always defines (`engine.md` §1.1).
const SYS_NAMES: &[&str] = &[
    "query",
    "user_id",
    "conversation_turns",
    "files",
    "history",
    "date",
];

/// Outputs every component has (set by the engine itself).
const ALWAYS: &[&str] = &["_ERROR", "_created_time", "_elapsed_time"];

/// What a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target<'s> {
    /// Output `var` (possibly a dotted path) of component `id`.
    Cpn { id: &'s str, var: &'s str },
    /// `sys.<name>`.
    Sys(&'s str),
    /// `env.<name>`.
    Env(&'s str),
    /// `SYS.x` / `Env.x`: found by RAGFlow's case-insensitive scan, then not found.
    WrongCase,
}

/// One reference as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ref<'s> {
    /// What it names.
    pub(super) target: Target<'s>,
    /// The expression (`cpn@var`, `sys.query`), without braces.
    pub(super) expr: &'s str,
    /// Written in braces inside a text (else: the whole string is a bare selector).
    pub(super) braced: bool,
}

impl Ref<'_> {
    /// The reference as the user wrote it, for messages.
    fn shown(&self) -> String {
        if self.braced {
            format!("{{{}}}", self.expr)
        } else {
            self.expr.to_owned()
        }
    }
}

/// Classify the expression captured by `REF_PATTERN` (group 1).
fn classify(expr: &str) -> Target<'_> {
    if let Some((id, var)) = expr.split_once('@') {
        Target::Cpn { id, var }
    } else if let Some(name) = expr.strip_prefix("sys.") {
        Target::Sys(name)
    } else if let Some(name) = expr.strip_prefix("env.") {
        Target::Env(name)
    } else {
        Target::WrongCase
    }
}

/// The references in `s`: its brace references or, when it has none, the whole string as
/// a bare selector. A bare `cpn@var` counts only when `cpn` has a `:` or is `begin` (so an
/// e-mail address is not a reference); a bare `sys.x`/`env.x` must be lower-case.
pub(super) fn refs_in(s: &str) -> Vec<Ref<'_>> {
    // Most strings of a canvas hold no brace: no need to run the pattern on them.
    if !s.contains('{') {
        return bare(s.trim_matches(' ')).into_iter().collect();
    }
    let braced: Vec<Ref<'_>> = REF_PATTERN
        .find_iter(s)
        .map(|m| Ref {
            target: classify(m.group()),
            expr: m.group(),
            braced: true,
        })
        .collect();
    if !braced.is_empty() {
        return braced;
    }
    bare(s.trim_matches(' ')).into_iter().collect()
}

/// `s` as a bare selector, if it is one.
fn bare(s: &str) -> Option<Ref<'_>> {
    let target = if s.contains('@') && is_bare_cpn_ref(s) {
        let (id, var) = s.split_once('@')?;
        (id.contains(':') || id == "begin").then_some(Target::Cpn { id, var })?
    } else {
        let name_ok = |n: &str| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        };
        if let Some(n) = s.strip_prefix("sys.").filter(|n| name_ok(n)) {
            Target::Sys(n)
        } else if let Some(n) = s.strip_prefix("env.").filter(|n| name_ok(n)) {
            Target::Env(n)
        } else {
            return None;
        }
    };
    Some(Ref {
        target,
        expr: s,
        braced: false,
    })
}

/// A step of a path inside the params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seg<'v> {
    /// An object key.
    Key(&'v str),
    /// An array index.
    Idx(usize),
}

/// The pointer segments of `segs` inside the params of `comp`.
pub(super) fn param_path(comp: &Comp<'_>, segs: &[Seg<'_>]) -> Vec<String> {
    let mut p = comp.param_path(&[]);
    p.extend(segs.iter().map(|s| match s {
        Seg::Key(k) => (*k).to_owned(),
        Seg::Idx(i) => i.to_string(),
    }));
    p
}

/// Call `f` with every reference in `params` and where its string is. `outputs` hold run
/// results, not configuration, so only their `ref` fields (Iteration) are read.
pub(super) fn for_each_ref<'v>(params: &'v Object, f: &mut dyn FnMut(Ref<'v>, &[Seg<'v>])) {
    let mut path = Vec::new();
    for (k, v) in params {
        path.push(Seg::Key(k.as_str()));
        if k == "outputs" {
            for (name, out) in v.as_object().into_iter().flatten() {
                if let Some(r) = out.get("ref") {
                    path.push(Seg::Key(name.as_str()));
                    path.push(Seg::Key("ref"));
                    walk(r, &mut path, f);
                    path.truncate(1);
                }
            }
        } else {
            walk(v, &mut path, f);
        }
        path.pop();
    }
}

/// Visit every string under `v` (JSON nesting is bounded by the parser).
fn walk<'v>(v: &'v Value, path: &mut Vec<Seg<'v>>, f: &mut dyn FnMut(Ref<'v>, &[Seg<'v>])) {
    match v {
        Value::String(s) => {
            for r in refs_in(s) {
                f(r, path);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                path.push(Seg::Idx(i));
                walk(x, path, f);
                path.pop();
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                path.push(Seg::Key(k.as_str()));
                walk(x, path, f);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The `sys.*` and `env.*` names a canvas defines.
pub(super) struct Known<'a> {
    sys: HashSet<&'a str>,
    env: HashSet<&'a str>,
}

impl<'a> Known<'a> {
    /// Collect them: RAGFlow's `sys.*` defaults, the `sys.*`/`env.*` keys of `globals`,
    /// and the names declared in `variables` (object keys, `.name` fields, or a list).
    pub(super) fn new(c: &Canvas<'a>) -> Known<'a> {
        let mut sys: HashSet<&'a str> = SYS_NAMES.iter().copied().collect();
        let mut env = HashSet::new();
        for k in c
            .doc
            .get("globals")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            if let Some(n) = k.strip_prefix("sys.") {
                sys.insert(n);
            } else if let Some(n) = k.strip_prefix("env.") {
                env.insert(n);
            }
        }
        let name = |v: &'a Value| v.get("name").and_then(Value::as_str);
        match c.doc.get("variables") {
            Some(Value::Object(vars)) => {
                for (k, v) in vars {
                    env.insert(k.as_str());
                    env.extend(name(v));
                }
            }
            Some(Value::Array(vars)) => env.extend(vars.iter().filter_map(name)),
            _ => {}
        }
        Known { sys, env }
    }

    /// Whether `sys.<name>` is defined (a dotted name when a prefix at a `.` is).
    pub(super) fn sys(&self, name: &str) -> bool {
        known(&self.sys, name)
    }

    /// Whether `env.<name>` is defined (a dotted name when a prefix at a `.` is).
    pub(super) fn env(&self, name: &str) -> bool {
        known(&self.env, name)
    }
}

/// `name` or one of its prefixes ending before a `.` is in `set`.
fn known(set: &HashSet<&str>, name: &str) -> bool {
    set.contains(name)
        || name
            .match_indices('.')
            .any(|(i, _)| set.contains(&name[..i]))
}

/// The outputs each component can set, asked of the catalog at most once per component
/// (`None` inside: they cannot be known statically).
struct Outputs<'c> {
    catalog: &'c dyn Catalog,
    cache: Vec<OnceCell<Option<HashSet<String>>>>,
}

impl Outputs<'_> {
    /// The outputs of component `i`, or `None` when they cannot be known statically.
    fn of(&self, c: &Canvas<'_>, i: usize) -> Option<&HashSet<String>> {
        self.cache[i]
            .get_or_init(|| {
                let comp = &c.comps[i];
                let names = self.catalog.outputs(comp.class?, comp.params)?;
                Some(names.into_iter().collect())
            })
            .as_ref()
    }
}

/// Run every reference rule.
pub(super) fn check(c: &Canvas<'_>, catalog: &dyn Catalog, out: &mut Vec<Finding>) {
    let known = Known::new(c);
    let outputs = Outputs {
        catalog,
        cache: (0..c.comps.len()).map(|_| OnceCell::new()).collect(),
    };
    for comp in &c.comps {
        for_each_ref(comp.params, &mut |r, segs| {
            if let Some(f) = check_ref(c, &known, &outputs, r) {
                out.push(f.component(comp.id).at(&param_path(comp, segs)));
            }
        });
    }
}

/// C030–C033 for one reference: RAGFlow resolves references in the scheduler, outside
/// any error handling, so every one of these crashes the run (C031 reads as empty).
fn check_ref(
    c: &Canvas<'_>,
    known: &Known<'_>,
    outputs: &Outputs<'_>,
    r: Ref<'_>,
) -> Option<Finding> {
    let shown = r.shown();
    match r.target {
        Target::Cpn { id, var } => {
            let Some(i) = c.index(id) else {
                return Some(unknown_component(c, &shown, id));
            };
            let root = var.split('.').next().unwrap_or(var);
            if ALWAYS.contains(&root) {
                return None;
            }
            let have = outputs.of(c, i)?;
            if have.contains(root) {
                return None;
            }
            let mut names: Vec<&str> = have.iter().map(String::as_str).collect();
            names.sort_unstable();
            let class = c.comps[i].class.unwrap_or("?");
            Some(
                Finding::new(
                    "C031",
                    Level::Warning,
                    format!("reference `{shown}`: `{id}` has no output `{root}`"),
                )
                .hint(if names.is_empty() {
                    format!("`{id}` ({class}) sets no outputs of its own; the reference reads as empty")
                } else {
                    format!("`{id}` ({class}) sets {}; anything else reads as empty", ticked(&names))
                }),
            )
        }
        Target::Sys(name) if !known.sys(name) => Some(
            Finding::new(
                "C032",
                Level::Error,
                format!("reference `{shown}` names unknown global `sys.{name}`"),
            )
            .hint(format!(
                "RAGFlow crashes on it; use one of {}, or add `sys.{name}` to `globals`",
                ticked(&SYS_NAMES.iter().map(|n| format!("sys.{n}")).collect::<Vec<_>>())
            )),
        ),
        Target::Env(name) if !known.env(name) => Some(
            Finding::new(
                "C032",
                Level::Error,
                format!("reference `{shown}` names undeclared conversation variable `env.{name}`"),
            )
            .hint(format!(
                "RAGFlow crashes on it; declare `{name}` in `variables` (and `env.{name}` in `globals`)"
            )),
        ),
        Target::WrongCase => Some(
            Finding::new(
                "C033",
                Level::Error,
                format!("reference `{shown}` is not lower-case"),
            )
            .hint(format!(
                "write it lowercase (`{}`): RAGFlow finds it case-insensitively, then crashes looking it up",
                lower_prefix(&shown)
            )),
        ),
        Target::Sys(_) | Target::Env(_) => None,
    }
}

/// C030 with a suggestion: an id differing only in case first, else the most similar
/// existing id.
fn unknown_component(c: &Canvas<'_>, shown: &str, id: &str) -> Finding {
    let f = Finding::new(
        "C030",
        Level::Error,
        format!("reference `{shown}` names unknown component `{id}`"),
    );
    if let Some(x) = c.comps.iter().find(|x| x.id.eq_ignore_ascii_case(id)) {
        return f.hint(format!("did you mean `{}`? ids are case-sensitive", x.id));
    }
    match crate::suggest::closest(id, c.comps.iter().map(|x| x.id)) {
        Some(near) => f.hint(format!(
            "did you mean `{near}`? RAGFlow crashes on a reference to a component that does not exist"
        )),
        None => {
            f.hint("fix the id; RAGFlow crashes on a reference to a component that does not exist")
        }
    }
}

/// `{SYS.query}` → `{sys.query}`.
fn lower_prefix(shown: &str) -> String {
    let start = usize::from(shown.starts_with('{'));
    match shown.get(start..start + 4) {
        Some(p) => format!(
            "{}{}{}",
            &shown[..start],
            p.to_ascii_lowercase(),
            &shown[start + 4..]
        ),
        None => shown.to_owned(),
    }
}

/// `a`, `b`, `c` in backticks.
pub(super) fn ticked<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(|n| format!("`{}`", n.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{base, cpn, only, run, with};
    use super::*;

    #[test]
    fn scanner_reads_braces_then_bare_selectors() {
        let r = refs_in("a {X:1@y.0} {{sys.query}} {item} { env.n }");
        let t: Vec<_> = r.iter().map(|r| r.target).collect();
        assert_eq!(
            t,
            [
                Target::Cpn {
                    id: "X:1",
                    var: "y.0"
                },
                Target::Sys("query")
            ]
        );
        assert_eq!(refs_in("{Env.x}")[0].target, Target::WrongCase);
        assert_eq!(
            refs_in("UserFillUp:Menu@demo")[0].target,
            Target::Cpn {
                id: "UserFillUp:Menu",
                var: "demo"
            }
        );
        assert_eq!(
            refs_in("begin@x")[0].target,
            Target::Cpn {
                id: "begin",
                var: "x"
            }
        );
        assert_eq!(refs_in(" sys.files.0 ")[0].target, Target::Sys("files.0"));
        for not_a_ref in [
            "kkk@ragflow.com",
            "a@b",
            "SYS.query",
            "sys.",
            "env.a b",
            "hello",
            "",
        ] {
            assert_eq!(refs_in(not_a_ref), [], "{not_a_ref}");
        }
    }

    #[test]
    fn c030_unknown_component_in_text_and_selector() {
        let doc = with(
            "Switch:S",
            json!({"Switch:S": cpn("Switch", json!({
                "conditions": [{"items": [{"cpn_id": "UserFillUp:Gone@x", "operator": "=", "value": "1"}],
                                "logical_operator": "and", "to": ["Message:M"]}],
                "end_cpn_ids": ["Message:N"]}), &["Message:M", "Message:N"]),
                "Message:N": cpn("Message", json!({"content": ["{message:m@content} {Message:M@content}"]}), &[])}),
        );
        assert_eq!(
            only(&doc, "C030"),
            [
                (
                    "C030",
                    "/components/Switch:S/obj/params/conditions/0/items/0/cpn_id".to_owned()
                ),
                (
                    "C030",
                    "/components/Message:N/obj/params/content/0".to_owned()
                ),
            ]
        );
        let f = &run(&doc)
            .into_iter()
            .filter(|f| f.code == "C030")
            .collect::<Vec<_>>()[1];
        assert_eq!(
            f.message,
            "reference `{message:m@content}` names unknown component `message:m`"
        );
        assert_eq!(
            f.hint.as_deref(),
            Some("did you mean `Message:M`? ids are case-sensitive")
        );
        assert_eq!(only(&base(), "C030"), []);
    }

    #[test]
    fn c030_suggests_the_closest_id_after_case() {
        let doc = with(
            "Message:N",
            json!({"Message:N": cpn("Message", json!({"content": ["{Mesage:M@content} {Agent:Zzz@content}"]}), &[]),
                   "Message:M": cpn("Message", json!({"content": ["hi"]}), &["Message:N"])}),
        );
        let hints: Vec<Option<String>> = run(&doc)
            .into_iter()
            .filter(|f| f.code == "C030")
            .map(|f| f.hint)
            .collect();
        assert_eq!(hints.len(), 2, "{hints:?}");
        assert_eq!(
            hints[0].as_deref(),
            Some(
                "did you mean `Message:M`? RAGFlow crashes on a reference to a component that \
                 does not exist"
            )
        );
        assert_eq!(
            hints[1].as_deref(),
            Some("fix the id; RAGFlow crashes on a reference to a component that does not exist")
        );
        assert_eq!(
            crate::suggest::closest("Mesage:M", ["Message:M", "begin"]),
            Some("Message:M")
        );
        assert_eq!(
            crate::suggest::closest("LLM:Q", ["Message:M", "begin"]),
            None
        );
    }

    #[test]
    fn c031_unknown_output_of_a_known_component() {
        let mut doc = base();
        doc["components"]["Message:M"]["obj"]["params"]["content"] = json!([
            "{begin@name.first} {begin@age} {begin@_ERROR} {Message:M@content} {Message:M@x}"
        ]);
        let found: Vec<String> = run(&doc)
            .into_iter()
            .filter(|f| f.code == "C031")
            .map(|f| f.message)
            .collect();
        assert_eq!(
            found,
            [
                "reference `{begin@age}`: `begin` has no output `age`",
                "reference `{Message:M@x}`: `Message:M` has no output `x`",
            ]
        );
        let hints: Vec<String> = run(&doc)
            .into_iter()
            .filter_map(|f| (f.code == "C031").then_some(f.hint).flatten())
            .collect();
        assert_eq!(
            hints[0],
            "`begin` (Begin) sets `name`; anything else reads as empty"
        );
        // Outputs the catalog cannot know are not checked.
        let doc = with(
            "Agent:A",
            json!({"Agent:A": cpn("Agent", json!({"llm_id": "m"}), &["Message:N"]),
                   "Message:N": cpn("Message", json!({"content": ["{Agent:A@whatever}"]}), &[])}),
        );
        assert_eq!(only(&doc, "C031"), []);
    }

    #[test]
    fn c032_unknown_sys_and_env_names() {
        let mut doc = base();
        doc["components"]["Message:M"]["obj"]["params"]["content"] =
            json!(["{sys.query} {sys.files.0} {sys.date} {sys.nope} {env.x} {env.x.y} {env.y}"]);
        doc["components"]["Message:M"]["obj"]["params"]["sel"] = json!("env.z");
        let found: Vec<String> = run(&doc)
            .into_iter()
            .filter(|f| f.code == "C032")
            .map(|f| format!("{} {}", f.pointer, f.message))
            .collect();
        assert_eq!(
            found,
            [
                "/components/Message:M/obj/params/content/0 reference `{sys.nope}` names unknown global `sys.nope`",
                "/components/Message:M/obj/params/content/0 reference `{env.y}` names undeclared conversation variable `env.y`",
                "/components/Message:M/obj/params/sel reference `env.z` names undeclared conversation variable `env.z`",
            ]
        );
        // Declared by name in `variables` (list form) or as a `globals` key.
        doc["variables"] = json!([{"name": "y"}]);
        doc["globals"]["env.z"] = json!("");
        doc["globals"]["sys.nope"] = json!("");
        assert_eq!(only(&doc, "C032"), []);
    }

    #[test]
    fn c033_upper_case_prefix() {
        let mut doc = base();
        doc["components"]["Message:M"]["obj"]["params"]["content"] =
            json!(["{SYS.query} {Env.x} {sys.query}"]);
        let f = run(&doc);
        let c033: Vec<_> = f.iter().filter(|f| f.code == "C033").collect();
        assert_eq!(c033.len(), 2);
        assert_eq!(c033[0].message, "reference `{SYS.query}` is not lower-case");
        assert!(
            c033[0]
                .hint
                .as_deref()
                .unwrap_or_default()
                .starts_with("write it lowercase (`{sys.query}`)")
        );
        assert_eq!(
            c033[1].pointer,
            "/components/Message:M/obj/params/content/0"
        );
        assert_eq!(only(&base(), "C033"), []);
    }

    #[test]
    fn outputs_are_read_only_for_their_refs() {
        let doc = with(
            "Iteration:I",
            json!({"Iteration:I": cpn("Iteration", json!({"items_ref": "sys.files",
                "outputs": {"lines": {"ref": "Gone:X@result", "type": "Array<string>"},
                            "other": {"value": "{sys.nope}"}}}), &["Message:M"]),
                   "IterationItem:S": {"obj": {"component_name": "IterationItem", "params": {}}, "parent_id": "Iteration:I"}}),
        );
        assert_eq!(
            only(&doc, "C030"),
            [(
                "C030",
                "/components/Iteration:I/obj/params/outputs/lines/ref".to_owned()
            )]
        );
        assert_eq!(only(&doc, "C032"), []);
    }
}
