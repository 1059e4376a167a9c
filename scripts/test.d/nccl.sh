#!/usr/bin/env bash
# nccl backend on a real GPU: a single-rank sweep of every collective, verified, JSON checked.
# Skips with a message where there is no NVIDIA driver, the one skip FABRIK_REQUIRE_TESTBEDS
# allows (CI has no GPU; the mock-library tests in `cargo test -p fabrik --test nccl_mock` cover
# the code paths everywhere else). A driver without NCCL is a skip that fails where required.
set -euo pipefail
cd "$(dirname "$0")/../.."
have_lib() {
  # grep reads to the end (no -q): under pipefail an early exit would SIGPIPE ldconfig.
  ldconfig -p 2>/dev/null | grep -F "$1" >/dev/null && return 0
  local d
  IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
  for d in "${dirs[@]}"; do [ -n "$d" ] && [ -e "$d/$1" ] && return 0; done
  return 1
}
. scripts/lib/skip.sh
if ! have_lib libcuda.so.1; then no_gpu nccl.sh "no libcuda.so.1 (no NVIDIA driver)"; fi
if ! have_lib libnccl.so.2; then skip nccl.sh "no libnccl.so.2 beside the NVIDIA driver (install NCCL or set LD_LIBRARY_PATH)"; fi
FABRIK=${FABRIK:-target/debug/fabrik}
MAX=${NCCL_SH_MAXBYTES:-64M}
[ -x "$FABRIK" ] || cargo build -p fabrik
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for op in all_reduce all_gather reduce_scatter broadcast reduce alltoall; do
  for dt in float half bfloat16; do
    out="$WORK/$op-$dt.json"
    if ! "$FABRIK" bench collective "$op" --backend nccl -b 8 -e "$MAX" -f 4 -n 5 -w 2 -d "$dt" --format json >"$out"; then
      echo "nccl.sh: FAIL: $op $dt" >&2; cat "$out" >&2; exit 1
    fi
    python3 - "$out" "$op" "$dt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["backend"] == "nccl" and r["op"] == sys.argv[2] and r["ranks"] == 1, r
assert len(r["rows"]) >= 5, len(r["rows"])
for row in r["rows"]:
    assert row["type"] == sys.argv[3], row
    for p in ("out_of_place", "in_place"):
        assert row[p]["wrong"] == 0, row
        assert row[p]["time_us"] > 0, row
print(f"nccl.sh: {sys.argv[2]} {sys.argv[3]}: {len(r['rows'])} sizes verified on {r['devices'][0]['name']} [{r['devices'][0]['bus_id']}] ({r['notes'][0]})")
PY
  done
done
"$FABRIK" bench collective all_reduce --backend nccl -b 8 -e "$MAX" -f 2
echo "nccl.sh: OK"
