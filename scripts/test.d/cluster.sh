#!/usr/bin/env bash
# Cluster suite: the HTML report in a real headless browser, then 8 namespace hosts running the
# collectives (verified), the pair matrix with one directed link shaped slow, a rank killed
# mid-sweep and a rank with the wrong token. Each part skips with a message when it cannot run.
set -euo pipefail
cd "$(dirname "$0")/../.."
FABRIK=${FABRIK:-target/debug/fabrik}
[ -x "$FABRIK" ] || cargo build -p fabrik
FABRIK=$(realpath "$FABRIK")
WORK=$(mktemp -d)
NAME=fabcl$$
cleanup() {
  if [ "$(id -u)" = 0 ] && [ -x testbed/netns.sh ]; then testbed/netns.sh down "$NAME" >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "cluster.sh: FAIL: $*" >&2; exit 1; }

# Counts distinct colours in a PNG (8-bit RGB/RGBA, as Chromium writes screenshots) with the
# Python standard library only.
png_colours() {
  python3 - "$1" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours = set()
i = 0
for _ in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        colours.add(bytes(line[x:x + 3]))
    prev = line
print(len(colours))
PY
}

# --- 1. the report in a headless browser --------------------------------------------------
"$FABRIK" bench collective all_reduce --local 3 -b 1K -e 256K -n 2 -w 1 --output "$WORK/ar.json" >/dev/null
"$FABRIK" bench collective all_gather --local 3 -b 1K -e 256K -n 2 -w 1 --output "$WORK/ag.json" >/dev/null
set +e
"$FABRIK" cluster matrix --local 4 --size 256K --output "$WORK/m.json" >/dev/null 2>&1
set -e
[ -s "$WORK/m.json" ] || fail "cluster matrix --local 4 wrote no matrix"
"$FABRIK" report "$WORK/ar.json" "$WORK/ag.json" "$WORK/m.json" -o "$WORK/report.html" --svg "$WORK/svg" --png "$WORK/png" 2>"$WORK/report.err"
[ "$(ls "$WORK/svg" | wc -l)" = 3 ] || fail "expected 3 SVG plots, got: $(ls "$WORK/svg")"
[ "$(ls "$WORK/png" | wc -l)" = 3 ] || fail "expected 3 PNG plots, got: $(ls "$WORK/png")"
grep -q "no font found" "$WORK/report.err" && echo "cluster.sh: no system font, PNG plots have no text (scripts/apt/test/cluster.txt installs fonts-dejavu-core)"
for p in "$WORK"/png/*.png; do
  c=$(png_colours "$p")
  [ "$c" -ge 20 ] || fail "$(basename "$p") looks blank ($c distinct colours)"
done
echo "cluster.sh: report PNGs decode and are drawn ($(ls "$WORK/png" | tr '\n' ' '))"
# grep -c reads to the end: with -q an early exit would SIGPIPE the pipeline under pipefail and
# hide the very references this looks for.
outside=$(grep -Eo '(src|href)=|<script|https?://[^"]*' "$WORK/report.html" | grep -v 'http://www.w3.org/2000/svg' | grep -c . || true)
if [ "$outside" -gt 0 ]; then
  fail "report.html refers to something outside itself"
fi
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "cluster.sh: browser check skipped (no chromium; scripts/apt/test/cluster.txt installs it)"
else
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$WORK/chrome" --screenshot="$WORK/shot.png" --window-size=1200,1600 \
    "file://$WORK/report.html" >/dev/null 2>&1 || fail "chromium could not render the report"
  colours=$(png_colours "$WORK/shot.png")
  [ "$colours" -ge 50 ] || fail "the screenshot looks blank ($colours distinct colours)"
  echo "cluster.sh: report renders in chromium ($colours distinct colours)"
fi

# --- 2. eight namespace hosts ---------------------------------------------------------------
if [ "$(id -u)" != 0 ]; then echo "cluster.sh: testbed part skipped (needs root for network namespaces)"; exit 0; fi
if ! ip netns add "fabclprobe$$" 2>/dev/null; then echo "cluster.sh: testbed part skipped (cannot create network namespaces here)"; exit 0; fi
ip netns del "fabclprobe$$"
command -v python3 >/dev/null || fail "python3 is missing (scripts/apt/test/cluster.txt)"
N=8
PORT=29555
testbed/netns.sh up "$NAME" "$N" 1 >/dev/null

# rank H [TOKEN] -- ARGS...: starts rank H in host H, stdout/stderr to $WORK/rH.{out,err}.
rank() {
  local h=$1 tok=$2; shift 3
  ip netns exec "$NAME-h$h" env RANK="$h" WORLD_SIZE="$N" LOCAL_RANK=0 MASTER_ADDR=10.77.0.1 \
    MASTER_PORT="$PORT" FABRIK_TOKEN="$tok" "$FABRIK" "$@" --name "node$h" \
    >"$WORK/r$h.out" 2>"$WORK/r$h.err" &
  PIDS[$h]=$!
}
wait_all() { local rc=0; for h in $(seq 0 $((N - 1))); do wait "${PIDS[$h]}" || rc=$?; done; return $rc; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# 2a. every collective, verified, on 8 hosts.
for op in all_reduce all_gather reduce_scatter broadcast reduce alltoall; do
  PORT=$((PORT + 1))
  for h in $(seq 0 $((N - 1))); do
    rank "$h" tok -- bench collective "$op" -b 1K -e 1M -f 4 -n 2 -w 1 -c 1 -r 3 --timeout 60 --format json
  done
  wait_all || fail "$op on $N hosts failed: $(cat "$WORK"/r*.err)"
  rows=$(json "$WORK/r0.out" 'len(d["rows"])')
  bad=$(json "$WORK/r0.out" 'sum(r[k]["wrong"] for r in d["rows"] for k in ("out_of_place","in_place"))')
  ranks=$(json "$WORK/r0.out" 'd["ranks"]')
  [ "$rows" = 6 ] && [ "$bad" = 0 ] && [ "$ranks" = "$N" ] || fail "$op: rows=$rows wrong=$bad ranks=$ranks"
  echo "cluster.sh: $op on $N hosts: $rows sizes verified"
done

# 2b. the pair matrix with one directed link slow: host 2 -> host 5 through tbf at 20 Mb/s.
# htb, not prio: kernels built without sch_prio (this one) still have htb and the u32 filter.
tc -n "$NAME-h2" qdisc replace dev eth0 root handle 1: htb default 1 2>/dev/null
tc -n "$NAME-h2" class add dev eth0 parent 1: classid 1:1 htb rate 100gbit 2>/dev/null
tc -n "$NAME-h2" class add dev eth0 parent 1: classid 1:2 htb rate 20mbit ceil 20mbit 2>/dev/null
tc -n "$NAME-h2" filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.77.0.6/32 flowid 1:2
# The verdict must not depend on luck: run the matrix several times.
for attempt in 1 2 3; do
  PORT=$((PORT + 1))
  for h in $(seq 0 $((N - 1))); do rank "$h" tok -- cluster matrix --size 1M --iters 2 --format json --timeout 60; done
  set +e; wait_all; rc=$?; set -e
  [ "$rc" = 1 ] || fail "matrix with a slow link exited $rc (want 1): $(cat "$WORK/r0.err")"
  slow=$(json "$WORK/r0.out" '[(l["src"], l["dst"]) for l in d["analysis"]["slow_links"]]')
  first=$(json "$WORK/r0.out" '(d["analysis"]["slow_links"][0]["src"], d["analysis"]["slow_links"][0]["dst"])')
  [ "$first" = "(2, 5)" ] || fail "the slowest flagged link is $first, not (2, 5): $slow"
  echo "cluster.sh: matrix run $attempt names the shaped link 2 -> 5 (flagged: $slow)"
done
tc -n "$NAME-h2" qdisc del dev eth0 root

# 2c. a rank killed mid-sweep: rank 0 fails within the timeout, names it, keeps the rows so far.
PORT=$((PORT + 1))
for h in $(seq 0 $((N - 1))); do
  rank "$h" tok -- bench collective all_reduce -b 1K -e 64M -f 2 -n 5 -w 1 --timeout 10 --output "$WORK/partial.json"
done
for _ in $(seq 600); do [ "$(grep -c '^ ' "$WORK/r0.out" 2>/dev/null || true)" -ge 3 ] && break; sleep 0.1; done
[ "$(grep -c '^ ' "$WORK/r0.out")" -ge 3 ] || fail "the sweep did not start: $(cat "$WORK/r0.err")"
kill -9 "${PIDS[5]}"
disown "${PIDS[5]}" 2>/dev/null || true
start=$(date +%s)
set +e; wait "${PIDS[0]}"; rc=$?; set -e
took=$(( $(date +%s) - start ))
for h in $(seq 1 $((N - 1))); do [ "$h" = 5 ] || wait "${PIDS[$h]}" 2>/dev/null || true; done
[ "$rc" != 0 ] || fail "rank 0 succeeded although rank 5 was killed"
[ "$took" -le 30 ] || fail "rank 0 took $took s to notice (timeout 10 s)"
grep -q 'rank 5 (node5' "$WORK/r0.err" || fail "rank 0's error does not name rank 5: $(cat "$WORK/r0.err")"
kept=$(json "$WORK/partial.json" 'len(d["rows"])')
[ "$kept" -ge 3 ] || fail "only $kept rows kept after the failure"
echo "cluster.sh: killed rank 5 named by rank 0 after $took s; $kept rows kept"

# 2d. a rank with the wrong token is rejected.
PORT=$((PORT + 1))
for h in $(seq 0 $((N - 1))); do
  tok=tok; [ "$h" = 3 ] && tok=wrong
  rank "$h" "$tok" -- bench collective all_reduce -b 1K -e 1K -n 1 -w 0 --timeout 8
done
set +e; wait_all; set -e
grep -q 'token differs' "$WORK/r3.err" || fail "rank 3 was not told its token differs: $(cat "$WORK/r3.err")"
grep -q 'rank 3 never joined' "$WORK/r0.err" || fail "rank 0 does not name rank 3: $(cat "$WORK/r0.err")"
grep -q 'wrong token' "$WORK/r0.err" || fail "rank 0 does not say a token was wrong: $(cat "$WORK/r0.err")"
echo "cluster.sh: a rank with the wrong token is rejected and named"
testbed/netns.sh down "$NAME" >/dev/null
echo "cluster.sh: ok"
