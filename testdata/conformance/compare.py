#!/usr/bin/env python3
"""Diff two conformance transcripts (reference vs candidate) after normalising run-specific values.

    python3 compare.py REF.jsonl OURS.jsonl [--model] [--keep-noisy] [--context N]

Every client<->server message becomes one canonical JSON line: UUIDs are renamed <id1>, <id2>... in
order of first appearance (so a wrong id still shows), timestamps/durations/pids become <n>, wall
times and chunk ids are blanked. Noisy notifications whose count varies between runs of the reference
(account/rateLimits/updated, remoteControl/status/changed) are dropped unless --keep-noisy.
--model also compares the recorded model requests (input items other than the developer prompt);
--sends shows the client's messages too; --fields prints changed messages as field-level differences.
Exit status 1 when the normalised transcripts differ.
"""
import argparse
import difflib
import json
import re
import sys

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
NUMKEYS = {"emittedAtMs", "createdAt", "updatedAt", "recencyAt", "startedAt", "completedAt", "durationMs",
           "startedAtMs", "completedAtMs", "processId", "modifiedAt", "createdAtMs", "modifiedAtMs", "sectionEnteredAt",
           "lastActivityAt", "archivedAt", "mtime", "t", "pid"}
NOISY = {"account/rateLimits/updated", "remoteControl/status/changed"}
SUBS = [
    (re.compile(r"/[^\s\"']*/codex-conformance/run-[a-z0-9_]+"), "<RUN>"),
    (re.compile(r"0\.169\.0\+appserver\.[0-9.]+"), "0.169.0"),
    (re.compile(r"sha256:[0-9a-f]{64}"), "sha256:<hash>"),  # config versions hash the file, which holds the mock's port
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"Wall time: [0-9.]+ seconds"), "Wall time: <s> seconds"),
    (re.compile(r"Chunk ID: [0-9a-f]+"), "Chunk ID: <c>"),
    (re.compile(r"session ID \d+"), "session ID <n>"),
    (re.compile(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d"), "rollout-<date>"),
    (re.compile(r"/sessions/\d{4}/\d\d/\d\d/"), "/sessions/<date>/"),
    (re.compile(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d(\.\d+)?Z?)?"), "<date>"),
    (re.compile(r"(fco|msg|rs|fc)_[0-9a-f-]{20,}"), r"\1_<id>"),
]


PROSE = {"description", "availabilityNux", "upgradeInfo"}  # catalogue prose ours words in its own way


class Norm:
    prose = False

    def __init__(self):
        self.ids = {}

    def s(self, v):
        def rep(m):
            u = m.group(0)
            if u not in self.ids:
                self.ids[u] = "<id%d>" % (len(self.ids) + 1)
            return self.ids[u]
        for rx, r in SUBS:
            v = rx.sub(r, v)
        return UUID.sub(rep, v)

    def v(self, x, key=None):
        if self.prose and key in PROSE and x is not None:
            return "<prose>"
        if isinstance(x, dict):
            return {self.s(k): self.v(val, k) for k, val in x.items()}
        if isinstance(x, list):
            return [self.v(e) for e in x]
        if isinstance(x, bool) or x is None:
            return x
        if isinstance(x, (int, float)) and key in NUMKEYS:
            return "<n>"
        if isinstance(x, str):
            if key in NUMKEYS and x.isdigit():
                return "<n>"
            return self.s(x)
        return x


def lines(path, model, keep_noisy, sends):
    n = Norm()
    out = []
    for raw in open(path):
        e = json.loads(raw)
        d = e.get("dir")
        if d in ("send", "recv"):
            m = e["msg"]
            if not keep_noisy and m.get("method") in NOISY:
                continue
            if m.get("method") == "configWarning" and "bubblewrap" in json.dumps(m):
                continue  # the host lacks bwrap: the reference warns, ours has no use for it
            if d == "send":
                n.v(m)  # number the ids in order of appearance all the same
                if not sends:
                    continue
            out.append(("-> " if d == "send" else "<- ") + json.dumps(n.v(m), sort_keys=True))
        elif d in ("send_raw", "recv_raw"):
            out.append(d + " " + n.s(e["line"]))
        elif d == "model":
            r = e["request"]
            if model:
                out.append("== model " + json.dumps(n.v({"tools": r.get("tools"), "n_input": r.get("n_input"),
                                                       "input": r.get("input_non_developer")}), sort_keys=True))
            # without --model, model requests are left out: when one arrives relative to the
            # notifications is a race in both servers
        elif d == "meta" and e.get("event") == "result":
            res = {k: v for k, v in e.items() if k not in ("t", "dir")}
            res["mock_notes"] = [note[1:] for note in res.get("mock_notes") or []]  # without their times
            out.append("## result " + json.dumps(n.v(res), sort_keys=True))
    return out


def jdiff(a, b, path=""):
    """Yield (path, ref, ours) for every leaf that differs ("<absent>" for a missing key)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            yield from jdiff(a.get(k, "<absent>"), b.get(k, "<absent>"), path + "." + k if path else k)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from jdiff(x, y, "%s.%d" % (path, i))
    elif a != b:
        yield path, a, b


def parse(line):
    try:
        return json.loads(line[3:]) if line[:3] in ("<- ", "-> ") else None
    except ValueError:
        return None


def print_fields(diff):
    minus, plus = [], []

    def flush():
        for i in range(max(len(minus), len(plus))):
            m = minus[i] if i < len(minus) else None
            p = plus[i] if i < len(plus) else None
            jm, jp = (parse(m[1:]) if m else None), (parse(p[1:]) if p else None)
            if jm is not None and jp is not None and (jm.get("method") == jp.get("method")) and jm.get("id") == jp.get("id"):
                print("~ %s %s" % (m[1:3], (jm.get("method") or "id=%s" % jm.get("id"))))
                for path, x, y in jdiff(jm, jp):
                    print("    %s: ref=%s ours=%s" % (path, json.dumps(x)[:300], json.dumps(y)[:300]))
            else:
                if m:
                    print(m[:400])
                if p:
                    print(p[:400])
        minus.clear()
        plus.clear()
    for l in diff:
        if l.startswith("---") or l.startswith("+++"):
            continue
        if l.startswith("-"):
            minus.append(l)
        elif l.startswith("+"):
            plus.append(l)
        else:
            flush()
            if l.startswith("@@"):
                print(l)
    flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("ours")
    ap.add_argument("--model", action="store_true")
    ap.add_argument("--keep-noisy", action="store_true")
    ap.add_argument("--ignore-prose", action="store_true", help="blank catalogue prose (model descriptions...)")
    ap.add_argument("--sends", action="store_true", help="also show what the driver sent (identical by construction)")
    ap.add_argument("--context", type=int, default=1)
    ap.add_argument("--fields", action="store_true", help="show changed message pairs as field-level differences")
    a = ap.parse_args()
    Norm.prose = a.ignore_prose
    r = lines(a.ref, a.model, a.keep_noisy, a.sends)
    o = lines(a.ours, a.model, a.keep_noisy, a.sends)
    diff = list(difflib.unified_diff(r, o, "ref", "ours", n=a.context, lineterm=""))
    if a.fields:
        print_fields(diff)
    else:
        for l in diff:
            print(l)
    sys.exit(1 if diff else 0)


if __name__ == "__main__":
    main()
