//! The Jinja step of a Message or StringTransform merge (`render_jinja`) against
//! Jinja2's `SandboxedEnvironment`, which RAGFlow's Message renders with: the same text
//! for each template, or an error on both sides. The variables are strings, as the
//! merge passes them (`engine.md` §3.4d).
//!
//! Where they still differ (docs/differences.md) is left out: tuples print as lists,
//! `range(n)` prints its items, Python's string formatting (`'%s' % x`, `'{}'.format(x)`),
//! `wordwrap` and the string methods `casefold` and `encode` are not there, `2 ** -1`
//! and `1 / 0` are refused and infinite.
//!
//! Jinja2 comes from the virtual environment `scripts/test-python.sh` makes; without
//! it the test fails under `CI=true` and is skipped otherwise.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use canvas_engine::jinja::render_jinja;
use serde_json::{Value, json};

/// Python side: one `[template, vars]` a line; prints `{"ok": text}` or `"error"`.
const PYTHON: &str = r#"
import json, sys
from jinja2.sandbox import SandboxedEnvironment
env = SandboxedEnvironment()
for line in sys.stdin:
    template, variables = json.loads(line)
    try:
        print(json.dumps({"ok": env.from_string(template).render(variables)}))
    except Exception:
        print(json.dumps("error"))
"#;

/// The variables every template sees (strings, as a merge gives them).
const VARS: [(&str, &str); 6] = [
    ("name", "Ada Lovelace"),
    ("n", "42"),
    ("csv", "a,b,c"),
    ("empty", ""),
    ("html", "<b>x</b> & y"),
    ("pi", "3.14159"),
];

/// Templates as canvases write them, and the corners where engines differ.
const TEMPLATES: &[&str] = &[
    "Hello {{ name }}!",
    "{{ name | upper }} {{ name | lower }} {{ name | title }} {{ 'ab' | capitalize }}",
    "{{ name | length }} {{ name | replace('a', 'o') }} {{ name | reverse }}",
    "{% if n == '42' %}yes{% else %}no{% endif %}",
    "{% if empty %}full{% else %}empty{% endif %}",
    "{% for c in csv %}[{{ c }}]{% endfor %}",
    "{% for x in csv.split(',') %}{{ loop.index }}:{{ x }}{% if not loop.last %}, {% endif %}{% endfor %}",
    "{{ csv.split(',') }}",
    "{{ csv.split(',') | join(' | ') }}",
    "{{ n | int + 1 }} {{ pi | float * 2 }} {{ n | int / 4 }} {{ n | int // 4 }} {{ n | int % 5 }}",
    "{{ 7 / 2 }} {{ 8 / 2 }} {{ 2 ** 10 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ -0.0 }}",
    "{{ n == '42' }} {{ n == 42 }} {{ none }} {{ true }} {{ false }} {{ True }}",
    "{{ [1, 'a', none, true, 2.5] }} {{ {'k': 'v', 'n': 1} }} {{ {'b': 1, 'a': 2} }}",
    "{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %} {{ {'b': 1, 'a': 2} | list }}",
    "{{ 'a b&c/d?e=é' | urlencode }} {{ {'q': 'a b/c', 'n': 1, 't': true} | urlencode }} {{ [('k', 'v w')] | urlencode }} {{ 1.5 | urlencode }}",
    "{{ name ~ '!' ~ 1 ~ true ~ none }}",
    "{{ html }} {{ html | e }} {{ html | striptags }}",
    "{{ nope }}|{{ nope | default('dflt') }}|{{ empty | default('dflt') }}|{{ empty | default('dflt', true) }}",
    "{{ nope.attr }}",
    "{{ name[0] }}{{ name[-1] }} {{ name[1:4] }}",
    "{{ 'x' * 3 }} {{ name | truncate(9) }} {{ name | wordcount }}",
    "{%- if true -%}\n  trimmed  \n{%- endif -%}\n",
    "{% set greeting = 'Hi ' ~ name %}{{ greeting }}",
    "{{ csv.split(',') | first }} {{ csv.split(',') | last }} {{ csv.split(',') | list | length }}",
    "{{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sum }} {{ [3, 1, 2] | max }} {{ [1, 1, 2] | unique | list }}",
    "{{ pi | round(2) }} {{ -3 | abs }} {{ 2.5 | round }} {{ 3.5 | round }}",
    "{{ name.startswith('Ada') }} {{ name.endswith('x') }} {{ '  s  '.strip() }} {{ name.replace(' ', '_') }}",
    "{{ name | center(20) }}|{{ name | indent(2) }}",
    "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}",
    "{{ range(3) | list }} {% for i in range(1, 4) %}{{ i }}{% endfor %}",
    "{% if 'b' in csv %}in{% endif %} {{ 'z' not in csv }}",
    "{{ n is number }} {{ n is string }} {{ 4 is even }} {{ nope is defined }} {{ none is none }}",
    "{{ [1, 2, 3] | map('string') | join(',') }} {{ ['a', 'B'] | map('upper') | list }}",
    "{{ 10000000000000000 }} {{ 1.0 }} {{ 3 * 1.5 }}",
    "{{ name | tojson }} {{ [1, 'x'] | tojson }}",
    "{% macro hi(who) %}Hi {{ who }}{% endmacro %}{{ hi(name) }}",
    "{{ name | urlencode }}|{{ csv | list }}|{{ name | trim }}",
    "{{ n | int is even }} {{ pi | int }} {{ n | float }} {{ 'abc' | first }} {{ 'x' | int }}",
    "{{ 'x' | float }} {{ ' 4_2 ' | int }} {{ '１２' | int }} {{ '1e3' | int }} {{ 'nan' | int(7) }} {{ none | int }} {{ true | int }} {{ 3.9 | int }} {{ -3.9 | int }}",
    "{{ 'ff' | int(base=16) }} {{ '101' | int(0, 2) }} {{ 'x' | int('d') }} {{ [1] | float }} {{ '2.5' | float + 1 }}",
    "{% for x in csv.split(',') %}{{ loop.length }}{{ loop.first }}{{ loop.revindex }}{% endfor %}",
    "{{ 'abcde' | batch(2) | list }} {{ [1, 2, 3] | select('odd') | list }}",
    "{{ '%.2f' | format(3.14159) }} {{ '%s-%s' | format('a', 1) }}",
    "{{ name.lower() }} {{ name.title() }} {{ name.split() }} {{ name.count('a') }} {{ name.find('L') }}",
    "{% for i in [] %}x{% else %}empty{% endfor %}",
    "{{ {'a': 1}.a }} {{ {'a': 1}['a'] }} {{ {'a': 1}.get('b', 'none') }} {{ {'a': 1}.keys() | list }}",
    "{{ csv.split(',')[1] }} {{ name | slice(2) | list }} {{ name | string }} {{ 3 | string }}",
    "{{ 2.0 }} {{ 1.5e-7 }} {{ 123456789.123 }} {{ 1 == 1.0 }} {{ 3 > 2 > 1 }}",
    "{{ [1, [2, 'x']] | tojson }} {{ {'b': 'é', 'a': '<'} | tojson }}",
    "{{ name | truncate(5, true) }} {{ name | truncate(8, end='~') }} {{ name | truncate(3) }}",
    "{{ 'a  b\tc' | wordcount }} {{ 'ünï_cödé wörds' | wordcount }}",
    "{{ html | escape | safe }} {{ html | safe | escape }} {{ 3 | e }} [{{ nope | e }}] {{ [1, 'a'] | e }} {{ none | e }}",
    "{{ 'é' | center(5) }}|{{ name | center }}|",
    "{{ name if n else 'no' }} {{ 'yes' if empty else 'no' }}",
    "{{ (n | int) + (pi | float) }} {{ 10 / 4 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 3 }}",
    "{{ name is lower }} {{ name is upper }} {{ 'abc' is lower }}",
    "{{ name | length > 0 }} {{ name[:3] }} {{ name.strip() }} {{ html | replace('&', 'and') }}",
    "{% for line in 'a\nb\n\nc'.split('\n') %}<{{ loop.index0 }}:{{ line }}>{% endfor %}",
    "{% raw %}{{ not rendered }}{% endraw %}{# a comment #}|{{ '%s' | format(name) }}",
    "{% set x = n | int %}{{ x * 2 }} {% if x > 10 %}big{% endif %} {{ x is divisibleby 7 }}",
    "{% for a in 'ab' %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.depth }} {% endfor %}{% endfor %}",
    "{{ name.upper()[0] }} {{ empty or 'N/A' }} {{ name and 'yes' }} {{ not empty }} {{ empty is not none }}",
    "{{ [name, n] | join(', ') }} {{ 'abc' | list | reverse | join }} {{ name.split(' ') | map('lower') | join('-') }}",
    "{{ n ~ pi }} {{ n + pi }} {{ n * 2 }} {{ (n | int) > (pi | float) }}",
    "{{ name.replace('a', 'A', 1) }} {{ name.lstrip('A') }} {{ name.rstrip('e') }} {{ name.center(16, '*') }}",
    "{{ name.isupper() }} {{ n.isdigit() }} {{ name.islower() }} {{ name.capitalize() }}",
    "{{ csv.split(',', 1) }} {{ name.rsplit(' ', 1)[-1] }} {{ name.partition(' ')[2] }} {{ name.zfill(15) }}",
    "{{ '-42'.zfill(6) }} {{ '+7'.zfill(1) }} [{{ name.ljust(15, '.') }}] [{{ name.rjust(14) }}] [{{ 'é'.center(4) }}]",
    "{{ '  a  b c '.rsplit() }} {{ '  a  b c '.rsplit(none, 1) }} {{ 'a,b,,c'.rsplit(',') }} {{ 'a,b,c'.rsplit(',', 0) }}",
    "{{ name.rpartition('a')[0] }} {{ name.partition('x')[0] }} {{ name.rpartition('x')[2] }} {{ 'éa'.index('a') }}",
    "{{ name.removeprefix('Ada ') }} {{ name.removesuffix('ace') }} {{ name.removeprefix('x') }} {{ [1, 2, 3].index(2) }}",
    "{{ name.index('x') }}",
    "{{ 'ΣΑΣ ΟΔΟΣ.'.swapcase() }} {{ 'Straße'.swapcase() }} {{ name.istitle() }} {{ 'ǅemal'.istitle() }} {{ 'Hello world'.istitle() }}",
    "{{ '١٢٣'.isdecimal() }} {{ '½'.isdecimal() }} {{ ''.isdecimal() }} {{ 'a\tb\tc'.expandtabs() }} {{ 'a\tb'.expandtabs(4) }}",
    "{{ name.join(['1', '2']) }} {{ name.startswith(('A', 'B')) }} {{ name.index('L') }}",
    "{{ {'a': 1}.values() | list }} {{ [1, 2] + [3] }} {{ 'ab' in ['ab'] }}",
    "unclosed {{ name",
    "{% for %}",
    "{{ name | nosuchfilter }}",
];

/// The virtual environment's python, or `None` (skip, with a note) outside CI.
fn python() -> Option<PathBuf> {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/pyenv/bin/python");
    if py.exists() {
        return Some(py);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is missing: .ci/run runs scripts/test-python.sh first",
        py.display()
    );
    eprintln!(
        "note: no {} (scripts/test-python.sh makes it); Jinja2 comparison skipped",
        py.display()
    );
    None
}

#[test]
fn templates_render_as_jinja2_renders_them() {
    let Some(py) = python() else {
        return;
    };
    let vars: Vec<(String, String)> = VARS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let var_map: serde_json::Map<String, Value> = VARS
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let mut input = String::new();
    for t in TEMPLATES {
        input.push_str(&json!([t, var_map]).to_string());
        input.push('\n');
    }
    let mut child = Command::new(py)
        .args(["-c", PYTHON])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the venv's python starts");
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("python ran");
    writer
        .join()
        .expect("writer thread")
        .expect("input written");
    assert!(out.status.success(), "python failed: {out:?}");
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let theirs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(theirs.len(), TEMPLATES.len());
    let mut differ = Vec::new();
    for (t, want) in TEMPLATES.iter().zip(&theirs) {
        let ours = match render_jinja(t, &vars) {
            Ok(s) => json!({ "ok": s }),
            Err(_) => json!("error"),
        };
        if &ours != want {
            differ.push(format!("{t:?}\n  ours:   {ours}\n  Jinja2: {want}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
