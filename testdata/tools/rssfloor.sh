#!/usr/bin/env bash
# RSS of programs that only link (and so initialise) some of the server's dependencies, then sleep:
# the floor any server built on them starts from, before it reads a byte. Prints one line per program:
#   name binary-bytes VmRSS RssAnon RssFile (kB)
# Run from anywhere; it builds in a temporary directory inside the repository and removes it.
set -euo pipefail
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$repo"
tmp=$(mktemp -d -p "$repo" rssfloor.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
rel=${tmp#"$repo"/}

measure() {
  local name=$1
  shift
  mkdir -p "$tmp/$name"
  {
    printf 'package main\n\nimport (\n\t"fmt"\n\t"os"\n\t"time"\n'
    for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n\nfunc main() {\n\ttime.Sleep(300 * time.Millisecond)\n\tb, _ := os.ReadFile("/proc/self/status")\n\tfmt.Print(string(b))\n}\n'
  } > "$tmp/$name/main.go"
  go build -o "$tmp/$name/bin" "./$rel/$name"
  printf '%-22s %9d' "$name" "$(stat -c %s "$tmp/$name/bin")"
  "$tmp/$name/bin" | awk '/^(VmRSS|RssAnon|RssFile):/ {printf " %s %s kB", $1, $2} END {print ""}'
}

measure bare
measure net-http net/http
measure modernc-sqlite modernc.org/sqlite
measure mcp-go-sdk github.com/modelcontextprotocol/go-sdk/mcp
measure all-three net/http modernc.org/sqlite github.com/modelcontextprotocol/go-sdk/mcp
# Every package of the server except its main: all initialisers run, nothing is served.
# shellcheck disable=SC2046
measure every-package $(go list -deps ./cmd/appserver | grep '^appserver/' | grep -v '^appserver/cmd/')
