//! `upstream` kept in step with `downstream`.

use serde_json::{Value, json};

use super::{Log, Object, components_mut, routes};

/// Every `upstream` list made to match the routes into the component (`downstream`,
/// Switch and Categorize targets, `exception_goto`): RAGFlow routes by those only, while
/// its Go port builds its graph from `upstream`, so a canvas whose lists disagree runs
/// differently in the two. Missing sources are added (in component order) and entries
/// that no component routes from are dropped. A component without an `upstream` key is
/// left without one.
pub(super) fn links(dsl: &mut Object, log: &mut Log) {
    let Some(comps) = components_mut(dsl) else {
        return;
    };
    let mut sources: indexmap::IndexMap<String, Vec<String>> =
        comps.keys().map(|k| (k.clone(), Vec::new())).collect();
    for (id, c) in comps.iter() {
        for t in routes(c) {
            if let Some(s) = sources.get_mut(&t) {
                if !s.contains(id) {
                    s.push(id.clone());
                }
            }
        }
    }
    for (id, c) in comps.iter_mut() {
        let Some(c) = c.as_object_mut() else { continue };
        let expected = &sources[id];
        // A canvas written by hand often leaves `upstream` out: nothing to disagree with.
        let current: Vec<Value> = match c.get("upstream") {
            None => continue,
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let mut next: Vec<String> = Vec::new();
        for u in &current {
            match u.as_str() {
                Some(u) if expected.iter().any(|e| e == u) => {
                    if !next.iter().any(|n| n == u) {
                        next.push(u.to_string());
                    }
                }
                _ => log.note(
                    &["components", id.as_str(), "upstream"],
                    format!(
                        "dropped {}: it does not route to {id:?}",
                        serde_json::to_string(u).unwrap_or_default()
                    ),
                ),
            }
        }
        for e in expected {
            if !next.contains(e) {
                next.push(e.clone());
                log.note(
                    &["components", id.as_str(), "upstream"],
                    format!("added {e:?}: it routes to {id:?}"),
                );
            }
        }
        let unchanged = current.len() == next.len()
            && current
                .iter()
                .zip(&next)
                .all(|(a, b)| a.as_str() == Some(b));
        if !unchanged {
            c.insert("upstream".into(), json!(next));
        }
    }
}
