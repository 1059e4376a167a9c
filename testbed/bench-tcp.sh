#!/usr/bin/env bash
# Side by side, on the namespace testbed (a benchmark, not a test):
#   1. one veth link: iperf3 and fabrik, same stream count, same write size -> fabrik/iperf3 (target >= 1.0)
#   2. four veth links, each shaped by tbf to RATE: fabrik striping over them -> / (4 x RATE) (target >= 0.95),
#      with four iperf3 pinned one per link beside it as the anchor of what the links can carry
#   3. latency, 64-byte ping-pong on one link: fabrik vs qperf tcp_lat and sockperf ping-pong (target <= 1.1x)
# Rounds alternate the tools so machine noise hits both alike; the medians are compared.
# Needs root, iproute2, iperf3, qperf, sockperf, jq (scripts/apt/test/bench.txt).
#
# Settings (environment): ROUNDS=5 DURATION=5 STREAMS=1 SIZE=128K RATE=500mbit MTU=9000
#   LAT_ITERS=300000 (about as long as qperf's and sockperf's DURATION) SECTIONS="1 2 3"
#   FABRIK=target/release/fabrik
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
STREAMS=${STREAMS:-1}
SIZE=${SIZE:-128K}
RATE=${RATE:-500mbit}
MTU=${MTU:-9000}
LAT_ITERS=${LAT_ITERS:-300000}
SECTIONS=${SECTIONS:-1 2 3}
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
FABRIK=${FABRIK:-target/release/fabrik}
T=testbed/netns.sh
NAME=fabbench$$
TOKEN=bench-$$

[ "$(id -u)" = 0 ] || { echo "bench-tcp.sh: needs root" >&2; exit 2; }
for tool in iperf3 qperf sockperf jq ip tc; do
  command -v "$tool" >/dev/null || { echo "bench-tcp.sh: $tool is missing (scripts/apt/test/bench.txt)" >&2; exit 2; }
done
if [ ! -x "$FABRIK" ]; then cargo build --release -p fabrik; fi
FABRIK=$(realpath "$FABRIK")

cleanup() { $T down "$NAME-a" || true; $T down "$NAME-b" || true; }
trap cleanup EXIT

# Servers run outside this shell's job table; `netns.sh down` kills them with their namespace.
serve() { local ns=$1; shift; (ip netns exec "$ns" "$@" >/dev/null 2>&1 &); }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{ if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'; }
# The median of per-round ratios: each round runs the tools back to back, so slow drift in the
# machine's load cancels out.
paired() { # "A1 A2 ..." "B1 B2 ..." -> median of Ai/Bi
  local -a a=($1) b=($2) r=(); local i
  for i in "${!a[@]}"; do r+=("$(ratio "${a[$i]}" "${b[$i]}")"); done
  median "${r[@]}"
}
ratio() { awk "BEGIN{printf \"%.3f\", $1/$2}"; }
wait_port() { # HOSTNS PORT
  for _ in $(seq 100); do
    ip netns exec "$1" ss -ltn | grep -q ":$2 " && return 0
    sleep 0.05
  done
  echo "bench-tcp.sh: nothing listens on port $2 in $1" >&2; return 1
}
rate_gbps() { awk -v r="$1" 'BEGIN{n=r+0; u=tolower(r); sub(/^[0-9.]+/,"",u);
  m=(u=="gbit")?1:(u=="mbit")?1e-3:(u=="kbit")?1e-6:0; print n*m}'; }

echo "# fabrik TCP side by side, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# fabrik $("$FABRIK" --version | awk '{print $2}') ($FABRIK), $(iperf3 --version | head -1 | awk '{print $1, $2}'), qperf $(dpkg-query -W -f '${Version}' qperf 2>/dev/null), sockperf $(dpkg-query -W -f '${Version}' sockperf 2>/dev/null)"
echo

# ---- 1. one link, iperf3 vs fabrik -------------------------------------------------------------
$T up "$NAME-a" 2 1 >/dev/null
A0="$NAME-a-h0"; A1="$NAME-a-h1"; SRV=$($T addr 1 0)
serve "$A1" iperf3 -s
serve "$A1" "$FABRIK" bench p2p --server --token "$TOKEN"
serve "$A1" qperf
serve "$A1" sockperf server --tcp -i "$SRV" -p 11111
wait_port "$A1" 5201; wait_port "$A1" 18800; wait_port "$A1" 19765; wait_port "$A1" 11111

if want 1; then
IPERF_CMD="iperf3 -c $SRV -t $DURATION -P $STREAMS -l $SIZE -J"
FAB_CMD="fabrik bench p2p --client $SRV --token T -P $STREAMS -D $DURATION -s $SIZE --format json"
ip=(); fb=()
for r in $(seq "$ROUNDS"); do
  ip+=("$(ip netns exec "$A0" $IPERF_CMD | jq '.end.sum_received.bits_per_second / 1e9')")
  fb+=("$(ip netns exec "$A0" "$FABRIK" bench p2p --client "$SRV" --token "$TOKEN" -P "$STREAMS" -D "$DURATION" -s "$SIZE" --format json | jq '.results[0].bw_avg_gbps')")
done
IP_M=$(median "${ip[@]}"); FB_M=$(median "${fb[@]}")
echo "## 1. one veth link, $STREAMS stream(s), $SIZE writes, ${DURATION}s x $ROUNDS rounds"
echo "iperf3 Gb/s: ${ip[*]}"
echo "fabrik Gb/s: ${fb[*]}"
echo "median: iperf3 $IP_M, fabrik $FB_M, fabrik/iperf3 = $(ratio "$FB_M" "$IP_M"); median of per-round ratios $(paired "${fb[*]}" "${ip[*]}") (target >= 1.0)"
echo "commands: $IPERF_CMD  |  $FAB_CMD"
echo
fi

# ---- 3. latency (same link) ---------------------------------------------------------------------
if want 3; then
qp=(); sp=(); sp50=(); fl=(); fl50=()
for r in $(seq "$ROUNDS"); do
  q=$(ip netns exec "$A0" qperf "$SRV" -m 64 -t "$DURATION" tcp_lat | awk '/latency/ {v=$3; if ($4=="ms") v*=1000; if ($4=="ns") v/=1000; print v}')
  qp+=("$q")
  s=$(ip netns exec "$A0" sockperf ping-pong --tcp -i "$SRV" -p 11111 -m 64 -t "$DURATION" 2>&1)
  sp+=("$(echo "$s" | sed -nE 's/.*avg-(latency|rtt)=([0-9.]+).*/\2/p' | tail -1)")
  sp50+=("$(echo "$s" | awk '/percentile 50.000/ {print $NF}' | tail -1)")
  f=$(ip netns exec "$A0" "$FABRIK" bench p2p --client "$SRV" --token "$TOKEN" --test lat -s 64 -n "$LAT_ITERS" --format json)
  fl+=("$(echo "$f" | jq '.results[0].t_avg_us')")
  fl50+=("$(echo "$f" | jq '.results[0].t_typical_us')")
done
QP_M=$(median "${qp[@]}"); SP_M=$(median "${sp[@]}"); SP50_M=$(median "${sp50[@]}")
FL_M=$(median "${fl[@]}"); FL50_M=$(median "${fl50[@]}")
echo "## 3. latency, 64-byte TCP ping-pong on one veth link, one-way us, $ROUNDS rounds"
echo "qperf tcp_lat avg: ${qp[*]}"
echo "sockperf avg: ${sp[*]}   median: ${sp50[*]}"
echo "fabrik avg: ${fl[*]}   median: ${fl50[*]}"
echo "median of rounds: qperf $QP_M, sockperf avg $SP_M / median $SP50_M, fabrik avg $FL_M / median $FL50_M"
echo "fabrik/qperf (avg) = $(ratio "$FL_M" "$QP_M"), fabrik/sockperf (avg) = $(ratio "$FL_M" "$SP_M"), fabrik/sockperf (median) = $(ratio "$FL50_M" "$SP50_M") (target <= 1.1)"
echo "median of per-round ratios: fabrik/qperf (avg) $(paired "${fl[*]}" "${qp[*]}"), fabrik/sockperf (avg) $(paired "${fl[*]}" "${sp[*]}"), fabrik/sockperf (median) $(paired "${fl50[*]}" "${sp50[*]}")"
echo "commands: qperf $SRV -m 64 -t $DURATION tcp_lat  |  sockperf ping-pong --tcp -i $SRV -p 11111 -m 64 -t $DURATION  |  fabrik bench p2p --client $SRV --token T --test lat -s 64 -n $LAT_ITERS --format json"
echo
fi
$T down "$NAME-a"

# ---- 2. four shaped links: striping vs the sum of the rates --------------------------------------
want 2 || exit 0
$T up "$NAME-b" 2 4 --rate "$RATE" --mtu "$MTU" >/dev/null
B0="$NAME-b-h0"; B1="$NAME-b-h1"
serve "$B1" "$FABRIK" bench p2p --server --token "$TOKEN"
for k in 0 1 2 3; do serve "$B1" iperf3 -s -p $((5300 + k)); done
wait_port "$B1" 18800; for k in 0 1 2 3; do wait_port "$B1" $((5300 + k)); done
SUM=$(awk -v g="$(rate_gbps "$RATE")" 'BEGIN{print 4*g}')
st=(); i4=()
for r in $(seq "$ROUNDS"); do
  st+=("$(ip netns exec "$B0" "$FABRIK" bench p2p --client "$($T addr 1 0)" --token "$TOKEN" --ifaces eth0,eth1,eth2,eth3 -P 4 -D "$DURATION" -s "$SIZE" --format json | jq '.results[0].bw_avg_gbps')")
  tmp=$(mktemp -d)
  for k in 0 1 2 3; do
    ip netns exec "$B0" iperf3 -c "$($T addr 1 $k)" -B "$($T addr 0 $k)" -p $((5300 + k)) -t "$DURATION" -l "$SIZE" -J >"$tmp/$k.json" &
  done
  wait
  i4+=("$(jq -s 'map(.end.sum_received.bits_per_second) | add / 1e9' "$tmp"/*.json)")
  rm -rf "$tmp"
done
ST_M=$(median "${st[@]}"); I4_M=$(median "${i4[@]}")
echo "## 2. striping over 4 veth links, each tbf-shaped to $RATE (sum $SUM Gb/s), MTU $MTU, ${DURATION}s x $ROUNDS rounds"
echo "fabrik 4 streams over eth0..eth3 Gb/s: ${st[*]}"
echo "4 x iperf3, one per link, summed Gb/s: ${i4[*]}"
echo "median: fabrik $ST_M = $(ratio "$ST_M" "$SUM") x the summed rate (target >= 0.95); 4 x iperf3 $I4_M = $(ratio "$I4_M" "$SUM") x"
echo "commands: netns.sh up NAME 2 4 --rate $RATE --mtu $MTU  |  fabrik bench p2p --client 10.77.0.2 --token T --ifaces eth0,eth1,eth2,eth3 -P 4 -D $DURATION -s $SIZE --format json  |  iperf3 -c 10.77.k.2 -B 10.77.k.1 -p 530k -t $DURATION -l $SIZE -J (k = 0..3, together)"
