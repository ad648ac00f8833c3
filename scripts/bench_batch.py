#!/usr/bin/env python3
"""Throughput of `canvas batch`: rows per second and peak memory, whole process.

Two cases, each run several times on a fresh SQLite store (median reported):

  switch   Begin -> Switch -> two Messages, 10,000 rows: the cost of a row itself
           (claiming it, storing its run, its events and its result).
  llm      Begin -> LLM (mock, 100 ms before each answer) -> Message, 2,000 rows at
           --concurrency 64: how close many model-bound rows get to the ideal
           (concurrency / latency = 640 rows/s).

    python3 scripts/bench_batch.py                      # builds the release binary first
    python3 scripts/bench_batch.py --bin target/release/canvas --runs 5
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def switch_case(work: Path, rows: int) -> list:
    canvas = {"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {"inputs": {
            "n": {"name": "N", "type": "integer", "optional": False}}}},
            "downstream": ["Switch:Size"], "upstream": []},
        "Switch:Size": {"obj": {"component_name": "Switch", "params": {
            "conditions": [{"logical_operator": "and", "items": [
                {"cpn_id": "begin@n", "operator": ">", "value": "5000"}],
                "to": ["Message:Big"]}],
            "end_cpn_ids": ["Message:Small"]}},
            "downstream": ["Message:Big", "Message:Small"], "upstream": ["begin"]},
        "Message:Big": {"obj": {"component_name": "Message", "params": {
            "stream": False, "content": ["big {begin@n}"]}}, "downstream": [], "upstream": ["Switch:Size"]},
        "Message:Small": {"obj": {"component_name": "Message", "params": {
            "stream": False, "content": ["small {begin@n}"]}}, "downstream": [], "upstream": ["Switch:Size"]},
    }}
    (work / "switch.json").write_text(json.dumps(canvas))
    with open(work / "switch.jsonl", "w") as f:
        for i in range(1, rows + 1):
            want = "big" if i > 5000 else "small"
            f.write(json.dumps({"id": f"r{i}", "inputs": {"n": i}, "expect": {"contains": want}}) + "\n")
    return ["batch", str(work / "switch.json"), "--dataset", str(work / "switch.jsonl")]


def llm_case(work: Path, rows: int, latency_ms: int) -> list:
    canvas = {"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:A"], "upstream": []},
        "LLM:A": {"obj": {"component_name": "LLM", "params": {
            "llm_id": "", "sys_prompt": "Answer briefly.",
            "prompts": [{"role": "user", "content": "{sys.query}"}]}},
            "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message", "params": {
            "stream": False, "content": ["{LLM:A@content}"]}}, "downstream": [], "upstream": ["LLM:A"]},
    }}
    (work / "llm.json").write_text(json.dumps(canvas))
    (work / "mock.json").write_text(json.dumps({"rules": [], "default": "echo", "delay_ms": latency_ms}))
    with open(work / "llm.jsonl", "w") as f:
        for i in range(1, rows + 1):
            f.write(json.dumps({"query": f"question {i}", "expect": {"contains": f"question {i}"}}) + "\n")
    return ["batch", str(work / "llm.json"), "--dataset", str(work / "llm.jsonl"),
            "--mock-llm", str(work / "mock.json")]


def run_once(binary: str, args: list, store: Path) -> tuple:
    for p in store.parent.glob(store.name + "*"):
        p.unlink()
    start = time.perf_counter()
    proc = subprocess.Popen([binary, *args, "--store", str(store), "--quiet", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"canvas {' '.join(args)} exited {code}:\n{err}")
    summary = json.loads(out)["summary"]
    return took, usage.ru_maxrss / 1024.0, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="canvas binary (default: cargo build --release, target/release/canvas)")
    ap.add_argument("--runs", type=int, default=3, help="runs per case (median reported)")
    ap.add_argument("--switch-rows", type=int, default=10_000)
    ap.add_argument("--llm-rows", type=int, default=2_000)
    ap.add_argument("--latency-ms", type=int, default=100)
    ap.add_argument("--concurrency", type=int, default=64, help="--concurrency of the llm case")
    a = ap.parse_args()
    binary = a.bin
    if binary is None:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        binary = str(ROOT / "target/release/canvas")
    work = ROOT / "target/bench-batch"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cases = [
        ("switch", switch_case(work, a.switch_rows), a.switch_rows, None),
        ("llm", llm_case(work, a.llm_rows, a.latency_ms) + ["--concurrency", str(a.concurrency)],
         a.llm_rows, a.concurrency * 1000.0 / a.latency_ms),
    ]
    print(f"machine: {os.cpu_count()} CPUs; {a.runs} runs per case, fresh SQLite store each; median")
    print(f"{'case':<8} {'rows':>6} {'median s':>9} {'rows/s':>8} {'ideal rows/s':>13} {'peak RSS MiB':>13}")
    for name, args, rows, ideal in cases:
        results = [run_once(binary, args, work / f"{name}.db") for _ in range(a.runs)]
        for _, _, s in results:
            c = s["counts"]
            if c["succeeded"] != rows or c["checks_failed"] != 0:
                sys.exit(f"{name}: not every row passed: {c}")
        took = statistics.median(r[0] for r in results)
        rss = statistics.median(r[1] for r in results)
        ideal_s = f"{ideal:.0f}" if ideal else "—"
        print(f"{name:<8} {rows:>6} {took:>9.3f} {rows / took:>8.0f} {ideal_s:>13} {rss:>13.1f}")
        print(f"  command: {binary} {' '.join(args)} --store STORE --quiet --format json")


if __name__ == "__main__":
    main()
