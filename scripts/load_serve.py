#!/usr/bin/env python3
"""A bounded load test of `canvas serve` (not a test: it reports, with no thresholds).

Starts one server on 127.0.0.1 (a store in a temporary directory, the mock LLM answering
every call after 100 ms), opens N sessions of the `chat` agent of tests/fixtures/serve,
and has N clients ask their session question after question, each answer streamed to
its end (`data:[DONE]`), for a fixed time. Prints requests/s, latency p50/p99, errors and
the server's peak RSS. Only 127.0.0.1 is ever contacted; every loop stops by itself.

    scripts/load_serve.py                          # 200 sessions, 60 s, target/release/canvas
    scripts/load_serve.py --sessions 20 --seconds 10 --bin target/debug/canvas
"""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "load-test-key"


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def peak_rss_kib(pid):
    """VmHWM: the process's peak resident set, in KiB (Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def request(port, method, path, body=None, timeout=120):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        payload = None if body is None else json.dumps(body)
        conn.request(method, path, body=payload, headers={
            "Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
        res = conn.getresponse()
        return res.status, res.read()
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "target/release/canvas"))
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--latency-ms", type=int, default=100, help="the mock model's delay")
    args = ap.parse_args()
    args.bin = str(Path(args.bin).resolve())
    if not (1 <= args.sessions <= 1000 and 1 <= args.seconds <= 600):
        sys.exit("bounded: 1 to 1000 sessions, 1 to 600 seconds")

    work = Path(tempfile.mkdtemp(prefix="canvas-load-"))
    (work / "keys").write_text(KEY + "\n")
    mock = work / "mock.yaml"
    mock.write_text(f"rules: []\ndefault: echo\ndelay_ms: {args.latency_ms}\n")
    ready = work / "ready"
    log = open(work / "serve.log", "w")
    server = subprocess.Popen(
        [args.bin, "serve", str(ROOT / "tests/fixtures/serve"), "--addr", "127.0.0.1:0",
         "--api-key-file", str(work / "keys"), "--mock-llm", str(mock),
         "--store", str(work / "canvas.db"), "--ready-file", str(ready), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=log, cwd=work, env={**os.environ, "HOME": str(work)})
    try:
        deadline = time.time() + 30
        while not (ready.exists() and ready.read_text().strip()):
            if server.poll() is not None or time.time() > deadline:
                sys.exit(f"the server did not start: {(work / 'serve.log').read_text()}")
            time.sleep(0.05)
        port = int(ready.read_text().strip().rsplit(":", 1)[1])

        sessions = []
        for _ in range(args.sessions):
            status, body = request(port, "POST", "/api/v1/agents/chat/sessions", {})
            if status != 200:
                sys.exit(f"creating a session failed: {status} {body[:200]!r}")
            sessions.append(json.loads(body)["data"]["id"])

        latencies, errors, lock = [], [], threading.Lock()
        start = time.time()
        stop_at = start + args.seconds

        def client(n, session):
            i = 0
            while time.time() < stop_at:
                i += 1
                body = {"agent_id": "chat", "session_id": session, "query": f"question {i} of {n}"}
                t0 = time.time()
                try:
                    status, raw = request(port, "POST", "/api/v1/agents/chat/completions", body)
                    text = raw.decode()
                    ok = status == 200 and text.endswith("data:[DONE]\n\n") and (
                        f"ECHO: question {i} of {n}" in text) and '"code": 500' not in text
                    why = None if ok else f"{status}: {text[-200:]!r}"
                except Exception as e:  # a refused or dropped connection counts as an error
                    why = repr(e)
                took = time.time() - t0
                with lock:
                    if why is None:
                        latencies.append(took)
                    else:
                        errors.append(why)

        threads = [threading.Thread(target=client, args=(n, s)) for n, s in enumerate(sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - start
        peak = peak_rss_kib(server.pid)
        done = len(latencies)
        print(f"{args.sessions} sessions, {elapsed:.1f} s, mock model {args.latency_ms} ms")
        print(f"requests: {done} ok, {len(errors)} errors, {done / elapsed:.1f} requests/s")
        print(f"latency: p50 {percentile(latencies, 50) * 1000:.0f} ms, "
              f"p99 {percentile(latencies, 99) * 1000:.0f} ms")
        print(f"server peak RSS: {peak / 1024:.1f} MiB" if peak else "server peak RSS: unknown")
        for e in errors[:5]:
            print(f"error: {e}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
