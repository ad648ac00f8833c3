#!/usr/bin/env python3
"""Whole-process benchmark of the bench canvases in ../shared/bench.

usage: scripts/bench.py [--bin PATH] [--runs N] [--warmup N] [--cases DIR] [--only REGEX] [--json]
                        [--against OTHER_BINARY]

Each case runs as a user runs it (the contract of ../shared/conformance/run.py):
  canvas run canvas.json -q QUERY --inputs INPUTS.json --mock-llm LLM.json
         --format jsonl --non-interactive --store STORE
with one SQLite store on disk per case (under target/bench-tmp/, kept afterwards so the
printed commands can be rerun): created by the warm-up run, then used by every counted run,
as a user's store is; `--fresh-store` deletes it before every run instead (the cost of
creating the file and its schema included). The store's bytes per stored event are
reported. Wall time is taken around spawn..exit, peak RSS from
wait4(). Two baselines run the same way: `base_message` (Begin -> Message, the fixed cost of
a process) and `perf_e_1chunk` (perf_e answering one word, to get the cost per chunk).
Without --bin, `cargo build --release --locked -q` builds target/release/canvas first.

A run that exits non-zero, or whose event count differs from expected.jsonl, is an error:
it is printed and the script exits 1 at the end. No thresholds are asserted: it is a report.
`cargo bench` keeps the in-process figures.

With --against OTHER_BINARY it compares two builds instead: each case runs with one
binary, then the other (the order alternating), --runs times, each binary with a store of
its own, and the report gives, per case, each binary's median and the median of the
pairs' ratios (this binary's time over the other's, wall and CPU): on a machine whose
speed drifts, a ratio taken pair by pair holds where two medians taken minutes apart do
not. Build the other binary in its own checkout (`git worktree add`), with its own
symbol order (`scripts/symbol_order.py` there), or it runs partly outside its layout.
"""
import argparse, json, os, platform, re, shlex, shutil, statistics, subprocess, sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CASES = os.path.join(os.path.dirname(REPO), "shared", "bench")
WORK = os.path.join(REPO, "target", "bench-tmp")
ECHO_LLM = {"rules": [], "default": "echo"}
RAGFLOW_GLOBALS = {"sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0,
                   "sys.files": [], "sys.history": []}
# Begin -> Message, in the top-level shape the bench canvases use.
BASE_CANVAS = {
    "components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}},
                  "downstream": ["msg"], "upstream": []},
        "msg": {"obj": {"component_name": "Message", "params": {"content": ["hello"]}},
                "downstream": [], "upstream": ["begin"]},
    },
    "globals": RAGFLOW_GLOBALS, "history": [], "path": [], "retrieval": [], "variables": {},
}


def parse_args():
    """Command-line options."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="canvas binary (default: cargo build --release, target/release/canvas)")
    ap.add_argument("--runs", type=int, default=7, help="counted runs per case (at least 5)")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted runs first")
    ap.add_argument("--cases", default=DEFAULT_CASES, help="bench directory")
    ap.add_argument("--only", help="regex on case names")
    ap.add_argument("--json", action="store_true", help="machine-readable results")
    ap.add_argument("--fresh-store", action="store_true",
                    help="delete the store before every run (default: one store per case)")
    ap.add_argument("--against", metavar="OTHER_BINARY",
                    help="compare with another build: runs in turn, medians of paired ratios")
    a = ap.parse_args()
    if a.runs < 5:
        ap.error("--runs must be at least 5")
    if a.warmup < 0:
        ap.error("--warmup must be >= 0")
    return a


def build():
    """Build the release binary from the repo root and return its path."""
    subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=REPO, check=True)
    return os.path.join(REPO, "target", "release", "canvas")


def ragflow_figures(cases_dir):
    """RAGFlow's timings from the bench README: {case: {column: text}}, peak MB or None."""
    table, peak = {}, None
    try:
        text = open(os.path.join(cases_dir, "README.md"), encoding="utf-8").read()
        header = None
        for line in text.splitlines():
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set("".join(cells)) <= set("-: "):
                table[cells[0]] = dict(zip(header, cells))
        m = re.search(r"Peak memory of RAGFlow's process on perf_b:\s*([\d.]+)\s*MB", text)
        peak = float(m.group(1)) if m else None
    except (OSError, ValueError):
        pass
    return table, peak


def ragflow_value(table, case, column):
    """One RAGFlow figure as a float, or None when it is not there."""
    try:
        return float(table[case][column])
    except (KeyError, ValueError):
        return None


def prepare(name, canvas, case, llm=None):
    """Write the mock LLM and inputs of one bench into its own work dir; return its command."""
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    turn = case["turns"][0]
    llm_path, inputs_path = os.path.join(d, "llm.json"), os.path.join(d, "inputs.json")
    with open(llm_path, "w", encoding="utf-8") as f:
        json.dump(llm if llm is not None else (case.get("llm") or ECHO_LLM), f, ensure_ascii=False)
    with open(inputs_path, "w", encoding="utf-8") as f:
        json.dump(turn.get("inputs") or {}, f, ensure_ascii=False)
    args = ["run", canvas, "-q", turn.get("query", ""), "--inputs", inputs_path,
            "--mock-llm", llm_path, "--format", "jsonl", "--non-interactive",
            "--store", os.path.join(d, "store.db")]
    return d, args


# Runs and times one process, started as a small separate Python. The kernel counts the
# spawner's own peak RSS into the child's ru_maxrss at exec, so spawning from this (growing)
# process would inflate every reading; a fresh `python3 -I -S` keeps that floor low, and the
# floor is measured (with `true`) and printed.
SPAWNER = r"""
import json, os, sys, time
for line in sys.stdin:
    q = json.loads(line)
    os.chdir(q["cwd"])
    fa = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
          (os.POSIX_SPAWN_OPEN, 1, q["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
          (os.POSIX_SPAWN_OPEN, 2, q["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(q["argv"][0], q["argv"], os.environ, file_actions=fa)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    print(json.dumps({"wall": wall, "rss_kib": usage.ru_maxrss,
                      "cpu": usage.ru_utime + usage.ru_stime, "faults": usage.ru_minflt,
                      "code": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class Spawner:
    """A helper process that spawns, times (perf_counter) and reaps (wait4) each run."""

    def __init__(self):
        self.p = subprocess.Popen([sys.executable, "-I", "-S", "-c", SPAWNER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def run(self, argv, cwd, out, err):
        """Run argv to completion; returns {"wall": s, "rss_kib": KiB, "cpu": s (user + system),
        "faults": minor page faults, "code": exit code}."""
        self.p.stdin.write(json.dumps({"argv": argv, "cwd": cwd, "out": out, "err": err}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"the spawner died (cannot run {argv[0]}?)")
        return json.loads(line)

    def close(self):
        """End the helper (it exits when its stdin closes)."""
        self.p.stdin.close()
        self.p.wait()


def rss_floor(spawner):
    """ru_maxrss of `true` started by the spawner: readings near it are the spawner's, not ours."""
    true = shutil.which("true") or "/bin/true"
    return spawner.run([true], WORK, os.devnull, os.devnull)["rss_kib"] / 1024


def remove_store(d):
    """Delete the case's store and its side files."""
    for suffix in ("", "-wal", "-shm"):
        try:
            os.remove(os.path.join(d, "store.db" + suffix))
        except FileNotFoundError:
            pass


def store_bytes(d):
    """The case's store file plus its write-ahead log, in bytes."""
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.path.getsize(os.path.join(d, "store.db" + suffix))
        except OSError:
            pass
    return total


def run_once(spawner, binary, args, d, fresh):
    """One process run (a fresh store first when `fresh`), stdout/stderr to files.
    Returns a dict of measures."""
    if fresh:
        remove_store(d)
    out_path, err_path = os.path.join(d, "out.jsonl"), os.path.join(d, "err.txt")
    m = spawner.run([binary] + args, d, out_path, err_path)
    with open(out_path, "rb") as f:
        data = f.read()
    counts, bad = {}, 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            ev = json.loads(line).get("event")
        except (ValueError, AttributeError):
            bad += 1
            continue
        counts[ev] = counts.get(ev, 0) + 1
    with open(err_path, encoding="utf-8", errors="replace") as f:
        stderr = f.read()
    return {"wall": m["wall"], "rss_kib": m["rss_kib"], "cpu": m["cpu"], "faults": m["faults"],
            "code": m["code"], "bytes": len(data),
            "lines": data.count(b"\n"), "bad": bad, "events": sum(counts.values()),
            "counts": counts, "stderr": stderr}


def bench(spawner, name, binary, args, d, runs, warmup, expected_events, errors, fresh):
    """Warm-up plus counted runs of one bench; every run is checked. Returns the summary."""
    walls, rss, cpu, faults, last, stored = [], [], [], [], None, 0
    remove_store(d)
    for i in range(warmup + runs):
        r = run_once(spawner, binary, args, d, fresh)
        stored = r["events"] if fresh else stored + r["events"]
        check(f"{name} run {i + 1}", r, expected_events, errors)
        if i >= warmup:
            walls.append(r["wall"])
            rss.append(r["rss_kib"] / 1024)
            cpu.append(r["cpu"])
            faults.append(r["faults"])
        last = r
    return {"name": name, "median_s": statistics.median(walls), "min_s": min(walls),
            "max_s": max(walls), "walls_s": walls, "rss_mib_median": statistics.median(rss),
            "rss_mib_max": max(rss), "cpu_s_median": statistics.median(cpu),
            "faults_median": statistics.median(faults), "events": last["events"], "bytes": last["bytes"],
            "lines": last["lines"], "nodes": last["counts"].get("node_finished", 0),
            "messages": last["counts"].get("message", 0),
            "command": shlex.join([binary] + args), "cwd": d,
            "store_bytes": store_bytes(d), "stored_events": stored,
            "store_bytes_per_event": store_bytes(d) / stored if stored else None}


def paired_diffs(spawner, binary, a, b, pairs, fresh):
    """Wall time of run `a` minus that of run `b` (each a (work dir, args)), run in turn
    `pairs` times: a difference taken pair by pair does not drift with the machine, as
    the difference of two medians taken minutes apart does."""
    diffs = []
    for _ in range(pairs):
        ra = run_once(spawner, binary, a[1], a[0], fresh)
        rb = run_once(spawner, binary, b[1], b[0], fresh)
        diffs.append(ra["wall"] - rb["wall"])
    return diffs


def check(name, r, expected_events, errors):
    """Record a run that failed or gave the wrong number of events."""
    why = None
    if r["code"] != 0:
        why = f"exit {r['code']}"
    elif r["bad"]:
        why = f"{r['bad']} non-JSON lines on stdout"
    elif expected_events is not None and r["events"] != expected_events:
        why = f"{r['events']} events, expected {expected_events}"
    if why:
        errors.append(f"{name}: {why}; stderr: {r['stderr'].strip()[:300]}")
        print(f"ERROR {errors[-1]}", file=sys.stderr)


def compare(spawner, name, binaries, runs, warmup, expected_events, errors, fresh):
    """Each of the two `binaries` ((label, path, work dir, args)) in turn, the order
    alternating, `runs` times after `warmup` runs each. Returns the summary."""
    for label, binary, d, args in binaries:
        remove_store(d)
        for _ in range(warmup):
            check(f"{name} ({label}, warm-up)", run_once(spawner, binary, args, d, fresh),
                  expected_events, errors)
    got = {label: [] for label, _, _, _ in binaries}
    for i in range(runs):
        for label, binary, d, args in (binaries if i % 2 == 0 else binaries[::-1]):
            r = run_once(spawner, binary, args, d, fresh)
            check(f"{name} ({label}) run {i + 1}", r, expected_events, errors)
            got[label].append(r)
    (a, _, _, _), (b, _, _, _) = binaries
    med = statistics.median
    return {"name": name, "runs": runs,
            **{f"{label}_{k}": med(r[k] for r in got[label])
               for label in (a, b) for k in ("wall", "cpu", "faults")},
            "wall_ratio": med(x["wall"] / y["wall"] for x, y in zip(got[a], got[b])),
            "cpu_ratio": med(x["cpu"] / max(y["cpu"], 1e-9) for x, y in zip(got[a], got[b]))}


def report_comparison(rows, binary, other):
    """The table of --against."""
    print(f"this:    {binary}\n         {symbol_order(binary)}")
    # The other build's symbol names carry its own crates' hashes: its checkout's list
    # is the one to check it against (`scripts/symbol_order.py --check` there).
    print(f"other:   {other}")
    print(f"runs:    {rows[0]['runs'] if rows else 0} pairs per case, in turn, the order alternating\n")
    head = ["case", "this ms (median)", "other ms (median)", "this/other wall", "this/other CPU",
            "page faults this / other"]
    table = [[r["name"], f"{r['this_wall'] * 1e3:.2f}", f"{r['other_wall'] * 1e3:.2f}",
              f"×{r['wall_ratio']:.3f}", f"×{r['cpu_ratio']:.3f}",
              f"{r['this_faults']:.0f} / {r['other_faults']:.0f}"] for r in rows]
    widths = [max(len(x[i]) for x in table + [head]) for i in range(len(head))]
    for row in [head, ["-" * w for w in widths]] + table:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    print("\nratios are medians of the pairs' ratios: below 1, this binary is the faster")


def expected_count(case_dir):
    """Events in expected.jsonl, not counting the __turn__ / __exception__ markers."""
    n = 0
    with open(os.path.join(case_dir, "expected.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and json.loads(line).get("event") not in ("__turn__", "__exception__"):
                n += 1
    return n


def ratio(theirs, ours):
    """RAGFlow's time over ours as 'N×', or n/a."""
    if theirs is None or not ours:
        return "n/a"
    r = theirs / ours
    return f"{r:.1f}×" if r < 10 else f"{r:.0f}×"


def code_symbols(binary):
    """{name: (address, size)} of the code symbols the binary defines (from `nm`; size 0
    when the symbol has none)."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 3:  # no size (hand-written assembly)
            parts = [parts[0], "0", parts[1], parts[2]]
        if len(parts) == 4 and parts[2] in "tTwWi" and parts[3] not in syms:
            syms[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return syms


def symbol_order(binary):
    """Whether the binary's hot code is laid out together (build.rs), as text: a list
    gone stale (a toolchain or dependency update), or a build not linked with lld,
    costs ~10 MiB of RSS."""
    path = os.path.join(REPO, "link", "symbol-order.txt")
    try:
        with open(path, encoding="utf-8") as f:
            names = {s for s in (line.strip() for line in f) if s and not s.startswith("#")}
        syms = code_symbols(binary)
    except (OSError, subprocess.CalledProcessError) as e:
        return f"n/a ({e})"
    found = [syms[n] for n in names if n in syms]
    size = sum(n for _, n in found)
    together = bool(found) and max(a + n for a, n in found) - min(a for a, _ in found) <= 2 * size
    text = (f"{len(found)} of {len(names)} functions of link/symbol-order.txt in the binary, "
            f"{'laid out together' if together else 'NOT laid out together'}")
    if not names or len(found) * 10 < len(names) * 9 or not together:
        text += " — regenerate it with scripts/symbol_order.py, or link with lld (build.rs)"
    return text


def report(results, baselines, table, peak_mb, binary, version, floor, fresh):
    """Human-readable table and notes."""
    base = baselines.get("base_message")
    print(f"binary:  {binary}")
    print(f"version: {version}")
    print(f"order:   {symbol_order(binary)}")
    print(f"machine: {os.cpu_count()} CPUs, {platform.platform()}, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}")
    where = "a fresh store on disk each run" if fresh else "one store on disk per case, made by the warm-up"
    print(f"runs:    {len(results[0]['walls_s']) if results else 0} counted per case, {where} "
          f"(work dirs in {os.path.relpath(WORK, REPO)}/)")
    print(f"RSS:     ru_maxrss from wait4; the spawner's floor is {floor:.1f} MiB ('≤floor' marks a "
          f"reading that may be the floor's)\n")
    head = ["case", "nodes", "events", "canvas median s (min–max)", "RAGFlow engine s", "ratio",
            "RAGFlow process s", "ratio", "µs/node net (plain)", "peak RSS MiB med (max)"]
    rows = []
    for r in results + list(baselines.values()):
        eng = ragflow_value(table, r["name"], "engine s (median)")
        proc = ragflow_value(table, r["name"], "process s")
        per = "n/a"
        if r["nodes"]:
            plain = r["median_s"] / r["nodes"] * 1e6
            net = (r["median_s"] - base["median_s"]) / r["nodes"] * 1e6 if base and r is not base else None
            per = (f"{net:.1f}" if net is not None else "—") + f" ({plain:.1f})"
        rows.append([r["name"], str(r["nodes"]), str(r["events"]),
                     f"{r['median_s']:.4f} ({r['min_s']:.4f}–{r['max_s']:.4f})",
                     f"{eng}" if eng is not None else "n/a", ratio(eng, r["median_s"]),
                     f"{proc}" if proc is not None else "n/a", ratio(proc, r["median_s"]), per,
                     f"{r['rss_mib_median']:.1f} ({r['rss_mib_max']:.1f})"
                     + (" ≤floor" if r["rss_mib_median"] <= floor + 0.5 else "")])
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    for row in [head, ["-" * w for w in widths]] + rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    print()
    for r in results:
        if r["name"].startswith("perf_e") and "perf_e_1chunk" in baselines:
            one = baselines["perf_e_1chunk"]
            extra = r["messages"] - one["messages"]
            if extra > 0:
                us = (r["median_s"] - one["median_s"]) / extra * 1e6
                print(f"{r['name']}: {us:.2f} µs overhead per chunk ({extra} extra message events vs "
                      f"perf_e_1chunk; RAGFlow: {table.get(r['name'], {}).get('per node / chunk', 'n/a')})")
                diffs = sorted(one.get("paired_diffs_s") or [])
                if diffs:
                    per = [x / extra * 1e6 for x in diffs]
                    q1, q3 = per[len(per) // 4], per[(3 * len(per)) // 4]
                    print(f"{r['name']}: {statistics.median(per):.2f} µs per chunk, median of {len(per)} "
                          f"paired differences (interquartile {q1:.2f}–{q3:.2f})")
        if r["name"].startswith("perf_b"):
            mb = r["rss_mib_max"] * 1024 * 1024 / 1e6
            vs = f"{peak_mb / mb:.1f}× less" if peak_mb else "n/a"
            print(f"{r['name']}: peak RSS median {r['rss_mib_median']:.1f} MiB, max {r['rss_mib_max']:.1f} MiB "
                  f"({mb:.1f} MB) vs RAGFlow {peak_mb if peak_mb else 'n/a'} MB: {vs}")
    # CPU time and page faults move less than wall time when other work shares the
    # machine: a change that cuts work shows there first.
    print("\nCPU (user + system, both cores) and minor page faults a run, medians:")
    for r in results + list(baselines.values()):
        print(f"  {r['name']}: {r['cpu_s_median'] * 1000:.1f} ms CPU, {r['faults_median']:.0f} page faults")
    print()
    for r in results:
        if r.get("store_bytes_per_event"):
            print(f"{r['name']}: store {r['store_bytes'] / 1e6:.2f} MB for {r['stored_events']} events: "
                  f"{r['store_bytes_per_event']:.0f} bytes per event")
    print("\ncommands (run in each work dir; delete store.db first for a fresh store):")
    for r in results + list(baselines.values()):
        print(f"  {r['name']}: cd {shlex.quote(r['cwd'])} && {r['command']}")


def main():
    a = parse_args()
    cases_dir = os.path.abspath(a.cases)
    if not os.path.isdir(cases_dir):
        print(f"bench.py: bench directory not found: {cases_dir} (clone ../shared next to the repo, "
              f"or pass --cases DIR)", file=sys.stderr)
        sys.exit(2)
    binary = os.path.abspath(a.bin) if a.bin else build()
    if not os.access(binary, os.X_OK):
        print(f"bench.py: not an executable: {binary}", file=sys.stderr)
        sys.exit(2)
    other = os.path.abspath(a.against) if a.against else None
    if other and not os.access(other, os.X_OK):
        print(f"bench.py: not an executable: {other}", file=sys.stderr)
        sys.exit(2)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    names = sorted(n for n in os.listdir(cases_dir) if os.path.isfile(os.path.join(cases_dir, n, "case.json")))
    if a.only:
        names = [n for n in names if re.search(a.only, n)]
    table, peak_mb = ragflow_figures(cases_dir)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    spawner = Spawner()
    floor = rss_floor(spawner)
    errors, results, baselines = [], [], {}

    if other:
        rows = []
        for n in ["base_message"] + names:
            if n == "base_message":
                canvas, case, expected = os.path.join(WORK, n, "canvas.json"), \
                    {"turns": [{"query": "", "inputs": {}}]}, None
            else:
                case_dir = os.path.join(cases_dir, n)
                case = json.load(open(os.path.join(case_dir, "case.json"), encoding="utf-8"))
                canvas, expected = os.path.join(case_dir, "canvas.json"), expected_count(case_dir)
            # A store each: the two builds may not share a store's schema.
            pair = []
            for label, path in (("this", binary), ("other", other)):
                d, args = prepare(f"{n}-{label}", canvas, case)
                if n == "base_message":
                    canvas = os.path.join(d, "canvas.json")
                    with open(canvas, "w", encoding="utf-8") as f:
                        json.dump(BASE_CANVAS, f)
                    args[1] = canvas
                pair.append((label, path, d, args))
            print(f"compare {n}", file=sys.stderr, flush=True)
            rows.append(compare(spawner, n, pair, a.runs, a.warmup, expected, errors, a.fresh_store))
        spawner.close()
        if a.json:
            json.dump({"binary": binary, "against": other, "cases": rows, "errors": errors},
                      sys.stdout, indent=1)
            print()
        else:
            report_comparison(rows, binary, other)
        if errors:
            print(f"\n{len(errors)} failed run(s):", file=sys.stderr)
            for e in errors:
                print(f"  {e}", file=sys.stderr)
            sys.exit(1)
        return

    d, args = prepare("base_message", os.path.join(WORK, "base_message", "canvas.json"),
                      {"turns": [{"query": "", "inputs": {}}]})
    with open(os.path.join(d, "canvas.json"), "w", encoding="utf-8") as f:
        json.dump(BASE_CANVAS, f)
    print("bench base_message", file=sys.stderr, flush=True)
    baselines["base_message"] = bench(spawner, "base_message", binary, args, d, a.runs, a.warmup, None, errors, a.fresh_store)

    for n in names:
        case_dir = os.path.join(cases_dir, n)
        case = json.load(open(os.path.join(case_dir, "case.json"), encoding="utf-8"))
        canvas = os.path.join(case_dir, "canvas.json")
        d, args = prepare(n, canvas, case)
        print(f"bench {n}", file=sys.stderr, flush=True)
        results.append(bench(spawner, n, binary, args, d, a.runs, a.warmup, expected_count(case_dir), errors, a.fresh_store))
        if n.startswith("perf_e") and (case.get("llm") or {}).get("default"):
            llm = dict(case["llm"], default=case["llm"]["default"].split()[0])
            d, args = prepare("perf_e_1chunk", canvas, case, llm)
            print("bench perf_e_1chunk", file=sys.stderr, flush=True)
            baselines["perf_e_1chunk"] = bench(spawner, "perf_e_1chunk", binary, args, d, a.runs, a.warmup, None, errors, a.fresh_store)
            print("bench perf_e paired", file=sys.stderr, flush=True)
            stream = results[-1]
            one = (d, args)
            stream_run = (stream["cwd"], shlex.split(stream["command"])[1:])
            baselines["perf_e_1chunk"]["paired_diffs_s"] = paired_diffs(
                spawner, binary, stream_run, one, max(a.runs, 9), a.fresh_store)

    spawner.close()
    if a.json:
        json.dump({"binary": binary, "version": version, "cpus": os.cpu_count(), "rss_floor_mib": floor,
                   "platform": platform.platform(), "cases": results, "baselines": baselines,
                   "ragflow": table, "ragflow_peak_mb_perf_b": peak_mb, "errors": errors,
                   "symbol_order": symbol_order(binary)},
                  sys.stdout, indent=1, ensure_ascii=False)
        print()
    else:
        report(results, baselines, table, peak_mb, binary, version, floor, a.fresh_store)
    if errors:
        print(f"\n{len(errors)} failed run(s):", file=sys.stderr)
        for e in errors:
            print(f"  {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
