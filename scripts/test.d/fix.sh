#!/usr/bin/env bash
# `fabrik fix` in the namespace testbed (root only): three hosts on one switch, the jumbo MTU on
# hosts 0 and 1, and on host 2 two settings as a host rebuilt from another image has them:
# 1500 on eth0, the interface NCCL's bootstrap and socket transport take (FAB-MTU-002), and its
# TCP receive buffers capped at 8 KiB (net.ipv4.tcp_rmem, FAB-X-014). Host 2 applies the plan
# against the other two hosts' snapshots, the doctor no longer finds either drift, a verified
# TCP benchmark to host 0 passes over the changed interface, and `fix --undo` puts both values
# back, with the findings. Host 2 runs with a copy of /etc bound over
# /etc in its own mount namespace, so the udev rule the change writes never reaches the machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/skip.sh
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi

if [ "$(id -u)" != 0 ]; then
  skip fix "network namespaces need root"
fi
for t in ip unshare python3; do
  command -v "$t" >/dev/null || skip fix "$t not installed"
done

cargo build -q --locked -p fabrik -p fabrik-testbed --bin fabrik --bin fabrik-netns
BIN="$PWD/target/debug/fabrik"
NETNS="$PWD/target/debug/fabrik-netns"
NAME="fabfix$$"
WORK="$(mktemp -d /tmp/fabrik-fix-test.XXXXXX)"
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null || true
  "$NETNS" down "$NAME" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "fix: FAIL: $*" >&2
  for f in "$WORK"/*.out; do [ -e "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}

"$NETNS" up "$NAME" 3 1 --mtu 9000 >/dev/null
"$NETNS" exec "$NAME" 2 ip link set dev eth0 mtu 1500
"$NETNS" exec "$NAME" 0 cat /proc/sys/net/ipv4/tcp_rmem >"$WORK/rmem-peer"
"$NETNS" exec "$NAME" 2 sysctl -q -w net.ipv4.tcp_rmem="4096 8192 8192"

# Hosts 0 and 1 as their snapshots, each under its own host name.
for h in 0 1; do
  "$NETNS" exec "$NAME" "$h" unshare --uts sh -c \
    'hostname "$1" && exec "$2" snapshot -o "$3"' sh "fix-h$h" "$BIN" "$WORK/s$h" \
    >"$WORK/snap$h.out" 2>&1 || fail "snapshot of host $h"
done

"$NETNS" exec "$NAME" 0 "$BIN" bench p2p --server --token fixtest --once >"$WORK/server.out" 2>&1 &
SERVER=$!
for _ in $(seq 100); do
  "$NETNS" exec "$NAME" 0 ss -ltn | grep ':18800 ' >/dev/null && break
  sleep 0.05
done

cat >"$WORK/host2.sh" <<'EOF'
# Runs inside host 2: its own UTS and mount namespaces, /etc a private copy.
set -u
W=$1 BIN=$2 PEER=$3
hostname fix-h2
mkdir "$W/etc" && cp -a /etc/. "$W/etc/" && mount --bind "$W/etc" /etc || exit 3
R=(--root / --root "$W/s0" --root "$W/s1")
"$BIN" doctor "${R[@]}" --format json >"$W/d0.json" 2>"$W/d0.out"
F=(--rule FAB-MTU-002 --rule FAB-X-014)
"$BIN" fix "${R[@]}" "${F[@]}" --format json >"$W/plan.json" 2>"$W/plan.out"
cat /sys/class/net/eth0/mtu >"$W/mtu0"
"$BIN" fix "${R[@]}" "${F[@]}" --apply --drained --record "$W/undo.json" >"$W/apply.out" 2>&1
echo $? >"$W/apply.rc"
cat /sys/class/net/eth0/mtu >"$W/mtu1"
cat /proc/sys/net/ipv4/tcp_rmem >"$W/rmem1"
ls /etc/udev/rules.d /etc/sysctl.d >"$W/etc1" 2>/dev/null
"$BIN" doctor "${R[@]}" --format json >"$W/d1.json" 2>"$W/d1.out"
"$BIN" bench p2p --client "$PEER" --token fixtest -D 1 --verify >"$W/bench.out" 2>&1
echo $? >"$W/bench.rc"
"$BIN" fix --undo "$W/undo.json" >"$W/undo.out" 2>&1
echo $? >"$W/undo.rc"
cat /sys/class/net/eth0/mtu >"$W/mtu2"
cat /proc/sys/net/ipv4/tcp_rmem >"$W/rmem2"
ls /etc/udev/rules.d /etc/sysctl.d >"$W/etc2" 2>/dev/null
"$BIN" doctor "${R[@]}" --format json >"$W/d2.json" 2>"$W/d2.out"
EOF
peer="$("$NETNS" addr 0 0)"
"$NETNS" exec "$NAME" 2 unshare --uts --mount --propagation private bash "$WORK/host2.sh" "$WORK" "$BIN" "$peer" \
  || fail "host 2's script stopped (exit $?)"

python3 - "$WORK" <<'PY' || fail "see above"
import json, pathlib, sys
w = pathlib.Path(sys.argv[1])
def mtu2(name, rules=("FAB-MTU-002", "FAB-X-014")):
    doc = json.loads((w / name).read_text())
    return sorted((f["rule"], f["subject"]) for f in doc["findings"] if f["rule"] in rules)
def words(name):
    return " ".join(read(name).split())
def read(name):
    return (w / name).read_text().strip()
before = mtu2("d0.json")
assert before == [("FAB-MTU-002", "fix-h2"), ("FAB-X-014", "fix-h2")], before
plan = json.loads(read("plan.json"))
text = json.dumps(plan)
assert '"kind": "mtu"' in text and '"previous": "1500"' in text and '"netdev": "eth0"' in text, text
assert '"key": "net.ipv4.tcp_rmem"' in text and '"previous": "4096 8192 8192"' in text, text
assert read("mtu0") == "1500"
assert read("apply.rc") == "0", read("apply.rc")
assert read("mtu1") == "9000", read("mtu1")
assert "FAB-MTU-002" in read("apply.out") and "FAB-X-014" in read("apply.out"), read("apply.out")
peer = words("rmem-peer")
assert words("rmem1") == peer, (read("rmem1"), peer)
assert "90-fabrik-mtu-eth0.rules" in read("etc1"), read("etc1")
assert "tcp_rmem" in read("etc1"), read("etc1")
assert mtu2("d1.json") == [], mtu2("d1.json")
assert read("bench.rc") == "0", read("bench.out")
assert read("undo.rc") == "0", read("undo.out")
assert read("mtu2") == "1500", read("mtu2")
assert words("rmem2") == "4096 8192 8192", read("rmem2")
assert "90-fabrik-mtu-eth0.rules" not in read("etc2") and "tcp_rmem" not in read("etc2"), read("etc2")
assert mtu2("d2.json") == before, mtu2("d2.json")
bench = [l for l in read("bench.out").splitlines() if l.split() and l.split()[0].isdigit()]
print("fix: on fix-h2, eth0 MTU 1500 -> 9000 (FAB-MTU-002) and tcp_rmem 4096 8192 8192 -> "
      f"{peer} (FAB-X-014) by fix --apply --drained, both findings gone, bench p2p verified "
      f"({' '.join(bench[-1].split())}: bytes, iterations, peak and average Gb/s...), undo back to 1500 and 8192 with both findings")
PY
[ -e /etc/udev/rules.d/90-fabrik-mtu-eth0.rules ] && fail "the udev rule reached the machine's /etc"
echo "fix: ok"
