#!/usr/bin/env bash
# The fabrik namespace testbed for humans and benchmark scripts: the same layout that the
# fabrik-testbed crate builds for tests.
#
#   host h = network namespace NAME-h<h>; link k = veth eth<k> in the host, its peer h<h>l<k>
#   enslaved to bridge br<k> in the switch namespace NAME-sw; address 10.77.<k>.<h+1>/24.
#   Link k of every host is one subnet, as each TCPX data NIC (or each rail) is its own network.
#
# Usage:
#   netns.sh up NAME HOSTS LINKS [--rate RATE] [--mtu MTU]   build (RATE shapes every link, both ways, tc tbf)
#   netns.sh shape NAME HOST LINK RATE                      shape one host's link both ways
#   netns.sh exec NAME HOST CMD...                          run CMD inside host HOST
#   netns.sh addr HOST LINK                                 print the address of HOST on LINK
#   netns.sh down NAME                                      kill what runs inside and delete it all
#   netns.sh list                                           testbed namespaces on this machine
# Needs root and iproute2. `up` removes a testbed of the same NAME first.
set -euo pipefail

die() { echo "netns.sh: $*" >&2; exit 2; }
need_root() { [ "$(id -u)" = 0 ] || die "needs root (network namespaces, veth, tc)"; }

addr() { echo "10.77.$2.$(($1 + 1))"; }

# A bucket of 10 ms of traffic, at least 128 KiB (veth hands GSO super-packets to the qdisc).
burst_for() {
  local rate=$1 num unit bps
  num=$(echo "$rate" | sed -E 's/^([0-9.]+).*/\1/')
  unit=$(echo "$rate" | sed -E 's/^[0-9.]+//' | tr 'A-Z' 'a-z')
  case "$unit" in
    bit) bps=$num ;; kbit) bps=$(awk "BEGIN{print $num*1e3}") ;;
    mbit) bps=$(awk "BEGIN{print $num*1e6}") ;; gbit) bps=$(awk "BEGIN{print $num*1e9}") ;;
    *) die "rate $rate: use bit, kbit, mbit or gbit" ;;
  esac
  awk "BEGIN{b=int($bps/8/100); if (b < 131072) b = 131072; print b}"
}

tbf() { # NS DEV RATE
  tc -n "$1" qdisc replace dev "$2" root tbf rate "$3" burst "$(burst_for "$3")" latency 100ms
}

down() {
  local name=$1 ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${name}-(h[0-9]+|sw)$" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}

up() {
  local name=$1 hosts=$2 links=$3 rate="" mtu="" h k sw
  shift 3
  while [ $# -gt 0 ]; do
    case "$1" in
      --rate) rate=$2; shift 2 ;;
      --mtu) mtu=$2; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  [ "$hosts" -ge 1 ] && [ "$hosts" -le 250 ] || die "HOSTS must be 1..250"
  [ "$links" -ge 1 ] && [ "$links" -le 200 ] || die "LINKS must be 1..200"
  down "$name"
  # A failure half-way leaves nothing behind.
  trap 'down "$name"' ERR
  sw="$name-sw"
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  for ((k = 0; k < links; k++)); do
    ip -n "$sw" link add "br$k" type bridge
    ip -n "$sw" link set "br$k" up
  done
  for ((h = 0; h < hosts; h++)); do
    local ns="$name-h$h"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    for ((k = 0; k < links; k++)); do
      ip link add name "eth$k" netns "$ns" type veth peer name "h${h}l$k" netns "$sw"
      if [ -n "$mtu" ]; then
        ip -n "$ns" link set "eth$k" mtu "$mtu"
        ip -n "$sw" link set "h${h}l$k" mtu "$mtu"
      fi
      ip -n "$sw" link set "h${h}l$k" master "br$k" up
      ip -n "$ns" addr add "$(addr "$h" "$k")/24" dev "eth$k"
      ip -n "$ns" link set "eth$k" up
      if [ -n "$rate" ]; then
        tbf "$ns" "eth$k" "$rate"
        tbf "$sw" "h${h}l$k" "$rate"
      fi
    done
  done
  trap - ERR
  echo "testbed $name: $hosts hosts x $links links${rate:+, every link shaped to $rate}${mtu:+, mtu $mtu}"
}

cmd=${1:-}
[ -n "$cmd" ] || { sed -n '2,20p' "$0"; exit 2; }
shift
case "$cmd" in
  up) need_root; [ $# -ge 3 ] || die "up NAME HOSTS LINKS [--rate R] [--mtu M]"; up "$@" ;;
  down) need_root; [ $# -eq 1 ] || die "down NAME"; down "$1" ;;
  shape) need_root; [ $# -eq 4 ] || die "shape NAME HOST LINK RATE"
    tbf "$1-h$2" "eth$3" "$4"; tbf "$1-sw" "h$2l$3" "$4" ;;
  exec) need_root; [ $# -ge 3 ] || die "exec NAME HOST CMD..."
    ns="$1-h$2"; shift 2; exec ip netns exec "$ns" "$@" ;;
  addr) [ $# -eq 2 ] || die "addr HOST LINK"; addr "$1" "$2" ;;
  list) ip netns list | awk '{print $1}' | grep -E -- '-(h[0-9]+|sw)$' || true ;;
  *) die "unknown command $cmd (up, down, shape, exec, addr, list)" ;;
esac
