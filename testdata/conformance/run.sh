#!/bin/sh
# Run scenarios against the reference and ours, then diff the normalised transcripts.
#   testdata/conformance/run.sh [-m] [scenario-name ...]     (default: every scenario here)
# Needs `make build` (./appserver) and the reference (/work/shared/reference/install-reference.sh).
# Env: HARNESS (default /work/shared/conformance), OUT (default ~/.cache/conformance-sweep),
#      REF (reference command), OURS (our command).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
HARNESS=${HARNESS:-/work/shared/conformance}
OUT=${OUT:-$HOME/.cache/conformance-sweep}
REF=${REF:-/root/.cache/appserver-reference/bin/codex app-server}
OURS=${OURS:-$root/appserver}
model=""
if [ "${1:-}" = "-m" ]; then model="--model"; shift; fi
mkdir -p "$OUT"
names="$*"
[ -n "$names" ] || names=$(cd "$here/scenarios" && ls *.json | sed 's/\.json$//')
status=0
for n in $names; do
  sc="$here/scenarios/$n.json"
  python3 "$HARNESS/driver.py" --server "$REF" "$sc" --out "$OUT/$n.ref.jsonl" >"$OUT/$n.ref.log" 2>&1; rr=$?
  python3 "$HARNESS/driver.py" --server "$OURS" "$sc" --out "$OUT/$n.ours.jsonl" >"$OUT/$n.ours.log" 2>&1; ro=$?
  python3 "$here/compare.py" --fields --ignore-prose $model "$OUT/$n.ref.jsonl" "$OUT/$n.ours.jsonl" >"$OUT/$n.diff"; rd=$?
  res=identical; [ $rd -eq 0 ] || res="differs ($OUT/$n.diff)"
  echo "$n: ref=$rr ours=$ro $res"
  [ $rr -eq 0 ] && [ $ro -eq 0 ] && [ $rd -eq 0 ] || status=1
done
exit $status
