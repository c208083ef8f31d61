#!/usr/bin/env python3
"""Side-by-side fuzzy file search latency: one-shot fuzzyFileSearch and session first results.
usage: bench_side.py SERVER_CMD HOME TREE [runs]"""
import json, os, subprocess, sys, time, shlex, statistics
cmd, home, tree = sys.argv[1], sys.argv[2], sys.argv[3]
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 7
os.makedirs(home, exist_ok=True)
open(os.path.join(home, "config.toml"), "w").write('model = "mock-model"\n')
p = subprocess.Popen(shlex.split(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                     env=dict(os.environ, CODEX_HOME=home), text=True, bufsize=1)
def send(o): p.stdin.write(json.dumps(o) + "\n"); p.stdin.flush()
def until(pred):
    while True:
        m = json.loads(p.stdout.readline())
        if pred(m): return m
send({"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "bench", "version": "1"}, "capabilities": {"experimentalApi": True}}})
until(lambda m: m.get("id") == 0)
one, first, final = [], [], []
for i in range(runs + 1):  # the first run warms the page cache and is dropped
    t = time.perf_counter(); rid = 100 + i
    send({"id": rid, "method": "fuzzyFileSearch", "params": {"query": "srvcfg", "roots": [tree]}})
    m = until(lambda m: m.get("id") == rid)
    assert m["result"]["files"], m
    if i: one.append((time.perf_counter() - t) * 1000)
    sid = "s%d" % i; t = time.perf_counter()
    send({"id": 1000 + i, "method": "fuzzyFileSearch/sessionStart", "params": {"sessionId": sid, "roots": [tree]}})
    send({"id": 2000 + i, "method": "fuzzyFileSearch/sessionUpdate", "params": {"sessionId": sid, "query": "srvcfg"}})
    got_first = None
    while True:
        m = json.loads(p.stdout.readline())
        prm = m.get("params") or {}
        if m.get("method") == "fuzzyFileSearch/sessionUpdated" and prm.get("sessionId") == sid and prm.get("files") and got_first is None:
            got_first = (time.perf_counter() - t) * 1000
        if m.get("method") == "fuzzyFileSearch/sessionCompleted" and prm.get("sessionId") == sid and got_first is not None:
            break
    if i: first.append(got_first); final.append((time.perf_counter() - t) * 1000)
    send({"id": 3000 + i, "method": "fuzzyFileSearch/sessionStop", "params": {"sessionId": sid}})
p.stdin.close(); p.wait(10)
med = lambda xs: "%.0f ms (min %.0f)" % (statistics.median(xs), min(xs))
print(json.dumps({"oneShot": med(one), "sessionFirstResults": med(first), "sessionFinal": med(final)}))
