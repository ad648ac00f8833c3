//! `upstream` kept in step with `downstream`.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{Log, Object, components_mut, routes};
use crate::model::member;

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
    // Read first, borrowing: in most canvases the lists already agree, and then nothing
    // is copied or rewritten.
    let fixes: Vec<(String, Vec<String>)> = {
        let ids: Vec<&str> = comps.keys().map(String::as_str).collect();
        let index: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        // (target, source) by position, sorted: each component's sources in component
        // order, each once.
        let mut edges: Vec<(usize, usize)> = Vec::with_capacity(comps.len());
        let mut targets = Vec::new();
        for (source, c) in comps.values().enumerate() {
            targets.clear();
            routes(c, &mut targets);
            edges.extend(
                targets
                    .iter()
                    .filter_map(|t| index.get(t).map(|&target| (target, source))),
            );
        }
        edges.sort_unstable();
        edges.dedup();
        let mut sources: Vec<&[(usize, usize)]> = vec![&[]; comps.len()];
        for run in edges.chunk_by(|a, b| a.0 == b.0) {
            sources[run[0].0] = run;
        }
        let id_at = |i: usize| ids[i];
        let mut fixes = Vec::new();
        for (i, (id, c)) in comps.iter().enumerate() {
            // A canvas written by hand often leaves `upstream` out: nothing to disagree with.
            let current: &[Value] = match member(c, "upstream") {
                None => continue,
                Some(Value::Array(a)) => a,
                _ => &[],
            };
            // The usual case, checked without building anything: the lists agree.
            if current.len() == sources[i].len()
                && current
                    .iter()
                    .zip(sources[i])
                    .all(|(u, &(_, s))| u.as_str() == Some(id_at(s)))
            {
                continue;
            }
            let expected: Vec<&str> = sources[i].iter().map(|&(_, s)| id_at(s)).collect();
            let mut next: Vec<&str> = Vec::new();
            for u in current {
                match u.as_str() {
                    Some(u) if expected.contains(&u) => {
                        if !next.contains(&u) {
                            next.push(u);
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
            for &e in &expected {
                if !next.contains(&e) {
                    next.push(e);
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
                    .all(|(a, b)| a.as_str() == Some(*b));
            if !unchanged {
                fixes.push((id.clone(), next.into_iter().map(String::from).collect()));
            }
        }
        fixes
    };
    for (id, next) in fixes {
        if let Some(c) = comps.get_mut(&id).and_then(Value::as_object_mut) {
            c.insert("upstream".into(), json!(next));
        }
    }
}
