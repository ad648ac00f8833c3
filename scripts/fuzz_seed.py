#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (`scripts/fuzz.sh seed` runs this).

Writes fuzz/corpus/<target>/<sha1 of the input> from RAGFlow's fixtures and the
conformance cases in ../shared (or $CANVAS_SHARED), the example canvases and mock
scripts, the YAML examples of docs/, and fuzz/regressions. The corpus is gitignored:
nothing of ../shared is ever committed. Input layouts are the targets' own
(crates/fuzz-targets/src/*.rs): texts joined by NUL bytes, a mode byte for
stored_events.
"""

import hashlib
import json
import os
import re
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CANVAS_SHARED", ROOT.parent / "shared"))
CORPUS = ROOT / "fuzz" / "corpus"
TARGETS = ["dsl", "template", "pyrt", "mock_script", "llm_config", "inputs", "stored_events"]
# Keep seeds small: libFuzzer's -max_len follows the largest one.
MAX_SEED = 64 * 1024

counts = {t: 0 for t in TARGETS}


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    if not data or len(data) > MAX_SEED:
        return
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    f = d / hashlib.sha1(data).hexdigest()
    if not f.exists():
        f.write_bytes(data)
        counts[target] += 1


def nul(*parts):
    return b"\0".join(p.encode() if isinstance(p, str) else p for p in parts)


def read_json(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def strings(v):
    """Every string inside a JSON value."""
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings(x)


def yaml_blocks(path):
    try:
        text = path.read_text()
    except OSError:
        return []
    return re.findall(r"```ya?ml\n(.*?)```", text, re.S)


def events(path):
    """(name, data) of the events of an expected.jsonl, turn markers left out."""
    out = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and "data" in ev and not ev.get("event", "").startswith("__"):
            out.append((ev["event"], ev["data"]))
    return out


def lz4_literals(data):
    """An LZ4 block of literals only (valid LZ4), size prepended as the store writes it."""
    n = len(data)
    token = min(n, 15) << 4
    extra = b""
    if n >= 15:
        rest = n - 15
        extra = b"\xff" * (rest // 255) + bytes([rest % 255])
    return struct.pack("<I", n) + bytes([token]) + extra + data


def compact(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def begin_inputs(canvas):
    comps = canvas.get("components") if isinstance(canvas, dict) else None
    if not isinstance(comps, dict):
        return {}
    fields = {}
    for c in comps.values():
        obj = c.get("obj", {}) if isinstance(c, dict) else {}
        if obj.get("component_name") in ("Begin", "UserFillUp"):
            ins = obj.get("params", {}).get("inputs")
            if isinstance(ins, dict):
                for k, v in ins.items():
                    fields.setdefault(k, v)
    return fields


def main():
    if not SHARED.is_dir():
        print(f"warning: {SHARED} is missing: seeding from this repository only", file=sys.stderr)

    canvases = sorted((SHARED / "fixtures").glob("ragflow/**/*.json"))
    canvases += sorted((SHARED / "conformance").glob("**/canvas.json"))
    canvases += sorted(p for p in (ROOT / "canvases").glob("*") if p.suffix in (".json", ".yaml", ".yml") and ".mock." not in p.name)
    for p in canvases:
        text = p.read_text()
        put("dsl", text)

    # template: a case's node outputs as the state, each of its texts that references.
    for case in sorted((SHARED / "conformance").glob("cases/*")):
        canvas = read_json(case / "canvas.json")
        nodes = {}
        for name, data in events(case / "expected.jsonl"):
            if name == "node_finished" and isinstance(data, dict):
                outs = data.get("outputs")
                if isinstance(outs, dict):
                    nodes[data.get("component_id", "")] = outs
        state = json.dumps({"nodes": nodes, "globals": {"sys.query": "hello", "env.x": [1, 2]}})
        texts = [s for s in strings(canvas) if "{" in s and len(s) < 4000]
        for t in texts[:20]:
            put("template", nul(state, t))
            put("template", nul("", t))
        # pyrt: Python's repr of every output, a literal RAGFlow parses.
        for outs in nodes.values():
            for v in outs.values():
                put("pyrt", repr(v))
                if isinstance(v, str):
                    put("pyrt", v)
        # inputs: the fields Begin declares, the inputs a turn gives, as a file.
        fields = begin_inputs(canvas)
        spec = read_json(case / "case.json") or {}
        for turn in spec.get("turns", []):
            given = turn.get("inputs") or {}
            pairs = "\n".join(f"{k}={v.get('value') if isinstance(v, dict) else v}" for k, v in given.items())
            put("inputs", nul(json.dumps(fields), json.dumps(given), pairs))
            put("mock_script", nul(json.dumps(spec["llm"]) if spec.get("llm") else "{}", turn.get("query", ""), "You are a helpful assistant."))
        # stored_events: the case's events as a chunk's text (round trip), and as a
        # stored row (LZ4 literals) for the corrupt-bytes mode.
        evs = events(case / "expected.jsonl")
        if evs:
            text = "".join(f"{n} {compact(d)}\n" for n, d in evs)
            put("stored_events", b"\x01" + text.encode())
            put("stored_events", b"\x03" + "".join(f"{n} {compact(d)}\n" for n, d in evs[:4]).encode())
            body = lz4_literals(text.encode())
            if len(body) < 65536:
                row = struct.pack("<qqH", 1, len(evs), len(body)) + body
                put("stored_events", b"\x00" + row)

    for p in sorted((ROOT / "canvases").glob("*.mock.yaml")):
        put("mock_script", nul(p.read_text(), "my order is late", "You are a support agent."))
    for block in yaml_blocks(ROOT / "docs" / "mock-llm.md"):
        put("mock_script", nul(block, "hello", ""))
    for block in yaml_blocks(ROOT / "docs" / "providers.md"):
        put("llm_config", nul(block, "OPENAI_API_KEY=sk-1\nOLLAMA_HOST=localhost:11434", "qwen2.5:7b@Ollama\ngpt-4o@OpenAI"))

    # A few of each kind written here, for what no file above shows.
    for s in ["1", "-0.0", "1e400", "0x_ff", "(1, [2, {'a': None}], True)", "{1: 'a', 1.0: 'b'}",
              "b'x'", "{1, 2}", "1+2j", "'\\N{BULLET}'", "[[[[]]]]", "'''a\\\nb'''", "-1_000.5e-3"]:
        put("pyrt", s)
    put("template", nul('{"nodes": {"LLM:A": {"content": "hi", "structured": {"k": [1, 2]}}}}',
                        "{% if LLM_A_content %}{{LLM_A_content|upper}}{% endfor %} {LLM:A@structured.k.1} {sys.query}"))
    put("llm_config", nul("default_model: m@OpenAI\ntimeout_secs: 30\nfactories:\n  Local: {base_url: 'http://h:1', api_key_env: K}\n"
                          "models:\n  'm@Local': {name: real, context_length: 4096, supports_tools: false}\n"
                          "ragflow: {base_url: 'https://r', api_key: x}\n", "K=v", "m@Local\nx@y@Local"))
    put("inputs", nul('{"n": {"type": "integer"}, "p": {"type": "options", "options": ["a", 2]}, "f": {"type": "file", "optional": true}}',
                      "n: '3'\np: 2\nf: [a.txt]\nk: {value: 1, type: line}\n", "n=4\np=A\nf=\nx=[1]"))

    # Everything committed as a regression seeds its target too.
    for t in TARGETS:
        for f in sorted((ROOT / "fuzz" / "regressions" / t).glob("*")):
            if f.is_file():
                put(t, f.read_bytes())

    for t in TARGETS:
        total = len(list((CORPUS / t).glob("*"))) if (CORPUS / t).is_dir() else 0
        print(f"{t:14} {counts[t]:5} new, {total:5} in fuzz/corpus/{t}")


if __name__ == "__main__":
    main()
