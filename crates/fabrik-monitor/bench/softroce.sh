#!/usr/bin/env bash
# Live check of `fabrik top` on real rxe counters, in the Soft-RoCE VM of testbed/softroce
# (build.sh + run.sh) with its own test script, vm-top.sh: rxe0 on a veth, ib_write_bw over it
# while `fabrik top --format json` samples every second. Then rebuilds the before/after counter
# trees the VM dumped ($W/rxe-vm/{before,after}) and checks that rxe0's packet counters moved.
#
#   bash crates/fabrik-monitor/bench/softroce.sh [path/to/fabrik]
# Root; downloads the kernel once; needs the packages of scripts/apt/test/verbs.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
FABRIK=$(readlink -f "${1:-$repo/target/release/fabrik}")
[ -x "$FABRIK" ] || { echo "no fabrik binary at $FABRIK (cargo build --release -p fabrik)"; exit 2; }
W=${W:-/tmp/softroce-monitor}; mkdir -p "$W"; cd "$W"
SOFTROCE_SCRIPTS="$here/vm-top.sh" SOFTROCE_ARGS="fab.script=vm-top.sh ${SOFTROCE_ARGS:-}" \
  SOFTROCE_TIMEOUT=${SOFTROCE_TIMEOUT:-400} "$repo/testbed/softroce/run.sh" "$FABRIK"
cp "${SOFTROCE_CACHE:-$repo/testbed/cache}/softroce-console.txt" out.txt
# Rebuild the real counter trees: $W/rxe-vm/{before,after}.
python3 - out.txt "$W/rxe-vm" <<'PY'
import os, sys
out, dest = sys.argv[1], sys.argv[2]
for line in open(out, errors="replace"):
    line = line.rstrip("\r\n")
    for tag in ("before", "after"):
        pre = f"DUMP-{tag} "
        if line.startswith(pre) and "\t" in line:
            rel, val = line[len(pre):].split("\t", 1)
            path = os.path.join(dest, tag, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(val + "\n")
PY
grep '^FABRIK-TOP ' out.txt | sed 's/^FABRIK-TOP //' | tr -d '\r' > top.ndjson
python3 - top.ndjson <<'PY'
import json, sys
best = {}
for line in open(sys.argv[1]):
    f = json.loads(line)
    for p in f["ports"]:
        if p["device"] == "rxe0":
            t = p["traffic"]
            best["tx_pps"] = max(best.get("tx_pps", 0), t["tx_packets_per_s"] or 0)
            for c in p["changes"]:
                best.setdefault("moved", set()).add(c["name"])
    for n in f["netdevs"]:
        if n["name"] == "va":
            best["va_bps"] = max(best.get("va_bps", 0), n["traffic"]["tx_bits_per_s"] or 0)
print("rxe0 peak sent_pkts/s:", best.get("tx_pps"), "moved:", sorted(best.get("moved", [])))
print("va peak tx bits/s:", best.get("va_bps"))
sys.exit(0 if best.get("tx_pps", 0) > 0 else 1)
PY
