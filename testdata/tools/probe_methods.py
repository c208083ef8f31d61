#!/usr/bin/env python3
"""Probe an app-server with every schema client method (minimal valid params) and print each answer.

    probe_methods.py --server "CMD ARGS" --home DIR [--only m1,m2] [--params '{"m":{...}}'] [--cwd DIR]

Params are generated from the schema's required fields (first enum value, first union member, empty arrays),
with a few overrides (cwds, paths). Output: one JSON line per method: {"method", "result"|"error"}.
A mock-model config.toml is written to --home when it has none. Notifications are printed with --notes.
"""
import argparse, json, os, shlex, subprocess, sys, threading, queue

SCHEMA = os.environ.get("SCHEMA_DIR", "/work/shared/reference/schema")

def load():
    d = json.load(open(os.path.join(SCHEMA, "ClientRequest.json")))
    return d["oneOf"], d["definitions"]

def gen(s, defs, depth=0):
    if depth > 8 or not isinstance(s, dict):
        return None
    if "$ref" in s:
        return gen(defs[s["$ref"].split("/")[-1]], defs, depth + 1)
    for k in ("oneOf", "anyOf"):
        if k in s:
            opts = [o for o in s[k] if o.get("type") != "null"]
            return gen(opts[0] if opts else s[k][0], defs, depth + 1)
    if "allOf" in s:
        return gen(s["allOf"][0], defs, depth + 1)
    if "enum" in s:
        return s["enum"][0]
    t = s.get("type")
    if isinstance(t, list):
        t = [x for x in t if x != "null"][0]
    if t == "object" or "properties" in s:
        out = {}
        for r in s.get("required", []):
            out[r] = gen(s["properties"][r], defs, depth + 1)
        return out
    if t == "string":
        return "x"
    if t in ("integer", "number"):
        return 0
    if t == "boolean":
        return False
    if t == "array":
        return []
    return None

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--home", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--skip", default="")
    ap.add_argument("--params", default="{}")
    ap.add_argument("--cwd", default=os.getcwd())
    ap.add_argument("--notes", action="store_true")
    ap.add_argument("--seq", default="", help="JSON list of [method, params] sent in order instead of the schema sweep")
    ap.add_argument("--timeout", type=float, default=10)
    a = ap.parse_args()
    os.makedirs(a.home, exist_ok=True)
    cfg = os.path.join(a.home, "config.toml")
    if not os.path.exists(cfg):
        open(cfg, "w").write('model = "mock-model"\nmodel_provider = "mock"\napproval_policy = "never"\n'
                             'sandbox_mode = "read-only"\n\n[model_providers.mock]\nname = "Mock"\n'
                             'base_url = "http://127.0.0.1:9/v1"\nwire_api = "responses"\n'
                             'request_max_retries = 0\nstream_max_retries = 0\n')
    reqs, defs = load()
    overrides = {"cwds": [a.cwd], "cwd": a.cwd, "path": a.cwd}
    extra = json.loads(a.params)
    env = dict(os.environ, CODEX_HOME=a.home)
    p = subprocess.Popen(shlex.split(a.server), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env, text=True, cwd=a.cwd)
    q = queue.Queue()
    def rd():
        for line in p.stdout:
            try:
                q.put(json.loads(line))
            except ValueError:
                pass
        q.put(None)
    threading.Thread(target=rd, daemon=True).start()
    nid = [0]
    def call(method, params):
        nid[0] += 1
        msg = {"jsonrpc": "2.0", "id": nid[0], "method": method}
        if params is not None:
            msg["params"] = params
        p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
        while True:
            try:
                m = q.get(timeout=a.timeout)
            except queue.Empty:
                return {"timeout": True}
            if m is None:
                return {"eof": True}
            if m.get("id") == nid[0] and "method" not in m:
                return m
            if "method" in m and "id" in m:  # server request: decline
                p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"decision": "decline"}}) + "\n"); p.stdin.flush()
            if a.notes and "method" in m:
                print(json.dumps({"note": m["method"], "params": m.get("params")}))
    call("initialize", {"clientInfo": {"name": "probe", "version": "0"}, "capabilities": {"experimentalApi": True}})
    if a.seq:
        for method, params in json.loads(open(a.seq).read() if os.path.exists(a.seq) else a.seq):
            ans = call(method, params)
            print(json.dumps({"method": method, **{k: ans[k] for k in ("result", "error", "timeout", "eof") if k in ans}}), flush=True)
        p.stdin.close(); p.wait(timeout=10)
        return
    only = set(x for x in a.only.split(",") if x)
    skip = set(x for x in a.skip.split(",") if x)
    for r in reqs:
        method = r["properties"]["method"]["enum"][0]
        if method == "initialize" or (only and method not in only) or method in skip:
            continue
        if method in extra:
            params = extra[method]
        elif "params" in r["properties"]:
            params = gen(r["properties"]["params"], defs)
            if isinstance(params, dict):
                for k, v in overrides.items():
                    if k in params:
                        params[k] = v
        else:
            params = None
        ans = call(method, params)
        out = {"method": method, "params": params}
        for k in ("result", "error", "timeout", "eof"):
            if k in ans:
                out[k] = ans[k]
        print(json.dumps(out), flush=True)
        if "eof" in ans:
            break
    p.stdin.close()
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()

if __name__ == "__main__":
    main()
