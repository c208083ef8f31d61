#!/usr/bin/env bash
# Quiet side-by-side run of every issue 17 figure. Build first:
#  make build && cp appserver /tmp/final-appserver && go build -o /tmp/final-bench ./cmd/appserver-bench
REF=/root/.cache/appserver-reference/bin/codex; OURS=/tmp/final-appserver; B=/tmp/final-bench
run() { echo "### $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg) :: appserver-bench $*"; "$B" "$@" --server "$REF app-server" --server "$OURS"; echo "### end $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
run handshake --n 30
run turn --turns 100 --idle 3s
run turn --turns 20 --tools 10
run scale --threads 100 --items 10000 --concurrent 20
run exec --n 50 --runs 3
echo "### ours alone, 1000 idle threads"
"$B" scale --threads 1000 --items 10000 --concurrent 20 --server "$OURS"
