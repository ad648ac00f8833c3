//! Flow rules: what can run and in which order. Components never reached from `begin`
//! (C020), route cycles nothing pauses (C021), and RAGFlow's silent drop of a component
//! that references two exclusive branches (C050).

use std::collections::VecDeque;

use super::graph::{Canvas, Lists, comp_path};
use super::refs::{Seg, Target, for_each_ref, param_path};
use crate::finding::{Finding, Level};

/// Run every flow rule.
pub(super) fn check(c: &Canvas<'_>, out: &mut Vec<Finding>) {
    unreachable(c, out);
    cycles(c, out);
    silent_drops(c, out);
}

/// C020: a component nothing routes to never runs; usually a forgotten edge.
fn unreachable(c: &Canvas<'_>, out: &mut Vec<Finding>) {
    let Some(begin) = c.index("begin") else {
        return;
    };
    let seen = c.reach(&[begin]);
    for (comp, _) in c.comps.iter().zip(&seen).filter(|(_, s)| !**s) {
        out.push(
            Finding::new(
                "C020",
                Level::Warning,
                format!("`{}` is never reached from `begin`", comp.id),
            )
            .hint("route to it (a `downstream`, a Switch case, a category) or remove it")
            .component(comp.id)
            .at(&comp_path(comp.id, &[])),
        );
    }
}

/// Classes whose pass through a cycle is fine: a UserFillUp (or the legacy Fillup and
/// Answer) waits for the user each time round, and a LoopItem/IterationItem counts passes.
fn breaks_cycles(kind: &str) -> bool {
    matches!(
        kind,
        "userfillup" | "fillup" | "answer" | "loopitem" | "iterationitem"
    )
}

/// C021: RAGFlow's path has no visited set, so a route cycle runs until the process dies.
/// Reported once per strongly connected group, on its first component in file order, with
/// the shortest cycle through it.
fn cycles(c: &Canvas<'_>, out: &mut Vec<Finding>) {
    let skip: Vec<bool> = c.comps.iter().map(|x| breaks_cycles(&x.kind)).collect();
    for group in strongly_connected(&c.route, &skip) {
        let first = group.iter().copied().min().unwrap_or_default();
        let looped = group.len() > 1 || c.route[first].contains(&first);
        if !looped {
            continue;
        }
        let cycle = shortest_cycle(&c.route, &group, first);
        let comp = &c.comps[first];
        let next = cycle.get(1).copied().unwrap_or(first);
        let at = comp
            .edges
            .iter()
            .find(|e| e.to == Some(next))
            .map_or_else(|| comp_path(comp.id, &[]), |e| e.at.path(comp.id));
        let ids: Vec<String> = cycle
            .iter()
            .map(|&i| format!("`{}`", c.comps[i].id))
            .collect();
        out.push(
            Finding::new(
                "C021",
                Level::Error,
                format!("route cycle {} never pauses, so it runs forever", ids.join(" → ")),
            )
            .hint("break the cycle, put a UserFillUp on it to wait for the user each pass, or use a Loop")
            .component(comp.id)
            .at(&at),
        );
    }
}

/// Tarjan's strongly connected components of `adj` without the `skip` nodes (iterative,
/// so a long chain cannot overflow the stack).
fn strongly_connected(adj: &Lists, skip: &[bool]) -> Vec<Vec<usize>> {
    const NONE: usize = usize::MAX;
    let n = adj.len();
    let (mut index, mut low) = (vec![NONE; n], vec![0; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut groups, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if skip[root] || index[root] != NONE {
            continue;
        }
        let mut calls: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, pos)) = calls.last() {
            if let Some(&w) = adj[v].get(pos) {
                if let Some(top) = calls.last_mut() {
                    top.1 += 1;
                }
                if skip[w] {
                    continue;
                }
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(u, _)) = calls.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut group = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                groups.push(group);
            }
        }
    }
    groups
}

/// The shortest cycle `start → … → start` inside `group` (breadth-first).
fn shortest_cycle(adj: &Lists, group: &[usize], start: usize) -> Vec<usize> {
    let n = adj.len();
    let mut inside = vec![false; n];
    for &g in group {
        inside[g] = true;
    }
    let mut prev = vec![usize::MAX; n];
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &adj[v] {
            if !inside[w] {
                continue;
            }
            if w == start {
                let mut back = Vec::new();
                let mut at = v;
                while at != start {
                    back.push(at);
                    at = prev[at];
                }
                let mut path = vec![start];
                path.extend(back.into_iter().rev());
                path.push(start);
                return path;
            }
            if prev[w] == usize::MAX {
                prev[w] = v;
                queue.push_back(w);
            }
        }
    }
    vec![start, start]
}

/// Classes whose text references RAGFlow's scheduler checks against the path
/// (`engine.md` §4.3): only these are dropped.
fn checks_refs(kind: &str) -> bool {
    matches!(
        kind,
        "message" | "llm" | "agent" | "categorize" | "stringtransform"
    )
}

/// C050: RAGFlow silently drops a component whose text references a component that has
/// not run yet. If it references two components on different exclusive branches of one
/// Switch or Categorize, one of them has not run whichever branch was taken.
fn silent_drops(c: &Canvas<'_>, out: &mut Vec<Finding>) {
    // Only a component referencing two others can be dropped so. The branches are
    // walked (once per router) only when there is one: that walk is what costs on a
    // canvas of many Switches.
    let referencing: Vec<(usize, Refs<'_>)> = c
        .comps
        .iter()
        .enumerate()
        .filter(|(_, x)| checks_refs(&x.kind))
        .map(|(n, _)| (n, text_refs(c, n)))
        .filter(|(_, refs)| refs.iter().any(|r| r.0 != refs[0].0))
        .collect();
    if referencing.is_empty() {
        return;
    }
    // Per router: for each component, the one branch that reaches it (if exactly one does).
    let routers: Vec<(usize, Vec<Option<usize>>)> = c
        .comps
        .iter()
        .enumerate()
        .filter(|(_, x)| x.branches.len() > 1)
        .map(|(s, x)| (s, exclusive_branches(c, &x.branches)))
        .collect();
    if routers.is_empty() {
        return;
    }
    for (n, refs) in &referencing {
        let comp = &c.comps[*n];
        for (s, only) in &routers {
            if let Some((a, (b, segs))) = split_pair(refs, only) {
                let router = &c.comps[*s];
                out.push(
                    Finding::new(
                        "C050",
                        Level::Warning,
                        format!(
                            "`{}` references `{}` and `{}`, which are on different branches of `{}`, so RAGFlow silently skips `{}`",
                            comp.id, c.comps[a].id, c.comps[*b].id, router.id, comp.id
                        ),
                    )
                    .hint(format!(
                        "whichever branch `{}` takes, one of them has not run; reference a VariableAggregator that merges the branches instead",
                        router.id
                    ))
                    .component(comp.id)
                    .at(&param_path(comp, segs)),
                );
            }
        }
    }
}

/// For every component, the index of the only branch that reaches it, if exactly one does.
fn exclusive_branches(c: &Canvas<'_>, branches: &[Vec<usize>]) -> Vec<Option<usize>> {
    let mut only: Vec<Option<usize>> = vec![None; c.comps.len()];
    let mut count = vec![0u32; c.comps.len()];
    for (b, targets) in branches.iter().enumerate() {
        for (i, hit) in c.reach(targets).into_iter().enumerate() {
            if hit {
                count[i] += 1;
                only[i] = Some(b);
            }
        }
    }
    for (o, n) in only.iter_mut().zip(count) {
        if n != 1 {
            *o = None;
        }
    }
    only
}

/// Referenced components, each with where the reference is written.
type Refs<'a> = Vec<(usize, Vec<Seg<'a>>)>;

/// The components component `n` references in the texts RAGFlow checks (brace references,
/// plus a Categorize's `query` selector), each with where it is written.
fn text_refs<'a>(c: &Canvas<'a>, n: usize) -> Refs<'a> {
    let comp = &c.comps[n];
    let mut refs = Vec::new();
    for_each_ref(comp.params, &mut |r, segs| {
        let counted = r.braced || (comp.is("categorize") && segs == [Seg::Key("query")]);
        if let (true, Target::Cpn { id, .. }) = (counted, r.target) {
            if let Some(i) = c.index(id) {
                refs.push((i, segs.to_vec()));
            }
        }
    });
    refs
}

/// The first two references (in text order) that lie on different exclusive branches.
fn split_pair<'r, 'a>(
    refs: &'r [(usize, Vec<Seg<'a>>)],
    only: &[Option<usize>],
) -> Option<(usize, &'r (usize, Vec<Seg<'a>>))> {
    let mut first: Option<(usize, usize)> = None;
    for r in refs {
        let Some(branch) = only[r.0] else {
            continue;
        };
        match first {
            None => first = Some((r.0, branch)),
            Some((a, fb)) if fb != branch => return Some((a, r)),
            Some(_) => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{base, cpn, one, only, with};
    use super::*;

    #[test]
    fn c020_unreachable_components_but_not_loop_bodies() {
        let doc = with(
            "Loop:L",
            json!({
                "Loop:L": cpn("Loop", json!({"maximum_loop_count": 2, "logical_operator": "or"}), &["Message:M"]),
                "LoopItem:S": {"obj": {"component_name": "LoopItem", "params": {}}, "downstream": ["ExitLoop:E"], "parent_id": "Loop:L"},
                "ExitLoop:E": {"obj": {"component_name": "ExitLoop", "params": {}}, "parent_id": "Loop:L"},
                "Message:Lost": cpn("Message", json!({"content": ["x"]}), &["Message:M"]),
            }),
        );
        assert_eq!(
            only(&doc, "C020"),
            [("C020", "/components/Message:Lost".to_owned())]
        );
        assert_eq!(only(&base(), "C020"), []);
    }

    #[test]
    fn c021_cycles_without_a_pause() {
        let mut doc = with(
            "LLM:A",
            json!({
                "LLM:A": cpn("LLM", json!({"llm_id": "m"}), &["Switch:S"]),
                "Switch:S": cpn("Switch", json!({"conditions": [{"to": ["LLM:A"]}], "end_cpn_ids": ["Message:M"]}), &[]),
            }),
        );
        let f = one(&doc, "C021");
        assert_eq!(f.pointer, "/components/LLM:A/downstream/0");
        assert_eq!(f.component.as_deref(), Some("LLM:A"));
        assert_eq!(
            f.message,
            "route cycle `LLM:A` → `Switch:S` → `LLM:A` never pauses, so it runs forever"
        );
        // A self-loop is a cycle too.
        doc["components"]["Switch:S"]["obj"]["params"]["conditions"][0]["to"] =
            json!(["Message:M"]);
        doc["components"]["Message:M"]["downstream"] = json!(["Message:M"]);
        let f = one(&doc, "C021");
        assert_eq!(f.pointer, "/components/Message:M/downstream/0");
        assert_eq!(only(&base(), "C021"), []);
    }

    #[test]
    fn c021_not_through_a_user_fill_up_or_inside_loop_bodies() {
        let doc = with(
            "UserFillUp:U",
            json!({
                "UserFillUp:U": cpn("UserFillUp", json!({"inputs": {}}), &["LLM:A"]),
                "LLM:A": cpn("LLM", json!({"llm_id": "m"}), &["UserFillUp:U"]),
                "Loop:L": cpn("Loop", json!({"maximum_loop_count": 2, "logical_operator": "or"}), &[]),
                "LoopItem:S": {"obj": {"component_name": "LoopItem", "params": {}}, "downstream": ["Message:B"], "parent_id": "Loop:L"},
                "Message:B": {"obj": {"component_name": "Message", "params": {"content": ["b"]}}, "downstream": ["LoopItem:S"], "parent_id": "Loop:L"},
            }),
        );
        assert_eq!(only(&doc, "C021"), []);
    }

    /// begin → Switch → (A | B); Message:N references both A and B.
    fn branches(n_refs: &str) -> serde_json::Value {
        with(
            "Switch:S",
            json!({
                "Switch:S": cpn("Switch", json!({
                    "conditions": [{"items": [{"cpn_id": "sys.query", "operator": "=", "value": "a"}],
                                    "logical_operator": "and", "to": ["LLM:A"]}],
                    "end_cpn_ids": ["LLM:B"]}), &["LLM:A", "LLM:B"]),
                "LLM:A": cpn("LLM", json!({"llm_id": "m"}), &["Message:N"]),
                "LLM:B": cpn("LLM", json!({"llm_id": "m"}), &["Message:N"]),
                "Message:N": cpn("Message", json!({"content": [n_refs]}), &["Message:M"]),
            }),
        )
    }

    #[test]
    fn c050_references_to_two_exclusive_branches() {
        let f = one(&branches("{LLM:A@content} or {LLM:B@content}"), "C050");
        assert_eq!(f.pointer, "/components/Message:N/obj/params/content/0");
        assert_eq!(f.component.as_deref(), Some("Message:N"));
        assert!(f.message.contains("`LLM:A` and `LLM:B`"), "{}", f.message);
        assert!(f.message.contains("`Switch:S`"), "{}", f.message);
        assert!(f.hint.unwrap_or_default().contains("VariableAggregator"));
        assert_eq!(only(&branches("{LLM:A@content} {sys.query}"), "C050"), []);
    }

    #[test]
    fn c050_not_when_the_branches_meet_before_or_loop_back() {
        // B runs after A on the same branch: both have run when N runs.
        let mut doc = branches("{LLM:A@content} {LLM:B@content}");
        doc["components"]["Switch:S"]["obj"]["params"]["end_cpn_ids"] = json!(["Message:M"]);
        doc["components"]["LLM:A"]["downstream"] = json!(["LLM:B"]);
        assert_eq!(only(&doc, "C050"), []);
        // Both branches wait for the user and come back to the Switch.
        let mut doc = branches("{LLM:A@content} {LLM:B@content}");
        doc["components"]["Message:N"]["downstream"] = json!(["UserFillUp:U"]);
        doc["components"]["UserFillUp:U"] = cpn("UserFillUp", json!({"inputs": {}}), &["Switch:S"]);
        assert_eq!(only(&doc, "C050"), []);
    }

    #[test]
    fn c050_categorize_query_counts_but_other_classes_do_not() {
        let mut doc = branches("x");
        doc["components"]["Message:N"] = cpn(
            "Categorize",
            json!({"llm_id": "m", "query": "LLM:A@content",
                   "category_description": {"a": {"to": ["Message:M"]}, "b": {"to": ["Message:M"]}},
                   "sys_prompt": "{LLM:B@content}"}),
            &[],
        );
        assert_eq!(
            only(&doc, "C050"),
            [(
                "C050",
                "/components/Message:N/obj/params/sys_prompt".to_owned()
            )]
        );
        doc["components"]["Message:N"]["obj"]["component_name"] = json!("VariableAggregator");
        assert_eq!(only(&doc, "C050"), []);
    }

    #[test]
    fn strongly_connected_handles_long_chains() {
        let n = 100_000;
        let adj: Lists = (0..n).map(|i| vec![(i + 1) % n]).collect::<Vec<_>>().into();
        let groups = strongly_connected(&adj, &vec![false; n]);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].len(), n);
        let cycle = shortest_cycle(&adj, &groups[0], 0);
        assert_eq!(cycle.len(), n + 1);
    }
}
