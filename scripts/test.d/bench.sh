#!/usr/bin/env bash
# Smoke test of testbed/netns.sh with real fabrik traffic: two hosts, two shaped links, a
# striped, verified run between them, then teardown. Skips when not root or without namespaces
# (fails then where FABRIK_REQUIRE_TESTBEDS=1, see scripts/lib/skip.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/skip.sh
if [ "$(id -u)" != 0 ]; then skip bench.sh "needs root for network namespaces"; fi
if ! ip netns add fabsmoke-probe$$ 2>/dev/null; then skip bench.sh "cannot create network namespaces here"; fi
ip netns del fabsmoke-probe$$
command -v jq >/dev/null || { echo "bench.sh: jq is missing (scripts/apt/test/bench.txt)" >&2; exit 1; }
FABRIK=${FABRIK:-target/debug/fabrik}
[ -x "$FABRIK" ] || cargo build -p fabrik
FABRIK=$(realpath "$FABRIK")
NAME=fabsmoke$$
trap 'testbed/netns.sh down $NAME' EXIT

testbed/netns.sh up "$NAME" 2 2 --rate 50mbit
ip netns exec "$NAME-h1" "$FABRIK" bench p2p --server --token smoke --once >/dev/null &
for _ in $(seq 100); do ip netns exec "$NAME-h1" ss -ltn | grep -q ':18800 ' && break; sleep 0.05; done
out=$(ip netns exec "$NAME-h0" "$FABRIK" bench p2p --client 10.77.0.2 --token smoke \
  --ifaces eth0,eth1 -P 2 -D 1 --verify --format json)
wait
streams=$(echo "$out" | jq '[.per_stream[] | select(.bytes > 0)] | length')
src1=$(echo "$out" | jq -r '.per_stream[1].local_addr')
gbps=$(echo "$out" | jq '.results[0].bw_avg_gbps')
[ "$streams" = 2 ] || { echo "bench.sh: FAIL: $streams of 2 streams carried data: $out" >&2; exit 1; }
[ "$src1" = 10.77.1.1 ] || { echo "bench.sh: FAIL: stream 1 came from $src1, not 10.77.1.1" >&2; exit 1; }
# Two links of 50 Mb/s each: well above one link's rate, not above both (low rates keep a
# debug build with --verify on a busy machine from being the bottleneck).
awk -v g="$gbps" 'BEGIN{exit !(g > 0.06 && g <= 0.105)}' || { echo "bench.sh: FAIL: $gbps Gb/s over 2 x 50 Mb/s" >&2; exit 1; }
testbed/netns.sh down "$NAME"
if testbed/netns.sh list | grep -q "^$NAME-"; then echo "bench.sh: FAIL: namespaces left behind" >&2; exit 1; fi
echo "bench.sh: ok (striped $gbps Gb/s over 2 x 50 Mb/s, verified)"
