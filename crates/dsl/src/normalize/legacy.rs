//! Rules for older DSL shapes and class names: the Go port's flat components, and the
//! classes RAGFlow renamed or replaced (`Generate`, `Answer`, `Fillup`, ...).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use serde_json::{Value, json};

use super::{Log, Object, class_of, components_mut, graph_list_mut, id_list};
use crate::model::{field, member};

/// Components in the Go port's flat shape `{name, params, downstream, upstream}` (its N2
/// rewrite) get the stored shape `{obj: {component_name, params}, ...}`; a Go-style
/// `obj.downstream` is merged into the outer `downstream`.
pub(super) fn flat_components(dsl: &mut Object, log: &mut Log) {
    let Some(comps) = components_mut(dsl) else {
        return;
    };
    for (id, c) in comps.iter_mut() {
        // The stored shape, the usual one: nothing to do (seen without hashing a key).
        if member(c, "obj")
            .and_then(Value::as_object)
            .is_some_and(|o| field(o, "downstream").is_none())
        {
            continue;
        }
        let Some(c) = c.as_object_mut() else { continue };
        if !c.contains_key("obj") {
            let name = c
                .get("component_name")
                .or_else(|| c.get("name"))
                .and_then(Value::as_str)
                .map(String::from);
            let Some(name) = name else { continue };
            let params = c.remove("params").unwrap_or_else(|| json!({}));
            c.remove("component_name");
            c.remove("name");
            c.shift_insert(
                0,
                "obj".into(),
                json!({"component_name": name, "params": params}),
            );
            log.note(
                &["components", id],
                "flat shape → {obj: {component_name, params}}",
            );
        }
        let inner = c
            .get_mut("obj")
            .and_then(Value::as_object_mut)
            .and_then(|o| o.remove("downstream"));
        if let Some(inner) = inner {
            let mut down = id_list(c.get("downstream"));
            for t in id_list(Some(&inner)) {
                if !down.contains(&t) {
                    down.push(t);
                }
            }
            c.insert("downstream".into(), json!(down));
            log.note(
                &["components", id, "obj", "downstream"],
                "merged into `downstream`",
            );
        }
    }
}

/// Class renames: (legacy name, current name). Matched case-insensitively.
const RENAMES: &[(&str, &str)] = &[
    ("Generate", "LLM"),
    ("Answer", "UserFillUp"),
    ("Fillup", "UserFillUp"),
    ("SearchMyDataset", "Retrieval"),
    ("search_my_dataset", "Retrieval"),
    ("search_my_dateset", "Retrieval"),
    ("DocsGenerator", "DocGenerator"),
    ("Parallel", "Iteration"),
];

/// The output that carries a component's result, for the legacy classes that handed
/// their result to the next component implicitly.
fn main_output(class: &str) -> Option<&'static str> {
    let c = class.to_ascii_lowercase();
    match c.as_str() {
        "generate" | "llm" | "agent" => Some("content"),
        "answer" => Some("answer"),
        "retrieval" | "searchmydataset" | "search_my_dataset" | "search_my_dateset" | "exesql"
        | "tavilysearch" | "duckduckgo" | "wikipedia" | "arxiv" | "pubmed" | "google"
        | "googlescholar" | "github" | "bing" | "baidu" | "crawler" => Some("formalized_content"),
        _ => None,
    }
}

/// Legacy classes get their current name and params:
/// - `Generate` → `LLM`: `prompt` becomes `sys_prompt`, `{input}` and `parameters` keys
///   become references to what used to feed them, and the user prompt is the latest
///   answer (RAGFlow's old engine passed it implicitly).
/// - `Answer` (wait for the user's next message) → a `UserFillUp` with one `answer`
///   field; the results an Answer used to show get a Message in front of it.
/// - `Fillup`, `SearchMyDataset`/`search_my_dataset`/`search_my_dateset`,
///   `DocsGenerator` and `Parallel` → `UserFillUp`, `Retrieval`, `DocGenerator`,
///   `Iteration` (graph labels follow).
/// - A `Message` with the old `messages` param gets it as `content`.
/// - Components right after an Answer that read the user's message implicitly
///   (Categorize, Retrieval, ExeSQL) get it as their `query` (`sql`).
pub(super) fn legacy_names(dsl: &mut Object, log: &mut Log) {
    let Some(comps) = components_mut(dsl) else {
        return;
    };
    // A current canvas has nothing for this rule: found by one borrowed pass, instead
    // of the copies and lookups below.
    if !comps.values().any(has_legacy) {
        return;
    }
    let classes: Vec<(String, String)> = comps
        .iter()
        .map(|(id, c)| (id.clone(), class_of(c).to_string()))
        .collect();
    let is = |class: &str, name: &str| class.eq_ignore_ascii_case(name);
    let answers: HashSet<&str> = classes
        .iter()
        .filter(|(_, c)| is(c, "Answer"))
        .map(|(id, _)| id.as_str())
        .collect();
    // Sources of every component, by downstream.
    let sources = |target: &str| -> Vec<String> {
        comps
            .iter()
            .filter(|(_, c)| id_list(c.get("downstream")).iter().any(|t| t == target))
            .map(|(id, _)| id.clone())
            .collect()
    };
    // The Answer whose reply a component reads, when exactly one precedes it.
    let mut reply_of: Vec<(String, Option<String>)> = Vec::new();
    if !answers.is_empty() {
        for (id, _) in &classes {
            reply_of.push((id.clone(), nearest_answer(id, &answers, &sources)));
        }
    }
    let reply = |id: &str| -> String {
        reply_of
            .iter()
            .find(|(i, _)| i == id)
            .and_then(|(_, a)| a.clone())
            .map(|a| format!("{{{a}@answer}}"))
            .unwrap_or_else(|| "{sys.query}".into())
    };

    // Params first (they read the legacy classes), then the display Messages, then names.
    let mut upstreams: Vec<(String, Vec<String>)> = Vec::new();
    for (id, class) in &classes {
        if is(class, "Generate") {
            upstreams.push((id.clone(), sources(id)));
        }
    }
    let mut renamed_labels: Vec<(String, String, String)> = Vec::new();
    for (id, class) in &classes {
        let Some(params) = comps
            .get_mut(id)
            .and_then(|c| c.get_mut("obj"))
            .and_then(Value::as_object_mut)
            .map(|o| {
                o.entry("params")
                    .or_insert_with(|| Value::Object(Object::new()))
            })
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let at = |k: &str| ["components", id.as_str(), "obj", "params", k].map(String::from);
        if is(class, "Generate") {
            let ups = upstreams
                .iter()
                .find(|(i, _)| i == id)
                .map(|(_, u)| u.clone())
                .unwrap_or_default();
            generate_params(params, &ups, &classes, &reply(id), |k, d| {
                log.note(&at(k), d)
            });
        } else if is(class, "Answer") {
            if !params.contains_key("inputs") {
                params.insert(
                    "inputs".into(),
                    json!({"answer": {"name": "Your answer", "type": "paragraph", "optional": false}}),
                );
                params.entry("enable_tips").or_insert(json!(true));
                params.entry("tips").or_insert(json!(""));
                log.note(
                    &at("inputs"),
                    "Answer waits for the user's message: one `answer` field",
                );
            }
        } else if is(class, "Message") && !params.contains_key("content") {
            if params.contains_key("messages") {
                rename_key(params, "messages", "content");
                log.note(&at("content"), "`messages` → `content`");
            }
        } else if !answers.is_empty() {
            let key = match class.to_ascii_lowercase().as_str() {
                "categorize" | "retrieval" | "searchmydataset" | "search_my_dataset"
                | "search_my_dateset" => Some("query"),
                "exesql" => Some("sql"),
                _ => None,
            };
            if let Some(key) = key {
                let r = reply(id);
                if !params.contains_key(key) && r != "{sys.query}" {
                    params.insert(key.into(), json!(r));
                    log.note(&at(key), format!("reads the answer it follows: {r}"));
                }
            }
        }
        if let Some((_, new)) = RENAMES.iter().find(|(old, _)| is(class, old)) {
            if let Some(obj) = comps.get_mut(id).and_then(|c| c.get_mut("obj")) {
                obj["component_name"] = json!(new);
            }
            renamed_labels.push((id.clone(), class.clone(), new.to_string()));
            log.note(
                &["components", id.as_str(), "obj", "component_name"],
                format!("{class} → {new}"),
            );
        }
    }
    // Only an Answer needs a Message before it: without one there is nothing to do.
    if !answers.is_empty() {
        let by_id: HashMap<&str, &str> = classes
            .iter()
            .map(|(i, c)| (i.as_str(), c.as_str()))
            .collect();
        display_messages(comps, &answers, &by_id, log);
    }
    rename_graph_labels(dsl, &renamed_labels, log);
}

/// Whether `legacy_names` has anything to do for component `c`: a legacy class, a
/// Message with the old `messages` key, or an `obj` without `params` (given an empty one).
fn has_legacy(c: &Value) -> bool {
    let Some(obj) = member(c, "obj").and_then(Value::as_object) else {
        return false;
    };
    let class = field(obj, "component_name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let Some(params) = field(obj, "params") else {
        return true;
    };
    RENAMES
        .iter()
        .any(|(old, _)| class.eq_ignore_ascii_case(old))
        || (class.eq_ignore_ascii_case("Message")
            && params
                .as_object()
                .is_some_and(|p| field(p, "content").is_none() && field(p, "messages").is_some()))
}

/// The single Answer reached first walking back from `id` (None when none or several).
fn nearest_answer(
    id: &str,
    answers: &HashSet<&str>,
    sources: &dyn Fn(&str) -> Vec<String>,
) -> Option<String> {
    let mut found = BTreeSet::new();
    let mut seen = HashSet::from([id.to_string()]);
    let mut queue = VecDeque::from([id.to_string()]);
    while let Some(cur) = queue.pop_front() {
        for s in sources(&cur) {
            if answers.contains(s.as_str()) {
                found.insert(s);
            } else if s != "begin" && seen.insert(s.clone()) {
                queue.push_back(s);
            }
        }
    }
    (found.len() == 1)
        .then(|| found.into_iter().next())
        .flatten()
}

/// `Generate` params → `LLM` params.
fn generate_params(
    params: &mut Object,
    upstream: &[String],
    classes: &[(String, String)],
    reply: &str,
    mut note: impl FnMut(&str, String),
) {
    if !params.contains_key("sys_prompt") && params.contains_key("prompt") {
        rename_key(params, "prompt", "sys_prompt");
        note("sys_prompt", "`prompt` → `sys_prompt`".into());
    }
    let mut sys = params
        .get("sys_prompt")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let before = sys.clone();
    if sys.contains("{input}") {
        let refs: Vec<String> = upstream
            .iter()
            .filter_map(|u| main_output(class_in(classes, u)).map(|o| format!("{{{u}@{o}}}")))
            .collect();
        if !refs.is_empty() {
            sys = sys.replace("{input}", &refs.join("\n"));
        }
    }
    if let Some(Value::Array(ps)) = params.get("parameters") {
        for p in ps {
            let (Some(key), Some(cpn)) = (
                p.get("key").and_then(Value::as_str),
                p.get("component_id").and_then(Value::as_str),
            ) else {
                continue;
            };
            let out = main_output(class_in(classes, cpn)).unwrap_or("content");
            sys = sys.replace(&format!("{{{key}}}"), &format!("{{{cpn}@{out}}}"));
        }
    }
    if sys != before {
        params.insert("sys_prompt".into(), json!(sys));
        note(
            "sys_prompt",
            "`{input}`/parameter keys → references to their components".into(),
        );
    }
    if !params.contains_key("prompts") {
        params.insert(
            "prompts".into(),
            json!([{"role": "user", "content": reply}]),
        );
        note("prompts", format!("user prompt {reply}"));
    }
}

/// Every result an Answer used to show (an LLM's answer, retrieved chunks) gets a
/// Message between its component and the Answer, since a UserFillUp shows nothing.
fn display_messages(
    comps: &mut Object,
    answers: &HashSet<&str>,
    classes: &HashMap<&str, &str>,
    log: &mut Log,
) {
    let mut inserts: Vec<(String, String, &'static str)> = Vec::new();
    for (id, c) in comps.iter() {
        let class = classes.get(id.as_str()).copied().unwrap_or("");
        let Some(out) = main_output(class).filter(|_| !class.eq_ignore_ascii_case("answer")) else {
            continue;
        };
        for t in id_list(c.get("downstream")) {
            if answers.contains(t.as_str()) {
                inserts.push((id.clone(), t, out));
            }
        }
    }
    for (source, answer, out) in inserts {
        let mut mid = format!("Message:{}", source.replace(':', "_"));
        while comps.contains_key(&mid) {
            mid.push('_');
        }
        let Some(pos) = comps.keys().position(|k| *k == source) else {
            continue;
        };
        if let Some(Value::Array(down)) =
            comps.get_mut(&source).and_then(|c| c.get_mut("downstream"))
        {
            for d in down.iter_mut() {
                if d.as_str() == Some(&answer) {
                    *d = json!(mid);
                }
            }
        }
        // Keep the Answer's upstream in step (the `links` rule reports real mismatches only).
        if let Some(Value::Array(up)) = comps.get_mut(&answer).and_then(|c| c.get_mut("upstream")) {
            for u in up.iter_mut() {
                if u.as_str() == Some(&source) {
                    *u = json!(mid);
                }
            }
        }
        comps.shift_insert(
            pos + 1,
            mid.clone(),
            json!({
                "obj": {"component_name": "Message", "params": {"content": [format!("{{{source}@{out}}}")]}},
                "downstream": [answer],
                "upstream": [source],
            }),
        );
        log.note(
            &["components", mid.as_str()],
            format!("shows {source}'s result before {answer}, as the Answer did"),
        );
    }
}

/// Graph node labels (and the `parallelNode` type) follow the renamed classes.
fn rename_graph_labels(dsl: &mut Object, renamed: &[(String, String, String)], log: &mut Log) {
    let Some(nodes) = graph_list_mut(dsl, "nodes") else {
        return;
    };
    for (i, n) in nodes.iter_mut().enumerate() {
        let Some(id) = n.get("id").and_then(Value::as_str).map(String::from) else {
            continue;
        };
        let Some((_, old, new)) = renamed.iter().find(|(r, _, _)| *r == id) else {
            continue;
        };
        if let Some(d) = n.get_mut("data").and_then(Value::as_object_mut) {
            for key in ["label", "name"] {
                if d.get(key).and_then(Value::as_str) == Some(old.as_str()) {
                    d.insert(key.into(), json!(new));
                    log.note(
                        &["graph", "nodes", &i.to_string(), "data", key],
                        format!("{old} → {new}"),
                    );
                }
            }
        }
        if n.get("type").and_then(Value::as_str) == Some("parallelNode") {
            n["type"] = json!("iterationNode");
            log.note(
                &["graph", "nodes", &i.to_string(), "type"],
                "parallelNode → iterationNode",
            );
        }
    }
}

/// The class of component `id` in the `(id, class)` list, or `""`.
fn class_in<'a>(classes: &'a [(String, String)], id: &str) -> &'a str {
    classes
        .iter()
        .find(|(i, _)| i == id)
        .map(|(_, c)| c.as_str())
        .unwrap_or("")
}

/// Rename a key in place (its position kept).
fn rename_key(map: &mut Object, from: &str, to: &str) {
    let old = std::mem::take(map);
    for (k, v) in old {
        if k == from {
            map.insert(to.to_string(), v);
        } else {
            map.insert(k, v);
        }
    }
}
