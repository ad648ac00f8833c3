//! The execution graph of a canvas, drawn as a Mermaid flowchart or a Graphviz digraph.
//!
//! `Drawing::of` reads the canvas once into a small model (nodes, edges, Loop and
//! Iteration bodies); the two renderers only print that model. Edges follow what routes
//! a run: Switch cases and its else branch, Categorize categories, `exception_goto`,
//! the Loop/Iteration entry, and `downstream`. Targets that are not components are drawn
//! too, marked missing, so a broken canvas shows where it is broken.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use super::model::Dsl;

/// The canvas as a Mermaid flowchart (`flowchart LR`).
pub fn mermaid(dsl: &Dsl) -> String {
    Drawing::of(dsl).mermaid()
}

/// The canvas as a Graphviz digraph.
pub fn dot(dsl: &Dsl) -> String {
    Drawing::of(dsl).dot()
}

/// How a node is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Begin.
    Start,
    /// Switch, Categorize.
    Decision,
    /// Message.
    Rounded,
    /// UserFillUp.
    Input,
    /// Every other component.
    Plain,
    /// A target that is not a component.
    Missing,
}

impl Shape {
    fn of(class: &str) -> Shape {
        match class.to_ascii_lowercase().as_str() {
            "begin" => Shape::Start,
            "switch" | "categorize" => Shape::Decision,
            "message" => Shape::Rounded,
            "userfillup" => Shape::Input,
            _ => Shape::Plain,
        }
    }
}

/// A node; its generated id is `n<index>`.
#[derive(Debug)]
struct Node {
    /// The first label line: the human name, else the component id.
    name: String,
    /// The second label line: the component class (none for a missing target).
    class: Option<String>,
    shape: Shape,
    /// The body it is drawn in.
    group: Option<usize>,
}

/// An edge between two node indexes.
#[derive(Debug)]
struct Edge {
    from: usize,
    to: usize,
    label: Option<String>,
    /// Dotted (an error route) rather than solid.
    dotted: bool,
}

/// A Loop/Iteration body.
#[derive(Debug)]
struct Group {
    title: String,
    /// The enclosing body.
    parent: Option<usize>,
}

/// The renderer-neutral graph.
#[derive(Debug, Default)]
struct Drawing {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    groups: Vec<Group>,
}

impl Drawing {
    /// Read the canvas: components in file order, then their bodies and edges.
    fn of(dsl: &Dsl) -> Drawing {
        let ids: Vec<&str> = dsl.components.keys().map(String::as_str).collect();
        let classes: Vec<String> = dsl
            .components
            .values()
            .map(|c| c.obj.component_name.to_ascii_lowercase())
            .collect();
        let mut drawing = Drawing {
            nodes: dsl
                .components
                .iter()
                .map(|(id, c)| {
                    let name = dsl.graph_name(id);
                    Node {
                        name: if name.is_empty() { id.clone() } else { name },
                        class: Some(c.obj.component_name.clone()),
                        shape: Shape::of(&c.obj.component_name),
                        group: None,
                    }
                })
                .collect(),
            ..Drawing::default()
        };
        drawing.add_groups(&containers(dsl, &classes));
        let mut edges = EdgeSet::new(&ids);
        for (i, c) in dsl.components.values().enumerate() {
            let params = &c.obj.params;
            match classes[i].as_str() {
                "switch" => {
                    let conditions = params.get("conditions").and_then(Value::as_array);
                    for (k, cond) in conditions.into_iter().flatten().enumerate() {
                        let label = format!("case {}", k + 1);
                        for t in targets(cond.get("to")) {
                            edges.add(&mut drawing, i, t, Some(&label), false);
                        }
                    }
                    for t in targets(params.get("end_cpn_ids")) {
                        edges.add(&mut drawing, i, t, Some("else"), false);
                    }
                }
                "categorize" => {
                    let categories = params
                        .get("category_description")
                        .and_then(Value::as_object);
                    for (name, def) in categories.into_iter().flatten() {
                        for t in targets(def.get("to")) {
                            edges.add(&mut drawing, i, t, Some(name), false);
                        }
                    }
                }
                class @ ("loop" | "iteration") => {
                    let label = if class == "loop" {
                        "each pass"
                    } else {
                        "each item"
                    };
                    if let Some(start) = body_start(dsl, &classes, ids[i]) {
                        edges.add(&mut drawing, i, ids[start], Some(label), false);
                    }
                }
                _ => {}
            }
            for t in &c.downstream {
                let to = edges.node(&mut drawing, t);
                if !edges.solid.contains(&(i, to)) {
                    edges.add(&mut drawing, i, t, None, false);
                }
            }
            for t in targets(params.get("exception_goto")) {
                edges.add(&mut drawing, i, t, Some("on error"), true);
            }
        }
        drawing
    }

    /// One group per Loop/Iteration that has body components, in file order, nested
    /// like the bodies.
    fn add_groups(&mut self, container: &[Option<usize>]) {
        let mut has_body = vec![false; container.len()];
        for &c in container.iter().flatten() {
            has_body[c] = true;
        }
        let mut group_of = vec![None; container.len()];
        for (i, _) in has_body.iter().enumerate().filter(|(_, b)| **b) {
            group_of[i] = Some(self.groups.len());
            self.groups.push(Group {
                title: format!("{} body", self.nodes[i].name),
                parent: None,
            });
        }
        for (i, c) in container.iter().enumerate() {
            let group = c.and_then(|c| group_of[c]);
            self.nodes[i].group = group;
            if let Some(g) = group_of[i] {
                self.groups[g].parent = group;
            }
        }
    }

    /// The nodes and sub-groups drawn directly in `group` (None = the top level).
    fn members(&self, group: Option<usize>) -> (Vec<usize>, Vec<usize>) {
        let nodes = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].group == group)
            .collect();
        let groups = (0..self.groups.len())
            .filter(|&g| self.groups[g].parent == group)
            .collect();
        (nodes, groups)
    }

    fn mermaid(&self) -> String {
        let mut out = String::from("flowchart LR\n");
        self.mermaid_group(&mut out, None, 1);
        for e in &self.edges {
            let arrow = if e.dotted { "-.->" } else { "-->" };
            let label = e
                .label
                .as_deref()
                .map(|l| format!("|\"{}\"|", mermaid_text(l)))
                .unwrap_or_default();
            let _ = writeln!(out, "    n{} {arrow}{label} n{}", e.from, e.to);
        }
        if self.nodes.iter().any(|n| n.shape == Shape::Missing) {
            out.push_str(
                "    classDef missing stroke:#d00,stroke-width:2px,stroke-dasharray:5 5,color:#d00\n",
            );
        }
        out
    }

    fn mermaid_group(&self, out: &mut String, group: Option<usize>, depth: usize) {
        let pad = "    ".repeat(depth);
        let (nodes, groups) = self.members(group);
        for i in nodes {
            let n = &self.nodes[i];
            let mut text = mermaid_text(&n.name);
            if let Some(class) = &n.class {
                text = format!("{text}<br/>{}", mermaid_text(class));
            }
            let shape = match n.shape {
                Shape::Start => format!("([\"{text}\"])"),
                Shape::Decision => format!("{{\"{text}\"}}"),
                Shape::Rounded => format!("(\"{text}\")"),
                Shape::Input => format!("[/\"{text}\"/]"),
                Shape::Plain => format!("[\"{text}\"]"),
                Shape::Missing => format!("[\"{text}\"]:::missing"),
            };
            let _ = writeln!(out, "{pad}n{i}{shape}");
        }
        for g in groups {
            let title = mermaid_text(&self.groups[g].title);
            let _ = writeln!(out, "{pad}subgraph g{g} [\"{title}\"]");
            self.mermaid_group(out, Some(g), depth + 1);
            let _ = writeln!(out, "{pad}end");
        }
    }

    fn dot(&self) -> String {
        let mut out = String::from("digraph canvas {\n    rankdir=LR;\n    node [shape=box];\n");
        self.dot_group(&mut out, None, 1);
        for e in &self.edges {
            let mut attrs = Vec::new();
            if let Some(l) = &e.label {
                attrs.push(format!("label=\"{}\"", dot_text(l)));
            }
            if e.dotted {
                attrs.push("style=dotted".to_string());
            }
            let attrs = if attrs.is_empty() {
                String::new()
            } else {
                format!(" [{}]", attrs.join(" "))
            };
            let _ = writeln!(out, "    n{} -> n{}{attrs};", e.from, e.to);
        }
        out.push_str("}\n");
        out
    }

    fn dot_group(&self, out: &mut String, group: Option<usize>, depth: usize) {
        let pad = "    ".repeat(depth);
        let (nodes, groups) = self.members(group);
        for i in nodes {
            let n = &self.nodes[i];
            let mut label = dot_text(&n.name);
            if let Some(class) = &n.class {
                label = format!("{label}\\n{}", dot_text(class));
            }
            let style = match n.shape {
                Shape::Start => " shape=oval",
                Shape::Decision => " shape=diamond",
                Shape::Rounded => " style=rounded",
                Shape::Input => " shape=parallelogram",
                Shape::Plain => "",
                Shape::Missing => " style=dashed color=red fontcolor=red",
            };
            let _ = writeln!(out, "{pad}n{i} [label=\"{label}\"{style}];");
        }
        for g in groups {
            let title = dot_text(&self.groups[g].title);
            let _ = writeln!(out, "{pad}subgraph cluster_{g} {{");
            let _ = writeln!(out, "{pad}    label=\"{title}\";");
            let _ = writeln!(out, "{pad}    style=rounded;");
            self.dot_group(out, Some(g), depth + 1);
            let _ = writeln!(out, "{pad}}}");
        }
    }
}

/// Adds edges without duplicates, resolving target ids to nodes (adding a missing
/// node for an id that is not a component).
struct EdgeSet<'a> {
    index: HashMap<&'a str, usize>,
    missing: HashMap<String, usize>,
    seen: HashSet<(usize, usize, Option<String>, bool)>,
    /// `(from, to)` of every solid edge.
    solid: HashSet<(usize, usize)>,
}

impl<'a> EdgeSet<'a> {
    fn new(ids: &[&'a str]) -> Self {
        EdgeSet {
            index: ids.iter().enumerate().map(|(i, id)| (*id, i)).collect(),
            missing: HashMap::new(),
            seen: HashSet::new(),
            solid: HashSet::new(),
        }
    }

    /// The node of a target id.
    fn node(&mut self, drawing: &mut Drawing, id: &str) -> usize {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        if let Some(&i) = self.missing.get(id) {
            return i;
        }
        let i = drawing.nodes.len();
        drawing.nodes.push(Node {
            name: format!("{id} (missing)"),
            class: None,
            shape: Shape::Missing,
            group: None,
        });
        self.missing.insert(id.to_string(), i);
        i
    }

    fn add(
        &mut self,
        drawing: &mut Drawing,
        from: usize,
        to: &str,
        label: Option<&str>,
        dotted: bool,
    ) {
        let to = self.node(drawing, to);
        let label = label.map(str::to_string);
        if !self.seen.insert((from, to, label.clone(), dotted)) {
            return;
        }
        if !dotted {
            self.solid.insert((from, to));
        }
        drawing.edges.push(Edge {
            from,
            to,
            label,
            dotted,
        });
    }
}

/// The target ids of a `to`-like value: a list of ids or one id.
fn targets(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The first LoopItem/IterationItem whose `parent_id` is `id` (where a pass starts).
fn body_start(dsl: &Dsl, classes: &[String], id: &str) -> Option<usize> {
    dsl.components.values().enumerate().position(|(i, c)| {
        c.parent_id.as_deref() == Some(id)
            && matches!(classes[i].as_str(), "loopitem" | "iterationitem")
    })
}

/// For each component, the Loop/Iteration whose body it is drawn in. A `parent_id`
/// naming itself, a non-Loop/Iteration or nothing is ignored, and so is one on a cycle
/// of parents, so the bodies always nest as a tree.
fn containers(dsl: &Dsl, classes: &[String]) -> Vec<Option<usize>> {
    let parent: Vec<Option<usize>> = dsl
        .components
        .iter()
        .enumerate()
        .map(|(i, (_, c))| {
            let p = dsl.components.get_index_of(c.parent_id.as_deref()?)?;
            (p != i && matches!(classes[p].as_str(), "loop" | "iteration")).then_some(p)
        })
        .collect();
    // Find the components on a cycle of parents: walk each chain once, coloring it.
    const NEW: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; parent.len()];
    let mut on_cycle = vec![false; parent.len()];
    for start in 0..parent.len() {
        let mut path = Vec::new();
        let mut cur = Some(start);
        while let Some(i) = cur {
            if state[i] != NEW {
                if state[i] == ON_PATH {
                    let from = path.iter().position(|&p| p == i).unwrap_or(path.len());
                    for &p in &path[from..] {
                        on_cycle[p] = true;
                    }
                }
                break;
            }
            state[i] = ON_PATH;
            path.push(i);
            cur = parent[i];
        }
        for p in path {
            state[p] = DONE;
        }
    }
    parent
        .iter()
        .enumerate()
        .map(|(i, p)| p.filter(|_| !on_cycle[i]))
        .collect()
}

/// Text inside a quoted Mermaid label: entity codes for the characters Mermaid would
/// read as syntax or HTML, spaces for control characters.
fn mermaid_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text inside a quoted DOT string: `"` and `\` escaped, spaces for control characters.
fn dot_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Format, parse};

    fn canvas(text: &str) -> Dsl {
        match parse(text, Format::Json) {
            Ok(d) => d,
            Err(e) => panic!("test canvas: {e}"),
        }
    }

    fn lines(s: &str) -> Vec<&str> {
        s.lines().collect()
    }

    const SWITCH: &str = r#"{"components": {
      "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Switch:Pick"]},
      "Switch:Pick": {"obj": {"component_name": "Switch", "params": {
          "conditions": [
            {"logical_operator": "and", "items": [], "to": ["Message:A"]},
            {"logical_operator": "and", "items": [], "to": ["Message:B", "Message:A"]}
          ],
          "end_cpn_ids": ["Message:C"]}},
        "downstream": ["Message:A", "Message:B", "Message:C"]},
      "Message:A": {"obj": {"component_name": "Message", "params": {}}},
      "Message:B": {"obj": {"component_name": "Message", "params": {}}},
      "Message:C": {"obj": {"component_name": "Message", "params": {}}}
    },
    "graph": {"nodes": [{"id": "Switch:Pick", "data": {"name": "Pick one"}}]}}"#;

    #[test]
    fn switch_cases_and_else() {
        let d = canvas(SWITCH);
        assert_eq!(
            mermaid(&d),
            r#"flowchart LR
    n0(["begin<br/>Begin"])
    n1{"Pick one<br/>Switch"}
    n2("Message:A<br/>Message")
    n3("Message:B<br/>Message")
    n4("Message:C<br/>Message")
    n0 --> n1
    n1 -->|"case 1"| n2
    n1 -->|"case 2"| n3
    n1 -->|"case 2"| n2
    n1 -->|"else"| n4
"#
        );
        assert_eq!(
            dot(&d),
            r#"digraph canvas {
    rankdir=LR;
    node [shape=box];
    n0 [label="begin\nBegin" shape=oval];
    n1 [label="Pick one\nSwitch" shape=diamond];
    n2 [label="Message:A\nMessage" style=rounded];
    n3 [label="Message:B\nMessage" style=rounded];
    n4 [label="Message:C\nMessage" style=rounded];
    n0 -> n1;
    n1 -> n2 [label="case 1"];
    n1 -> n3 [label="case 2"];
    n1 -> n2 [label="case 2"];
    n1 -> n4 [label="else"];
}
"#
        );
    }

    #[test]
    fn output_is_deterministic() {
        let d = canvas(SWITCH);
        assert_eq!(mermaid(&d), mermaid(&d.clone()));
        assert_eq!(dot(&d), dot(&d.clone()));
    }

    #[test]
    fn categorize_edges_are_labelled_by_category() {
        let d = canvas(
            r#"{"components": {
              "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Categorize:C"]},
              "Categorize:C": {"obj": {"component_name": "Categorize", "params": {
                  "category_description": {
                    "Greeting": {"description": "hi", "to": ["Message:Hi"]},
                    "Other": {"description": "rest", "to": "Message:Rest"}},
                  "exception_goto": ["Message:Oops"]}},
                "downstream": ["Message:Hi", "Message:Rest", "Message:Extra"]},
              "Message:Hi": {"obj": {"component_name": "Message", "params": {}}},
              "Message:Rest": {"obj": {"component_name": "Message", "params": {}}},
              "Message:Oops": {"obj": {"component_name": "Message", "params": {}}},
              "Message:Extra": {"obj": {"component_name": "Message", "params": {}}}
            }}"#,
        );
        let m = mermaid(&d);
        let l = lines(&m);
        assert!(
            l.contains(&"    n1{\"Categorize:C<br/>Categorize\"}"),
            "{m}"
        );
        assert!(l.contains(&"    n1 -->|\"Greeting\"| n2"), "{m}");
        assert!(l.contains(&"    n1 -->|\"Other\"| n3"), "{m}");
        assert!(l.contains(&"    n1 --> n5"), "{m}");
        assert!(l.contains(&"    n1 -.->|\"on error\"| n4"), "{m}");
        assert!(!l.contains(&"    n1 --> n2"), "{m}");
        let g = dot(&d);
        let l = lines(&g);
        assert!(l.contains(&"    n1 -> n2 [label=\"Greeting\"];"), "{g}");
        assert!(
            l.contains(&"    n1 -> n4 [label=\"on error\" style=dotted];"),
            "{g}"
        );
    }

    const ITERATION: &str = r#"{"components": {
      "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Iteration:Each"]},
      "Iteration:Each": {"obj": {"component_name": "Iteration", "params": {}}, "downstream": ["Message:Done"]},
      "IterationItem:Start": {"obj": {"component_name": "IterationItem", "params": {}},
        "downstream": ["Loop:Inner"], "parent_id": "Iteration:Each"},
      "Loop:Inner": {"obj": {"component_name": "Loop", "params": {}}, "downstream": [],
        "parent_id": "Iteration:Each"},
      "LoopItem:Go": {"obj": {"component_name": "LoopItem", "params": {}},
        "downstream": ["UserFillUp:Ask"], "parent_id": "Loop:Inner"},
      "UserFillUp:Ask": {"obj": {"component_name": "UserFillUp", "params": {}},
        "downstream": [], "parent_id": "Loop:Inner"},
      "Message:Done": {"obj": {"component_name": "Message", "params": {}}}
    },
    "graph": {"nodes": [{"id": "Iteration:Each", "data": {"name": "For each"}}]}}"#;

    #[test]
    fn iteration_and_loop_bodies_nest() {
        let d = canvas(ITERATION);
        let m = mermaid(&d);
        assert_eq!(
            m,
            r#"flowchart LR
    n0(["begin<br/>Begin"])
    n1["For each<br/>Iteration"]
    n6("Message:Done<br/>Message")
    subgraph g0 ["For each body"]
        n2["IterationItem:Start<br/>IterationItem"]
        n3["Loop:Inner<br/>Loop"]
        subgraph g1 ["Loop:Inner body"]
            n4["LoopItem:Go<br/>LoopItem"]
            n5[/"UserFillUp:Ask<br/>UserFillUp"/]
        end
    end
    n0 --> n1
    n1 -->|"each item"| n2
    n1 --> n6
    n2 --> n3
    n3 -->|"each pass"| n4
    n4 --> n5
"#
        );
        let g = dot(&d);
        assert!(g.contains(
            "    subgraph cluster_0 {\n        label=\"For each body\";\n        style=rounded;\n        n2 [label=\"IterationItem:Start\\nIterationItem\"];\n"
        ), "{g}");
        assert!(
            g.contains("        subgraph cluster_1 {\n            label=\"Loop:Inner body\";\n"),
            "{g}"
        );
        assert!(
            g.contains(
                "            n5 [label=\"UserFillUp:Ask\\nUserFillUp\" shape=parallelogram];\n"
            ),
            "{g}"
        );
        assert!(g.contains("    n1 -> n2 [label=\"each item\"];\n"), "{g}");
    }

    #[test]
    fn parent_cycles_and_bad_parents_stay_at_top_level() {
        let d = canvas(
            r#"{"components": {
              "Loop:A": {"obj": {"component_name": "Loop", "params": {}}, "parent_id": "Loop:B"},
              "Loop:B": {"obj": {"component_name": "Loop", "params": {}}, "parent_id": "Loop:A"},
              "Message:In": {"obj": {"component_name": "Message", "params": {}}, "parent_id": "Loop:A"},
              "Loop:C": {"obj": {"component_name": "Loop", "params": {}}, "parent_id": "Loop:C"},
              "Message:X": {"obj": {"component_name": "Message", "params": {}}, "parent_id": "Message:In"},
              "Message:Y": {"obj": {"component_name": "Message", "params": {}}, "parent_id": "Nope"}
            }}"#,
        );
        let m = mermaid(&d);
        assert_eq!(m.matches("subgraph").count(), 1, "{m}");
        assert!(m.contains("    subgraph g0 [\"Loop:A body\"]\n        n2(\"Message:In<br/>Message\")\n    end\n"), "{m}");
        assert!(m.contains("\n    n1[\"Loop:B<br/>Loop\"]\n"), "{m}");
        let g = dot(&d);
        assert_eq!(g.matches("subgraph").count(), 1, "{g}");
    }

    #[test]
    fn missing_targets_are_marked() {
        let d = canvas(
            r#"{"components": {
              "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Gone:X", "Message:A"]},
              "Message:A": {"obj": {"component_name": "Message", "params": {"exception_goto": "Gone:X"}},
                "downstream": ["Gone:Y"]}
            }}"#,
        );
        let m = mermaid(&d);
        let l = lines(&m);
        assert!(l.contains(&"    n2[\"Gone:X (missing)\"]:::missing"), "{m}");
        assert!(l.contains(&"    n3[\"Gone:Y (missing)\"]:::missing"), "{m}");
        assert!(l.contains(&"    n0 --> n2"), "{m}");
        assert!(l.contains(&"    n1 --> n3"), "{m}");
        assert!(l.contains(&"    n1 -.->|\"on error\"| n2"), "{m}");
        assert!(m.ends_with("stroke-dasharray:5 5,color:#d00\n"), "{m}");
        let g = dot(&d);
        assert!(
            g.contains(
                "    n2 [label=\"Gone:X (missing)\" style=dashed color=red fontcolor=red];\n"
            ),
            "{g}"
        );
        assert!(!mermaid(&canvas(SWITCH)).contains("classDef"));
    }

    #[test]
    fn labels_are_escaped() {
        let d = canvas(
            r#"{"components": {
              "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Categorize:C"]},
              "Categorize:C": {"obj": {"component_name": "Categorize", "params": {
                  "category_description": {"say \"hi\" <b> & #1;": {"to": ["begin"]}}}}}
            },
            "graph": {"nodes": [{"id": "begin", "data": {"name": "He said \"go\\now\"\nthen <left>"}}]}}"#,
        );
        let m = mermaid(&d);
        assert!(
            m.contains("    n0([\"He said #quot;go\\now#quot; then #lt;left#gt;<br/>Begin\"])\n"),
            "{m}"
        );
        assert!(
            m.contains("    n1 -->|\"say #quot;hi#quot; #lt;b#gt; #amp; #35;1;\"| n0\n"),
            "{m}"
        );
        let g = dot(&d);
        assert!(
            g.contains(
                "    n0 [label=\"He said \\\"go\\\\now\\\" then <left>\\nBegin\" shape=oval];\n"
            ),
            "{g}"
        );
        assert!(
            g.contains("    n1 -> n0 [label=\"say \\\"hi\\\" <b> & #1;\"];\n"),
            "{g}"
        );
    }

    #[test]
    fn odd_params_do_not_panic() {
        let d = canvas(
            r#"{"components": {
              "Switch:S": {"obj": {"component_name": "switch", "params": {
                  "conditions": {"to": "x"}, "end_cpn_ids": 3}}, "downstream": ["Switch:S", "Switch:S"]},
              "Categorize:C": {"obj": {"component_name": "Categorize", "params": {
                  "category_description": ["a"], "exception_goto": [1, null, "Switch:S"]}}},
              "Switch:T": {"obj": {"component_name": "Switch", "params": {"conditions": [1, {"to": [{}]}]}}},
              "Iteration:I": {"obj": {"component_name": "Iteration", "params": {}}}
            }}"#,
        );
        let m = mermaid(&d);
        assert_eq!(m.matches("n0 --> n0").count(), 1, "{m}");
        assert!(m.contains("    n1 -.->|\"on error\"| n0\n"), "{m}");
        assert!(m.ends_with('\n'));
        assert!(dot(&d).ends_with("}\n"));
    }

    #[test]
    fn go_testdata_all() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/fixtures/ragflow/go-testdata/all.json"
        );
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("{path}: {e}"),
            Err(e) => {
                eprintln!("skipping: {path}: {e}");
                return;
            }
        };
        let d = canvas(&text);
        let ids: Vec<&String> = d.components.keys().collect();
        let n = |id: &str| match ids.iter().position(|k| *k == id) {
            Some(i) => format!("n{i}"),
            None => panic!("all.json has no {id}"),
        };
        let (lp, route) = (n("Loop:InputUntil1"), n("Switch:Route"));
        let missing = format!("n{}", ids.len());
        let m = mermaid(&d);
        assert!(m.contains("subgraph "), "{m}");
        assert!(
            m.contains(&format!("\n    {lp} -->|\"each pass\"| ")),
            "{m}"
        );
        assert!(
            m.contains(&format!(
                "\n    {missing}[\"CodeExec:FunnyBroomsShare (missing)\"]:::missing\n"
            )),
            "{m}"
        );
        assert!(
            m.contains(&format!("\n    {route} -->|\"case 5\"| {missing}\n")),
            "{m}"
        );
        let g = dot(&d);
        assert!(g.contains("subgraph cluster_"), "{g}");
        assert!(
            g.contains(&format!(
                "\n    {missing} [label=\"CodeExec:FunnyBroomsShare (missing)\" style=dashed color=red fontcolor=red];\n"
            )),
            "{g}"
        );
        // The Loop's body holds its LoopItem.
        let item = n("LoopItem:InputUntil1Start");
        let body = m
            .split("subgraph ")
            .find(|s| s.contains(&format!("\n        {item}")))
            .unwrap_or_default();
        assert!(body.contains(" body\"]"), "{m}");
        let loop_name = d.graph_name("Loop:InputUntil1");
        let title = if loop_name.is_empty() {
            "Loop:InputUntil1".to_string()
        } else {
            loop_name
        };
        assert!(
            body.contains(&format!("[\"{} body\"]", mermaid_text(&title))),
            "{m}"
        );
    }
}
