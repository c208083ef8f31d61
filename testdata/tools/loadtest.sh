#!/usr/bin/env bash
# Fresh-clone `make test` with a busy loop pinning one core. RUNS="1 2" picks run numbers.
# Tests are not taken from the cache (GOFLAGS=-count=1). Logs /tmp/lt$i.log, summary /tmp/loadtest$i.out. Run from anywhere: it clones REPO (default: this checkout).
for i in ${RUNS:-1}; do
  d=/tmp/ltclone$i; rm -rf $d; git clone -q "${REPO:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)}" $d
  commit=$(git -C $d rev-parse --short HEAD)
  ( while :; do :; done ) & hog=$!
  start=$(date +%s)
  ( cd $d && PATH=/usr/local/go/bin:$PATH GOFLAGS=-count=1 make test ) > /tmp/lt$i.log 2>&1; rc=$?
  end=$(date +%s)
  kill $hog
  echo "run $i commit $commit rc=$rc $((end-start))s $(date -u +%H:%M) fails: $(grep -c -- '--- FAIL' /tmp/lt$i.log)" | tee /tmp/loadtest$i.out
done
