#!/usr/bin/env bash
# Wall time of `fabrik cluster matrix` for N ranks, one per namespace host (testbed/netns.sh
# layout, one link each, unshaped veth), with the machine's load average before and after.
#
# Usage: matrix-scaling.sh [FABRIK] [N...]     (default: target/debug/fabrik, 8 16 32 64)
# Env: SIZE (default 256K), ITERS (default 1). Needs root. Prints one table row per N.
set -euo pipefail
cd "$(dirname "$0")/.."
FABRIK=$(realpath "${1:-target/debug/fabrik}")
shift || true
SIZES=${*:-8 16 32 64}
SIZE=${SIZE:-256K}
ITERS=${ITERS:-1}
NAME=fabms$$
WORK=$(mktemp -d)
trap 'testbed/netns.sh down "$NAME" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
echo "| ranks | rounds | wall time (s) | load before | load after | exit |"
echo "| --- | --- | --- | --- | --- | --- |"
for n in $SIZES; do
  testbed/netns.sh up "$NAME" "$n" 1 >/dev/null
  before=$(load)
  start=$(date +%s.%N)
  pids=()
  for ((h = 0; h < n; h++)); do
    ip netns exec "$NAME-h$h" env RANK=$h WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=10.77.0.1 \
      MASTER_PORT=29700 FABRIK_TOKEN=scaling "$FABRIK" cluster matrix --size "$SIZE" \
      --iters "$ITERS" --no-second-pass --format json --timeout 120 --name "node$h" \
      >"$WORK/r$h.out" 2>"$WORK/r$h.err" &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do
    wait "$p" && st=0 || st=$?
    [ "$st" -gt "$rc" ] && rc=$st
  done
  end=$(date +%s.%N)
  rounds=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rounds"])' "$WORK/r0.out" 2>/dev/null || echo "?")
  printf '| %s | %s | %.1f | %s | %s | %s |\n' "$n" "$rounds" "$(echo "$end - $start" | bc)" "$before" "$(load)" "$rc"
  if [ "$rc" -gt 1 ]; then echo "rank 0 of $n: $(tail -c 600 "$WORK/r0.err")" >&2; fi
  testbed/netns.sh down "$NAME" >/dev/null
done
