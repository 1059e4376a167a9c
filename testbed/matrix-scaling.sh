#!/usr/bin/env bash
# Wall time of `fabrik cluster matrix` for N ranks, one per namespace host (testbed/netns.sh
# layout, one link each, unshaped veth), with the machine's load average before and after.
#
# Usage: matrix-scaling.sh [FABRIK] [N...]     (default: target/debug/fabrik, 8 16 32 64)
# Env: SIZE (default 256K), ITERS (default 1). Needs root. Prints one table row per N.
#
# The kernel's ARP table is one table for all network namespaces, with hard limit
# net.ipv4.neigh.default.gc_thresh3 (1024 by default): N hosts that all talk to each other hold
# about N² entries, so past ~32 hosts new neighbours cannot be resolved ("neighbour: arp_cache:
# neighbor table overflow!" in dmesg) and connects time out. The script raises the three
# thresholds for the largest N and restores them on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
FABRIK=$(realpath "${1:-target/debug/fabrik}")
shift || true
SIZES=${*:-8 16 32 64}
SIZE=${SIZE:-256K}
ITERS=${ITERS:-1}
NAME=fabms$$
WORK=$(mktemp -d)
neigh=net.ipv4.neigh.default
old_thresh="$(sysctl -n $neigh.gc_thresh1) $(sysctl -n $neigh.gc_thresh2) $(sysctl -n $neigh.gc_thresh3)"
restore() {
  read -r t1 t2 t3 <<<"$old_thresh"
  sysctl -qw $neigh.gc_thresh1="$t1" $neigh.gc_thresh2="$t2" $neigh.gc_thresh3="$t3" || true
}
trap 'testbed/netns.sh down "$NAME" >/dev/null 2>&1 || true; rm -rf "$WORK"; restore' EXIT
largest=$(printf '%s\n' $SIZES | sort -n | tail -1)
need=$((2 * (largest + 1) * (largest + 1)))
if [ "$need" -gt "$(sysctl -n $neigh.gc_thresh3)" ]; then
  sysctl -qw $neigh.gc_thresh1=$((need / 4)) $neigh.gc_thresh2=$((need / 2)) $neigh.gc_thresh3=$need
fi
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
