#!/usr/bin/env bash
# Checks `fabrik ras` against a real NCCL job's RAS port on one GPU (NCCL >= 2.24 answers there).
#
#   testbed/gpu/ras-live.sh FABRIK_BINARY OUT_DIR
#
# Needs python3 with torch (CUDA) and the NCCL it bundles (pip nvidia-nccl-cu1x); no network,
# no ncclras. Starts a 1-rank torch.distributed NCCL job (a few all_reduces, then ~40 s asleep
# so that RAS stays up), asks its RAS port with fabrik and with an independent Python client of
# the same protocol, saves every transcript under OUT_DIR and exits 1 on any mismatch (2 when it
# could not run). About a minute.
set -uo pipefail

FABRIK=${1:?usage: ras-live.sh FABRIK_BINARY OUT_DIR}
OUT=${2:?usage: ras-live.sh FABRIK_BINARY OUT_DIR}
PORT=${RAS_PORT:-28028}
mkdir -p "$OUT" || exit 2
FABRIK=$(readlink -f "$FABRIK")
[[ -x "$FABRIK" ]] || { echo "not executable: $FABRIK" >&2; exit 2; }
failures=0
fail() { echo "MISMATCH: $*" | tee -a "$OUT/mismatches.txt" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*" | tee -a "$OUT/checks.txt"; }

"$FABRIK" --version >"$OUT/fabrik-version.txt" 2>&1
"$FABRIK" ras --help >/dev/null 2>&1 || { echo "$FABRIK has no 'ras' command" >&2; exit 2; }
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1

# The NCCL torch loads, and which RAS features it has.
python3 - >"$OUT/versions.txt" 2>&1 <<'PY' || { cat "$OUT/versions.txt" >&2; exit 2; }
import torch
v = torch.cuda.nccl.version()
print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())
print("nccl %d.%d.%d" % v)
try:
    import importlib.metadata as md
    for d in md.distributions():
        n = d.metadata["Name"] or ""
        if n.startswith("nvidia-nccl"):
            print("pip", n, d.version)
except Exception as e:  # informative only
    print("pip query failed:", e)
PY
cat "$OUT/versions.txt"
NCCL=$(awk '/^nccl /{print $2}' "$OUT/versions.txt")
IFS=. read -r MAJ MIN PAT <<<"$NCCL"
ver() { printf '%d%03d%03d' "$MAJ" "$MIN" "$PAT"; }
at_least() { [[ $(ver) -ge $(printf '%d%03d%03d' "$1" "$2" "$3") ]]; }
at_least 2 24 0 || { echo "NCCL $NCCL has no RAS (2.24+)" >&2; exit 2; }

# The job: one rank, RAS on its default address, the diagnostics where NCCL has them.
cat >"$OUT/job.py" <<'PY'
import os, sys, time
import torch, torch.distributed as dist
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29561", rank=0, world_size=1)
x = torch.ones(1 << 20, device="cuda")
for _ in range(5):
    dist.all_reduce(x)
torch.cuda.synchronize()
print("RAS-LIVE READY allreduce=%g" % x[0].item(), flush=True)
time.sleep(float(os.environ.get("HOLD_S", "40")))
dist.destroy_process_group()
print("RAS-LIVE DONE", flush=True)
PY
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,RAS NCCL_RAS_ENABLE=1
if at_least 2 31 0; then export NCCL_RUN_RAS_DIAGNOSTICS=1 NCCL_RUN_DIAGNOSTICS=1; fi
python3 "$OUT/job.py" >"$OUT/job.log" 2>&1 &
JOB=$!
trap 'kill $JOB 2>/dev/null; wait $JOB 2>/dev/null' EXIT
for _ in $(seq 90); do
  grep -q "RAS-LIVE READY" "$OUT/job.log" && break
  kill -0 $JOB 2>/dev/null || break
  sleep 1
done
grep -q "RAS-LIVE READY" "$OUT/job.log" || { echo "the job did not start; see $OUT/job.log" >&2; tail -20 "$OUT/job.log" >&2; exit 2; }
grep -E "RAS|NCCL version" "$OUT/job.log" | head -20 >"$OUT/job-ras-lines.txt"

# An independent client: the protocol as NCCL's src/ras/client.cc speaks it, raw bytes saved.
python3 - "$PORT" "$OUT" <<'PY' >"$OUT/python-client.txt" 2>&1
import socket, sys
port, out = int(sys.argv[1]), sys.argv[2]
def session(lines, name, read_all=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    log = b""
    for l in lines:
        s.sendall(l.encode())
        log += b">>> " + l.encode()
        if l.startswith(("CLIENT", "SET", "TIMEOUT")):
            r = b""
            while not r.endswith(b"\n"):
                c = s.recv(4096)
                if not c:
                    break
                r += c
            log += b"<<< " + r
    data = b""
    while read_all:
        c = s.recv(65536)
        if not c:
            break
        data += c
    s.close()
    open(f"{out}/{name}", "wb").write(log + b"<<< (report)\n" + data)
    return data
t = session(["CLIENT PROTOCOL 2\n", "STATUS\n"], "transcript-status-text.txt")
print("text report bytes", len(t))
PY
cat "$OUT/python-client.txt"

run() { # name, expected exit codes (space separated), fabrik args...
  local name=$1 want=$2; shift 2
  timeout 60 "$FABRIK" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  local rc=$?
  echo "$rc" >"$OUT/$name.rc"
  if [[ " $want " == *" $rc "* ]]; then ok "fabrik $* -> $rc"; else fail "fabrik $* exited $rc (want $want): $(head -c 400 "$OUT/$name.err")"; fi
}

T=127.0.0.1:$PORT
run status-raw "0" ras "$T" --raw
run status-text "0 1" ras "$T"
run status-json "0 1" ras "$T" --format json
run status-verbose "0 1" ras "$T" --verbose-report --ras-timeout 3 --format json
run wrong-port "2" ras 127.0.0.1:1 --connect-timeout 2
if at_least 2 28 7; then run status-jsonreport "0 1" ras "$T" --json-report --format json; fi
# MONITOR came with NCCL 2.29 (src/ras/client_support.cc); an older job must be refused clearly.
if at_least 2 29 0; then
  run monitor "0 1" ras "$T" --ask monitor --duration 4 --format json
else
  run monitor-refused "2" ras "$T" --ask monitor --duration 4
  grep -q "no RAS monitor mode" "$OUT/monitor-refused.err" && ok "MONITOR refused with the NCCL version named" || fail "MONITOR refusal does not say why: $(head -c 300 "$OUT/monitor-refused.err")"
fi
if at_least 2 31 0; then
  run diag-raw "0" ras "$T" --ask diagnostics --raw
  run diag-json "0 1" ras "$T" --ask diagnostics --format json
fi

# What the job's report says, read by fabrik and by the independent client, must agree.
python3 - "$OUT" "$NCCL" <<'PY' >>"$OUT/checks.txt" 2>>"$OUT/mismatches.txt"
import json, os, re, sys
out, nccl = sys.argv[1], sys.argv[2]
bad = 0
def check(cond, what):
    global bad
    print(("ok: " if cond else "MISMATCH: ") + what, file=sys.stdout if cond else sys.stderr)
    bad += 0 if cond else 1
raw = open(f"{out}/transcript-status-text.txt", "rb").read().decode("utf-8", "replace")
check("SERVER PROTOCOL" in raw, "the job answered the handshake (SERVER PROTOCOL)")
m = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", raw, re.M)
check(m is not None, "the text report has the job summary row")
fab_raw = open(f"{out}/status-raw.out").read()
check("Job summary" in fab_raw, "fabrik --raw printed the job's report")
doc = json.load(open(f"{out}/status-json.out"))
ras = doc.get("ras") or {}
check(ras.get("format") == "text", "fabrik read a text report")
check(ras.get("nccl_version") == nccl, f"report version {ras.get('nccl_version')} == torch's NCCL {nccl}")
if m:
    nodes, procs, gpus = int(m.group(1)), int(m.group(4)), int(m.group(5))
    check((ras.get("nodes"), ras.get("processes"), ras.get("gpus")) == (nodes, procs, gpus),
          f"nodes/processes/GPUs {ras.get('nodes')}/{ras.get('processes')}/{ras.get('gpus')} == {nodes}/{procs}/{gpus}")
check((ras.get("nodes"), ras.get("processes"), ras.get("gpus")) == (1, 1, 1), "a 1-rank job is 1 node, 1 process, 1 GPU")
check(not [f for f in doc.get("findings", []) if f["severity"] == "error"], "a healthy job has no error finding")
if os.path.exists(f"{out}/status-jsonreport.out"):
    j = json.load(open(f"{out}/status-jsonreport.out"))
    check((j.get("ras") or {}).get("format") == "json", "--json-report gives the job's JSON document")
if os.path.exists(f"{out}/diag-json.out"):
    d = json.load(open(f"{out}/diag-json.out"))
    check(len(d.get("diag", [])) >= 1, "DIAGNOSTICS returned a DIAG report")
sys.exit(1 if bad else 0)
PY
[[ $? -eq 0 ]] || failures=$((failures + 1))

# The job's own log, with its DIAG lines where NCCL printed them.
timeout 60 "$FABRIK" logs "$OUT/job.log" --format json >"$OUT/logs.json" 2>"$OUT/logs.err"
echo $? >"$OUT/logs.rc"
python3 - "$OUT" "$NCCL" <<'PY' >>"$OUT/checks.txt" 2>>"$OUT/mismatches.txt" || failures=$((failures + 1))
import json, sys
out, nccl = sys.argv[1], sys.argv[2]
r = json.load(open(f"{out}/logs.json"))
bad = []
if r["summary"].get("nccl_version") != nccl: bad.append(f"logs version {r['summary'].get('nccl_version')} != {nccl}")
if r["summary"].get("processes") != 1: bad.append(f"logs processes {r['summary'].get('processes')} != 1")
errs = [f["rule"] for f in r.get("findings", []) if f["severity"] == "error"]
if errs: bad.append(f"error findings on a healthy 1-GPU job: {errs}")
log = open(f"{out}/job.log", errors="replace").read()
if "NCCL DIAG" in log and not r.get("diag"): bad.append("job.log has NCCL DIAG lines, fabrik logs read none")
for b in bad: print("MISMATCH:", b, file=sys.stderr)
print("ok: fabrik logs on the job's log" if not bad else "")
sys.exit(1 if bad else 0)
PY

echo "failures: $failures (details in $OUT/checks.txt, $OUT/mismatches.txt)"
[[ $failures -eq 0 ]]
