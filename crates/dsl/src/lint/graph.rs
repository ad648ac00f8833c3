//! The canvas seen as a graph: components in file order, every route edge with the place
//! it is written, Loop/Iteration membership, and the traversals the rules share.
//!
//! Built once per `lint` call from any JSON value; nothing here reports findings.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::LazyLock;

use serde_json::Value;

use super::{Catalog, Support};
use crate::model::Object;

/// The params of a component that has none (or whose params are not an object).
static EMPTY: LazyLock<Object> = LazyLock::new(Object::new);

pub(super) use crate::model::truthy;

/// The ids a field lists: `(index in the array, the id when it is a string)`. A plain
/// non-empty string counts as one id (index `None`); anything else lists nothing.
pub(super) fn listed_ids(v: Option<&Value>) -> Vec<(Option<usize>, Option<&str>)> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(j, x)| (Some(j), x.as_str()))
            .collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![(None, Some(s.as_str()))],
        _ => Vec::new(),
    }
}

/// The JSON pointer segments `components/<id>/<rest...>`.
pub(super) fn comp_path(id: &str, rest: &[&str]) -> Vec<String> {
    let mut p = Vec::with_capacity(rest.len() + 2);
    p.push("components".to_owned());
    p.push(id.to_owned());
    p.extend(rest.iter().map(|s| (*s).to_owned()));
    p
}

/// Where a route edge is written, relative to its component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EdgeAt<'a> {
    /// `downstream[j]` (`None`: the whole field is one string).
    Downstream(Option<usize>),
    /// Switch `conditions[i].to[j]`.
    Case(usize, Option<usize>),
    /// Switch `end_cpn_ids[j]` (the else branch).
    Else(Option<usize>),
    /// Categorize `category_description.<name>.to[j]`.
    Category(&'a str, Option<usize>),
    /// `exception_goto[j]`.
    Goto(Option<usize>),
}

impl EdgeAt<'_> {
    /// The pointer segments of the edge, starting at `components/<id>`.
    pub(super) fn path(self, id: &str) -> Vec<String> {
        let (mut p, item) = match self {
            EdgeAt::Downstream(j) => (comp_path(id, &["downstream"]), j),
            EdgeAt::Case(i, j) => (
                comp_path(id, &["obj", "params", "conditions", &i.to_string(), "to"]),
                j,
            ),
            EdgeAt::Else(j) => (comp_path(id, &["obj", "params", "end_cpn_ids"]), j),
            EdgeAt::Category(name, j) => (
                comp_path(id, &["obj", "params", "category_description", name, "to"]),
                j,
            ),
            EdgeAt::Goto(j) => (comp_path(id, &["obj", "params", "exception_goto"]), j),
        };
        if let Some(j) = item {
            p.push(j.to_string());
        }
        p
    }
}

/// One route edge: a place that names a component to run next.
#[derive(Debug, Clone)]
pub(super) struct Edge<'a> {
    /// The id as written (`None` when the entry is not a string).
    pub(super) target: Option<&'a str>,
    /// The component it names, when that exists.
    pub(super) to: Option<usize>,
    /// Where it is written.
    pub(super) at: EdgeAt<'a>,
}

/// One entry of `components`, read leniently (any field may be missing or mis-typed).
/// Its fields are read in one pass over the entry: a canvas may have thousands.
#[derive(Debug)]
pub(super) struct Comp<'a> {
    /// Its id (the key in `components`).
    pub(super) id: &'a str,
    /// The entry, when it is an object.
    pub(super) entry: Option<&'a Object>,
    /// `obj` as written.
    pub(super) obj: Option<&'a Value>,
    /// `obj.params` as written.
    pub(super) raw_params: Option<&'a Value>,
    /// `downstream` as written.
    pub(super) downstream: Option<&'a Value>,
    /// `upstream` as written.
    pub(super) upstream: Option<&'a Value>,
    /// `parent_id` as written.
    pub(super) parent_raw: Option<&'a Value>,
    /// `obj.component_name`, when it is a string.
    pub(super) class: Option<&'a str>,
    /// The class lower-cased (`""` without one): RAGFlow's engine compares lower-cased names.
    /// Made once per distinct class and shared.
    pub(super) kind: Rc<str>,
    /// How this build treats the class (`Unknown` without one), asked of the catalog
    /// once per distinct class.
    pub(super) support: Support,
    /// `obj.params` (empty when missing or not an object).
    pub(super) params: &'a Object,
    /// `parent_id` when truthy (RAGFlow treats a falsy one as "no parent").
    pub(super) parent: Option<&'a Value>,
    /// The parent, when it exists and is a Loop or an Iteration.
    pub(super) parent_idx: Option<usize>,
    /// Route edges: downstream, Switch cases and else, Categorize categories, and
    /// `exception_goto` when an exception method is set.
    pub(super) edges: Vec<Edge<'a>>,
    /// Switch/Categorize only: the existing targets of each exclusive branch.
    pub(super) branches: Vec<Vec<usize>>,
}

impl Comp<'_> {
    /// Whether the lower-cased class is `kind`.
    pub(super) fn is(&self, kind: &str) -> bool {
        *self.kind == *kind
    }

    /// The pointer segments `components/<id>/obj/params/<rest...>`.
    pub(super) fn param_path(&self, rest: &[&str]) -> Vec<String> {
        let mut p = comp_path(self.id, &["obj", "params"]);
        p.extend(rest.iter().map(|s| (*s).to_owned()));
        p
    }

    /// The pointer to param `key` when it is written, else to the params (or the
    /// component), so that a pointer always names something in the file.
    pub(super) fn param_or_parent(&self, key: &str) -> Vec<String> {
        match self.raw_params {
            Some(Value::Object(p)) if p.contains_key(key) => self.param_path(&[key]),
            Some(Value::Object(_)) => self.param_path(&[]),
            _ if self.obj.is_some_and(Value::is_object) => comp_path(self.id, &["obj"]),
            _ => comp_path(self.id, &[]),
        }
    }
}

/// The whole canvas, indexed.
#[derive(Debug)]
pub(super) struct Canvas<'a> {
    /// The DSL object.
    pub(super) doc: &'a Object,
    /// Components in file order.
    pub(super) comps: Vec<Comp<'a>>,
    /// Id → position in `comps`.
    index: Index<'a>,
    /// Per component: the components whose parent it is, in file order.
    pub(super) children: Vec<Vec<usize>>,
    /// Per component: the existing targets of its route edges (no duplicates).
    pub(super) route: Lists,
    /// Per component: everything that can run right after it. The route edges plus
    /// RAGFlow's implicit ones: Loop/Iteration → its body, a body end → the body start,
    /// LoopItem/IterationItem/ExitLoop → the parent's downstream.
    pub(super) flow: Lists,
}

impl<'a> Canvas<'a> {
    /// Index `doc`; `None` when it is not a canvas (not an object, or no `components`
    /// object).
    pub(super) fn new(doc: &'a Value, catalog: &dyn Catalog) -> Option<Canvas<'a>> {
        let doc = doc.as_object()?;
        let raw = doc.get("components")?.as_object()?;
        // The catalog is asked once per distinct class (a canvas repeats a few classes),
        // and each class is lower-cased once.
        let mut known: Vec<(&'a str, Support, Rc<str>)> = Vec::new();
        let empty: Rc<str> = Rc::from("");
        let mut comps: Vec<Comp<'a>> = raw
            .iter()
            .map(|(id, v)| {
                let mut c = read_comp(id, v, &empty);
                if let Some(class) = c.class {
                    (c.support, c.kind) = match known.iter().find(|(k, _, _)| *k == class) {
                        Some((_, s, kind)) => (s.clone(), kind.clone()),
                        None => {
                            let s = catalog.component(class);
                            let kind: Rc<str> = class.to_ascii_lowercase().into();
                            known.push((class, s.clone(), kind.clone()));
                            (s, kind)
                        }
                    };
                }
                c
            })
            .collect();
        let mut index: Index<'a> = HashMap::with_capacity_and_hasher(comps.len(), Fnv);
        index.extend(comps.iter().enumerate().map(|(i, c)| (c.id, i)));

        let containers: Vec<bool> = comps
            .iter()
            .map(|c| matches!(c.kind.as_ref(), "loop" | "iteration"))
            .collect();
        for c in &mut comps {
            let (edges, branches) = route_edges(c, &index);
            c.edges = edges;
            c.branches = branches;
            c.parent_idx = c
                .parent
                .and_then(Value::as_str)
                .and_then(|p| index.get(p).copied())
                .filter(|&p| containers[p]);
        }

        let n = comps.len();
        let mut children = vec![Vec::new(); n];
        for (i, c) in comps.iter().enumerate() {
            if let Some(p) = c.parent_idx {
                children[p].push(i);
            }
        }
        let mut route = Lists::with_capacity(n);
        for c in &comps {
            route.push(c.edges.iter().filter_map(|e| e.to));
        }
        let mut canvas = Canvas {
            doc,
            comps,
            index,
            children,
            route,
            flow: Lists::default(),
        };
        let mut flow = Lists::with_capacity(n);
        let mut next = Vec::new();
        for i in 0..n {
            next.clear();
            canvas.flow_from(i, &mut next);
            flow.push(next.iter().copied());
        }
        canvas.flow = flow;
        Some(canvas)
    }

    /// The position of component `id`.
    pub(super) fn index(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The body start of Loop/Iteration `p`: its first LoopItem/IterationItem child.
    fn start_of(&self, p: usize) -> Option<usize> {
        self.children[p]
            .iter()
            .copied()
            .find(|&c| matches!(self.comps[c].kind.as_ref(), "loopitem" | "iterationitem"))
    }

    /// The existing `downstream` targets of component `i`.
    fn downstream_of(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.comps[i]
            .edges
            .iter()
            .filter(|e| matches!(e.at, EdgeAt::Downstream(_)))
            .filter_map(|e| e.to)
    }

    /// What can run right after component `i` (see `flow`), following RAGFlow's routing
    /// rules (`engine.md` §4.4 step 4), appended to `next` (duplicates left in).
    fn flow_from(&self, i: usize, next: &mut Vec<usize>) {
        let c = &self.comps[i];
        next.extend_from_slice(&self.route[i]);
        next.extend(&self.children[i]);
        if let Some(p) = c.parent_idx {
            if matches!(c.kind.as_ref(), "loopitem" | "iterationitem" | "exitloop") {
                next.extend(self.downstream_of(p));
            }
            let has_downstream = c
                .edges
                .iter()
                .any(|e| matches!(e.at, EdgeAt::Downstream(_)));
            let routes_itself = matches!(c.kind.as_ref(), "switch" | "categorize" | "exitloop");
            if !has_downstream && !routes_itself {
                next.extend(self.start_of(p));
            }
        }
    }

    /// Which components can run after starting at `starts` (the starts included).
    pub(super) fn reach(&self, starts: &[usize]) -> Vec<bool> {
        let mut seen = vec![false; self.comps.len()];
        let mut queue: VecDeque<usize> = VecDeque::new();
        for &s in starts {
            if !seen[s] {
                seen[s] = true;
                queue.push_back(s);
            }
        }
        while let Some(v) = queue.pop_front() {
            for &w in &self.flow[v] {
                if !seen[w] {
                    seen[w] = true;
                    queue.push_back(w);
                }
            }
        }
        seen
    }
}

/// Component ids to positions. Ids are the canvas's own, so a fast hash is fine.
type Index<'a> = HashMap<&'a str, usize, Fnv>;

/// FNV-1a: a canvas's id index is hashed a few times per component, and SipHash's
/// resistance to chosen keys buys nothing for a file the user checks.
#[derive(Debug, Clone, Copy, Default)]
struct Fnv;

/// The running state of [`Fnv`].
struct FnvHasher(u64);

impl std::hash::BuildHasher for Fnv {
    type Hasher = FnvHasher;

    fn build_hasher(&self) -> FnvHasher {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Read one `components` entry without assuming any shape, in one pass over its keys.
fn read_comp<'a>(id: &'a str, v: &'a Value, empty: &Rc<str>) -> Comp<'a> {
    let entry = v.as_object();
    let (mut obj, mut downstream, mut upstream, mut parent) = (None, None, None, None);
    for (k, v) in entry.into_iter().flatten() {
        match k.as_str() {
            "obj" => obj = Some(v),
            "downstream" => downstream = Some(v),
            "upstream" => upstream = Some(v),
            "parent_id" => parent = Some(v),
            _ => {}
        }
    }
    let (mut class, mut raw_params) = (None, None);
    for (k, v) in obj.and_then(Value::as_object).into_iter().flatten() {
        match k.as_str() {
            "component_name" => class = v.as_str(),
            "params" => raw_params = Some(v),
            _ => {}
        }
    }
    Comp {
        id,
        entry,
        obj,
        raw_params,
        downstream,
        upstream,
        parent_raw: parent,
        class,
        kind: empty.clone(),
        support: Support::Unknown,
        params: raw_params.and_then(Value::as_object).unwrap_or(&EMPTY),
        parent: parent.filter(|p| truthy(p)),
        parent_idx: None,
        edges: Vec::new(),
        branches: Vec::new(),
    }
}

pub(super) use crate::model::field;

/// The route edges of `c` and, for a Switch or a Categorize, its exclusive branches.
fn route_edges<'a>(c: &Comp<'a>, index: &Index<'a>) -> (Vec<Edge<'a>>, Vec<Vec<usize>>) {
    let mut edges = Vec::new();
    let mut branches = Vec::new();
    add_edges(&mut edges, index, c.downstream, &EdgeAt::Downstream);
    let p = c.params;
    if c.is("switch") {
        if let Some(Value::Array(conds)) = p.get("conditions") {
            for (i, cond) in conds.iter().enumerate() {
                let to = cond.as_object().and_then(|o| o.get("to"));
                branches.push(add_edges(&mut edges, index, to, &|j| EdgeAt::Case(i, j)));
            }
        }
        branches.push(add_edges(
            &mut edges,
            index,
            p.get("end_cpn_ids"),
            &EdgeAt::Else,
        ));
    } else if c.is("categorize") {
        if let Some(Value::Object(cats)) = p.get("category_description") {
            for (name, cat) in cats {
                let to = cat.as_object().and_then(|o| o.get("to"));
                let name = name.as_str();
                branches.push(add_edges(&mut edges, index, to, &|j| {
                    EdgeAt::Category(name, j)
                }));
            }
        }
    }
    // RAGFlow has an exception handler only when `exception_method` is truthy; it then
    // jumps to `exception_goto` when that is truthy (`engine.md` §2.5, §4.4).
    if field(p, "exception_method").is_some_and(truthy) {
        add_edges(&mut edges, index, p.get("exception_goto"), &EdgeAt::Goto);
    }
    (edges, branches)
}

/// Append the edges a field lists; return the existing targets among them.
fn add_edges<'a>(
    edges: &mut Vec<Edge<'a>>,
    index: &Index<'a>,
    v: Option<&'a Value>,
    at: &dyn Fn(Option<usize>) -> EdgeAt<'a>,
) -> Vec<usize> {
    let mut branch = Vec::new();
    for (j, target) in listed_ids(v) {
        let to = target.and_then(|t| index.get(t).copied());
        branch.extend(to);
        edges.push(Edge {
            target,
            to,
            at: at(j),
        });
    }
    branch
}

/// A list of positions per component, in one buffer (a canvas has thousands of
/// components and most lists hold one item: a `Vec` each was most of `Canvas::new`).
#[derive(Debug, Default)]
pub(super) struct Lists {
    items: Vec<usize>,
    /// Where each list ends in `items`.
    ends: Vec<usize>,
}

impl Lists {
    fn with_capacity(n: usize) -> Lists {
        Lists {
            items: Vec::with_capacity(n),
            ends: Vec::with_capacity(n),
        }
    }

    /// How many lists.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Add the next list: the items in first-seen order, without duplicates. Lists are
    /// short, but one (a fan-out's `downstream`) may list thousands: past a few, a set
    /// keeps this linear.
    fn push(&mut self, items: impl IntoIterator<Item = usize>) {
        let start = self.items.len();
        let mut seen: Option<std::collections::HashSet<usize>> = None;
        for x in items {
            let new = match &mut seen {
                Some(set) => set.insert(x),
                None if self.items.len() - start < 16 => !self.items[start..].contains(&x),
                None => {
                    let mut set: std::collections::HashSet<usize> =
                        self.items[start..].iter().copied().collect();
                    let new = set.insert(x);
                    seen = Some(set);
                    new
                }
            };
            if new {
                self.items.push(x);
            }
        }
        self.ends.push(self.items.len());
    }
}

impl std::ops::Index<usize> for Lists {
    type Output = [usize];

    fn index(&self, i: usize) -> &[usize] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.items[start..self.ends[i]]
    }
}

#[cfg(test)]
impl From<Vec<Vec<usize>>> for Lists {
    fn from(lists: Vec<Vec<usize>>) -> Lists {
        let mut out = Lists::default();
        for l in lists {
            out.push(l);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn edges_know_where_they_are_written() {
        let doc = json!({"components": {
            "begin": {"obj": {"component_name": "Begin"}, "downstream": ["Switch:S"]},
            "Switch:S": {"obj": {"component_name": "Switch", "params": {
                "conditions": [{"to": ["A", "B"]}, {"to": "C"}], "end_cpn_ids": ["A"],
                "exception_method": "goto", "exception_goto": "A"}}},
            "A": {"obj": {"component_name": "Message"}},
        }});
        let Some(c) = Canvas::new(&doc, &super::super::testing::Fake) else {
            panic!("a canvas")
        };
        let s = &c.comps[1];
        let at: Vec<_> = s.edges.iter().map(|e| (e.target, e.at)).collect();
        assert_eq!(
            at,
            [
                (Some("A"), EdgeAt::Case(0, Some(0))),
                (Some("B"), EdgeAt::Case(0, Some(1))),
                (Some("C"), EdgeAt::Case(1, None)),
                (Some("A"), EdgeAt::Else(Some(0))),
                (Some("A"), EdgeAt::Goto(None)),
            ]
        );
        assert_eq!(s.branches, [vec![2], vec![], vec![2]]);
        assert_eq!(c.route[1], [2]);
        assert_eq!(
            EdgeAt::Case(1, None).path("Switch:S"),
            [
                "components",
                "Switch:S",
                "obj",
                "params",
                "conditions",
                "1",
                "to"
            ]
        );
    }

    #[test]
    fn loop_bodies_flow_back_to_their_start_and_out_of_the_loop() {
        let doc = json!({"components": {
            "Loop:L": {"obj": {"component_name": "Loop"}, "downstream": ["After"]},
            "LoopItem:S": {"obj": {"component_name": "LoopItem"}, "downstream": ["Body"], "parent_id": "Loop:L"},
            "Body": {"obj": {"component_name": "Message"}, "parent_id": "Loop:L"},
            "After": {"obj": {"component_name": "Message"}, "parent_id": null},
        }});
        let Some(c) = Canvas::new(&doc, &super::super::testing::Fake) else {
            panic!("a canvas")
        };
        assert_eq!(c.children[0], [1, 2]);
        assert_eq!(c.flow[0], [3, 1, 2]);
        assert_eq!(c.flow[1], [2, 3]);
        assert_eq!(c.flow[2], [1]);
        assert_eq!(c.route[2], Vec::<usize>::new());
        assert_eq!(c.reach(&[2]), [false, true, true, true]);
    }

    #[test]
    fn anything_that_is_not_an_object_with_components_is_no_canvas() {
        for v in [json!(null), json!([]), json!({"components": []}), json!({})] {
            assert!(
                Canvas::new(&v, &super::super::testing::Fake).is_none(),
                "{v}"
            );
        }
        let doc = json!({"components": {"x": 5, "y": {"obj": "z", "downstream": {"a": 1}}}});
        let Some(c) = Canvas::new(&doc, &super::super::testing::Fake) else {
            panic!("a canvas")
        };
        assert_eq!(c.comps.len(), 2);
        assert!(
            c.comps
                .iter()
                .all(|c| c.class.is_none() && c.edges.is_empty())
        );
    }
}
