# Runs inside the Soft-RoCE VM (busybox sh). Prints one line per check:
#   FABRIK-TEST PASS|FAIL <name> [detail]
#   FABRIK-RATIO <name> fabrik=<x> perftest=<y> ratio=<x/y> target=<...> met|missed
# run.sh greps these from the serial console.
IP=/usr/sbin/ip
export FABRIK_TOKEN=softroce-ci-token
F=/usr/bin/fabrik
SRV="$F bench p2p --transport rdma --server --once"
CLI="$F bench p2p --transport rdma --client 192.0.2.1"
BW_SIZE=${bw_size:-65536}; BW_ITERS=${bw_iters:-2000}
LAT_SIZE=${lat_size:-2}; LAT_ITERS=${lat_iters:-1000}
# Round trips per latency round of the side-by-side comparison: long enough that each round's
# median counts round trips rather than wall-clock time. When the host deschedules one of the
# guest's vCPUs, a round trip waits milliseconds; a 1000-trip round (13 ms) can fall wholly
# inside such a stretch and report a millisecond median, for either tool (seen in CI: both tools
# had rounds at 2-4 ms). In a long round the fast trips outnumber the stalled ones.
LAT_RATIO_ITERS=${lat_ratio_iters:-20000}
pass() { echo "FABRIK-TEST PASS $*"; }
fail() { echo "FABRIK-TEST FAIL $*"; }

$IP link set lo up
ulimit -l unlimited
$IP link add va type veth peer name vb
$IP addr add 192.0.2.1/24 dev va; $IP link set va up; $IP link set vb up
rdma link add rxe0 type rxe netdev va || fail rxe-link
sleep 1
echo "  clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
ibv_devinfo -d rxe0 | grep -E "state|active_mtu|link_layer" | sed 's/^/  /'
for i in $(ls /sys/class/infiniband/rxe0/ports/1/gids/ 2>/dev/null); do
  g=$(cat /sys/class/infiniband/rxe0/ports/1/gids/$i 2>/dev/null)
  case $g in 0000:0000:0000:0000:0000:0000:0000:0000) ;; *) echo "  gid $i $g $(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)";; esac
done

# CPU pinning of the server and the client, the same for fabrik and perftest (a command prefix
# such as "taskset -c 1"). Empty in CI: pinned and unpinned latency rounds differed no more than
# rounds differ among themselves, over two runs.
PIN_S=; PIN_C=
# server_then_client NAME SERVER_ARGS -- CLIENT_ARGS: fabrik server in the background, client in
# the foreground; client output in /tmp/NAME.out, server's in /tmp/NAME.srv.
fab_pair() {
  name=$1; shift
  timeout 120 $PIN_S $SRV -d rxe0 "$@" >/tmp/$name.srv 2>&1 &
  spid=$!
  sleep 1
  timeout 120 $PIN_C $CLI -d rxe0 "$@" >/tmp/$name.out 2>&1
  crc=$?
  wait $spid; src=$?
  return $(( crc | src ))
}

# --- fabrik tests with payload verification -------------------------------------------------
for op in write read send; do
  if fab_pair bw-$op --op $op --test bw -s $BW_SIZE -n $BW_ITERS --verify; then
    pass fabrik-bw-$op "$(grep -E "^ $BW_SIZE " /tmp/bw-$op.out)"
  else
    fail fabrik-bw-$op; cat /tmp/bw-$op.out /tmp/bw-$op.srv
  fi
  cat /tmp/bw-$op.out | sed 's/^/  /'
done
for op in send write read; do
  if fab_pair lat-$op --op $op --test lat -s $LAT_SIZE -n $LAT_ITERS --verify; then
    pass fabrik-lat-$op "$(grep -E "^ $LAT_SIZE " /tmp/lat-$op.out)"
  else
    fail fabrik-lat-$op; cat /tmp/lat-$op.out /tmp/lat-$op.srv
  fi
  cat /tmp/lat-$op.out | sed 's/^/  /'
done
# Several QPs and a size sweep, verified.
if fab_pair bw-qps --op write --test bw -b 1024 -e 65536 -f 4 -n 500 --qps 2 --verify; then
  pass fabrik-bw-write-2qps-sweep; sed 's/^/  /' /tmp/bw-qps.out
else
  fail fabrik-bw-write-2qps-sweep; cat /tmp/bw-qps.out /tmp/bw-qps.srv
fi
# JSON output carries the report.
if fab_pair bw-json --op write --test bw -s 4096 -n 200 --relaxed-ordering --format json \
   && grep -q '"transport": "rdma"' /tmp/bw-json.out && grep -q 'RELAXED_ORDERING' /tmp/bw-json.out; then
  pass fabrik-json-relaxed-ordering
else
  fail fabrik-json-relaxed-ordering; cat /tmp/bw-json.out /tmp/bw-json.srv
fi

# --local runs both ends in one process; --transport auto picks RDMA where a device is ACTIVE.
if timeout 120 $F bench p2p --transport auto --local -d rxe0 --test bw -s 8192 -n 300 --op read --verify --format json >/tmp/auto.out 2>&1 \
   && grep -q '"transport": "rdma"' /tmp/auto.out && grep -q '"op": "read"' /tmp/auto.out; then
  pass fabrik-auto-local-rdma
else
  fail fabrik-auto-local-rdma; cat /tmp/auto.out
fi

# Pass lines: rxe is a software device whose sysfs rate is its netdev's nominal one, so no line
# is drawn unless one is given; --link-gbps draws 90 % of it, exit 1 below.
PL="$F bench p2p --transport rdma --local -d rxe0 --test bw -s 65536 -n 300 --format json"
timeout 120 $PL >/tmp/pl-none.out 2>&1 && pl0=0 || pl0=$?
timeout 120 $PL --link-gbps 1000 >/tmp/pl-fail.out 2>&1 && pl1=0 || pl1=$?
timeout 120 $PL --link-gbps 0.001 >/tmp/pl-pass.out 2>&1 && pl2=0 || pl2=$?
if [ "$pl0" = 0 ] && ! grep -q '"pass_line"' /tmp/pl-none.out \
   && [ "$pl1" = 1 ] && grep -q '"verdict": "fail"' /tmp/pl-fail.out \
   && [ "$pl2" = 0 ] && grep -q '"verdict": "pass"' /tmp/pl-pass.out; then
  pass fabrik-rdma-pass-line
else
  fail fabrik-rdma-pass-line "exits $pl0 $pl1 $pl2"; cat /tmp/pl-none.out /tmp/pl-fail.out /tmp/pl-pass.out
fi

# --- GPU-memory plumbing with the MOCK libcuda.so.1 (host memory behind the CUDA driver API, no
# GPU): the driver is loaded and initialised, "device" memory allocated, filled through
# cuMemcpyHtoD, registered (dma-buf export refused, so the ibv_reg_mr fallback), moved over rxe and
# checked through cuMemcpyDtoH. What this cannot show: real GPU memory, nvidia_peermem, dma-buf.
MOCK="env LD_LIBRARY_PATH=/fabrik/mock-cuda"
mock_pair() { # like fab_pair, both ends with the mock driver
  name=$1; shift
  timeout 120 $MOCK $SRV -d rxe0 "$@" >/tmp/$name.srv 2>&1 &
  spid=$!
  sleep 1
  timeout 120 $MOCK $CLI -d rxe0 "$@" >/tmp/$name.out 2>&1
  crc=$?
  wait $spid; src=$?
  return $(( crc | src ))
}
for op in write read send; do
  if mock_pair mock-cuda-$op --op $op --test bw -s 65536 -n 300 --mem cuda --verify \
     && grep -q "memory: cuda | registration: peer_mem" /tmp/mock-cuda-$op.out \
     && grep -q "host-memory reference" /tmp/mock-cuda-$op.out \
     && grep -q "cuda/host BW average" /tmp/mock-cuda-$op.out \
     && grep -q "verify: payloads checked" /tmp/mock-cuda-$op.out; then
    pass mock-cuda-bw-$op "$(grep "cuda/host BW average" /tmp/mock-cuda-$op.out)"
  else
    fail mock-cuda-bw-$op; cat /tmp/mock-cuda-$op.out /tmp/mock-cuda-$op.srv
  fi
  sed 's/^/  /' /tmp/mock-cuda-$op.out
done
if mock_pair mock-managed-lat --op send --test lat -s 64 -n 200 --mem managed --verify \
   && grep -q "memory: managed | registration: host" /tmp/mock-managed-lat.out \
   && grep -q "verify: payloads checked" /tmp/mock-managed-lat.out; then
  pass mock-managed-send-lat "$(grep -E "^ 64 " /tmp/mock-managed-lat.out)"
else
  fail mock-managed-send-lat; cat /tmp/mock-managed-lat.out /tmp/mock-managed-lat.srv
fi
# The warning's whole path (ratio, causes, stderr line, JSON) with the threshold forced above any
# real ratio: rxe moves mock "GPU" memory as fast as host memory, so a true slowdown cannot be
# staged here (the decision itself is unit-tested in fabrik-verbs' gpuref.rs).
if mock_pair mock-cuda-warn --op write --test bw -s 65536 -n 200 --mem cuda --warn-below-host 100 --format json \
   && grep -q '"registration": "peer_mem"' /tmp/mock-cuda-warn.out \
   && grep -q '"ratio_to_host"' /tmp/mock-cuda-warn.out \
   && grep -q '"warning": "cuda memory ran at' /tmp/mock-cuda-warn.out \
   && grep -q 'fabrik: warning: cuda memory ran at .*--relaxed-ordering' /tmp/mock-cuda-warn.out; then
  pass mock-cuda-warning-forced "$(grep -o 'fabrik: warning: cuda memory ran at [0-9.]*x' /tmp/mock-cuda-warn.out)"
else
  fail mock-cuda-warning-forced; cat /tmp/mock-cuda-warn.out /tmp/mock-cuda-warn.srv
fi
# A driver that finds no GPU (the mock's MOCK_CUDA_INIT_FAIL): a clear error, no hang.
MOCK_CUDA_INIT_FAIL=1 timeout 60 $MOCK $F bench p2p --transport rdma --local -d rxe0 --mem cuda --timeout 5 >/tmp/mock-nogpu.out 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "cuInit failed: no CUDA-capable device" /tmp/mock-nogpu.out; then
  pass mock-cuda-no-gpu "$(grep -m1 cuInit /tmp/mock-nogpu.out)"
else fail mock-cuda-no-gpu "rc=$rc"; cat /tmp/mock-nogpu.out; fi

# --- perftest on the same device, same sizes, same GID --------------------------------------
gid=$(sed -n 's/.*GID index \([0-9]*\).*/\1/p' /tmp/bw-write.out | head -1); gid=${gid:-1}
echo "  perftest uses GID index $gid (the one fabrik chose)"
perf_pair() {
  name=$1; shift
  timeout 120 $PIN_S "$@" >/tmp/$name.srv 2>&1 &
  spid=$!
  sleep 1
  timeout 120 $PIN_C "$@" 192.0.2.1 >/tmp/$name.out 2>&1
  crc=$?
  wait $spid
  return $crc
}
ROUNDS=${rounds:-5}; LAT_ROUNDS=${lat_rounds:-7}
# Alternating rounds (fabrik, perftest, fabrik, ...): a TCG guest on a shared host is noisy, and
# alternation spreads the noise over both tools alike.
# Latency is compared in cycles: both tools stamp rdtsc (perftest: tposted[i+1] - tposted[i],
# halved; fabrik the same), and perftest converts to µs with /proc/cpuinfo's "cpu MHz" (or a
# short regression when they differ by 2 %) while fabrik measures the counter over the run.
# `ib_send_lat -C` prints cycles, turned into µs here with fabrik's rate from the same round, so
# the ratio is one of cycle counts whatever either calibration says (in CI the two agree:
# 2300.0 ticks/µs measured, "cpu MHz 2299.999").
# Two statistics over the rounds, both printed: the median (judged against the targets) and the
# best round (lowest latency, highest bandwidth; FABRIK-RATIO-INFO). Host load between rounds
# moves both, by up to 1.5x on this shared machine; over five runs neither was the steadier
# (docs/benchmarks/rdma.md).
echo "  guest cpu MHz (what perftest converts with): $(grep -m1 'cpu MHz' /proc/cpuinfo | sed 's/.*: //')"
fbw_all=; pbw_all=; flat_all=; plat_all=; rates=
cyc2us() { awk -v c="$1" -v r="$2" 'BEGIN { if (c != "" && r + 0 > 0) printf "%.2f", c / r }'; }
for r in $(seq 1 $ROUNDS); do
  fab_pair r-bw --op write --test bw -s $BW_SIZE -n $BW_ITERS \
    || { fail fabrik-write-bw-round-$r; cat /tmp/r-bw.out; }
  fbw_all="$fbw_all $(awk -v s=$BW_SIZE '$1 == s && NF >= 5 { print $4 }' /tmp/r-bw.out | head -1)"
  perf_pair pt-bw ib_write_bw -d rxe0 -x $gid -s $BW_SIZE -n $BW_ITERS -F --report_gbits \
    || { fail perftest-write-bw-round-$r; cat /tmp/pt-bw.out; }
  pbw_all="$pbw_all $(awk -v s=$BW_SIZE '$1 == s && NF >= 5 { print $4 }' /tmp/pt-bw.out | head -1)"
done
for r in $(seq 1 $LAT_ROUNDS); do
  fab_pair r-lat --op send --test lat -s $LAT_SIZE -n $LAT_RATIO_ITERS \
    || { fail fabrik-send-lat-round-$r; cat /tmp/r-lat.out; }
  flat_all="$flat_all $(awk -v s=$LAT_SIZE '$1 == s && NF >= 6 { print $5 }' /tmp/r-lat.out | head -1)"
  rate=$(sed -n 's/.*cycle counter: \([0-9.]*\) ticks.*/\1/p' /tmp/r-lat.out | head -1)
  rates="$rates $rate"
  perf_pair pt-lat ib_send_lat -d rxe0 -x $gid -s $LAT_SIZE -n $LAT_RATIO_ITERS -F -C \
    || { fail perftest-send-lat-round-$r; cat /tmp/pt-lat.out; }
  plat_all="$plat_all $(cyc2us "$(awk -v s=$LAT_SIZE '$1 == s && NF >= 6 { print $5 }' /tmp/pt-lat.out | head -1)" "$rate")"
done
sed 's/^/  /' /tmp/pt-bw.out | grep -E "bytes|^  *$BW_SIZE "
sed 's/^/  /' /tmp/pt-lat.out | grep -E "bytes|^  *$LAT_SIZE "
echo "  fabrik's measured cycle counter, ticks/usec:$rates"
echo "  rounds: fabrik write bw [$fbw_all ] perftest [$pbw_all ] Gb/s"
echo "  rounds: fabrik send lat [$flat_all ] perftest [$plat_all ] us ($LAT_RATIO_ITERS round trips each)"
median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
lowest() { echo "$@" | tr ' ' '\n' | grep . | sort -n | head -1; }
highest() { echo "$@" | tr ' ' '\n' | grep . | sort -n | tail -1; }
[ -n "$(median $pbw_all)" ] && pass perftest-write-bw || fail perftest-write-bw
[ -n "$(median $plat_all)" ] && pass perftest-send-lat || fail perftest-send-lat

ratio() { # name fabrik perftest target-op target how
  awk -v n="$1" -v f="$2" -v p="$3" -v op="$4" -v t="$5" -v how="$6" 'BEGIN {
    if (f == "" || p == "" || p + 0 == 0) { print "FABRIK-RATIO " n " missing fabrik=" f " perftest=" p; exit }
    r = f / p; ok = (op == ">=") ? (r >= t) : (r <= t)
    printf "FABRIK-RATIO %s fabrik=%s perftest=%s ratio=%.3f target=%s%s %s (%s)\n", n, f, p, r, op, t, ok ? "met" : "missed", how }'
}
ratio write_bw_avg_gbps "$(median $fbw_all)" "$(median $pbw_all)" ">=" 0.95 "median of $ROUNDS rounds"
ratio send_lat_typical_us "$(median $flat_all)" "$(median $plat_all)" "<=" 1.05 "median of $LAT_ROUNDS rounds"
echo "FABRIK-RATIO-INFO write_bw_avg_gbps best of $ROUNDS rounds: fabrik=$(highest $fbw_all) perftest=$(highest $pbw_all) ratio=$(awk -v f="$(highest $fbw_all)" -v p="$(highest $pbw_all)" 'BEGIN { if (p + 0 > 0) printf "%.3f", f / p }')"
echo "FABRIK-RATIO-INFO send_lat_typical_us best of $LAT_ROUNDS rounds: fabrik=$(lowest $flat_all) perftest=$(lowest $plat_all) ratio=$(awk -v f="$(lowest $flat_all)" -v p="$(lowest $plat_all)" 'BEGIN { if (p + 0 > 0) printf "%.3f", f / p }')"

# The short form a user types: `--iters 1000` against `ib_send_lat -n 1000`, alternating, in
# cycles as above, SHORT_RUNS runs of each tool, judged on the median run (t_typical). A
# 1,000-trip run lands near 18-20 us or near 35-50 us in this VM, for either tool, at random
# (docs/benchmarks/rdma.md). Drawn from 99 perftest runs recorded in nine boots, perftest's best
# of two runs over the best of two others exceeded 2x in 12 % of draws; the median of six over
# the median of six others, in 0.6 %.
# The target is the long form's (1.05); only a loose bound (SHORT_LAT_BOUND) fails the suite. A
# 13 ms run can also fall wholly inside a stall of the host: when a tool's median run is over
# SHORT_STALL times the long form's perftest median, the pair is reported and not judged.
SHORT_ITERS=${short_iters:-1000}; SHORT_RUNS=${short_runs:-6}; SHORT_LAT_BOUND=${short_lat_bound:-2.0}; SHORT_STALL=3
fshort=; pshort=
for r in $(seq 1 $SHORT_RUNS); do
  fab_pair s-lat --op send --test lat -s $LAT_SIZE -n $SHORT_ITERS \
    || { fail fabrik-send-lat-short-$r; cat /tmp/s-lat.out; }
  fshort="$fshort $(awk -v s=$LAT_SIZE '$1 == s && NF >= 6 { print $5 }' /tmp/s-lat.out | head -1)"
  srate=$(sed -n 's/.*cycle counter: \([0-9.]*\) ticks.*/\1/p' /tmp/s-lat.out | head -1)
  perf_pair ps-lat ib_send_lat -d rxe0 -x $gid -s $LAT_SIZE -n $SHORT_ITERS -F -C \
    || { fail perftest-send-lat-short-$r; cat /tmp/ps-lat.out; }
  pshort="$pshort $(cyc2us "$(awk -v s=$LAT_SIZE '$1 == s && NF >= 6 { print $5 }' /tmp/ps-lat.out | head -1)" "$srate")"
done
echo "  short form: fabrik send lat [$fshort ] perftest [$pshort ] us ($SHORT_ITERS round trips each)"
ratio send_lat_short_typical_us "$(median $fshort)" "$(median $pshort)" "<=" 1.05 "median of $SHORT_RUNS runs of $SHORT_ITERS trips"
echo "FABRIK-RATIO-INFO send_lat_short_typical_us best of $SHORT_RUNS runs: fabrik=$(lowest $fshort) perftest=$(lowest $pshort) ratio=$(awk -v f="$(lowest $fshort)" -v p="$(lowest $pshort)" 'BEGIN { if (p + 0 > 0) printf "%.3f", f / p }')"
short_detail="median run fabrik $(median $fshort) us, perftest $(median $pshort) us (bound ${SHORT_LAT_BOUND}x)"
if [ -z "$(median $fshort)" ] || [ -z "$(median $pshort)" ]; then
  fail send-lat-short-form "no result: $short_detail"
elif awk -v f="$(median $fshort)" -v p="$(median $pshort)" -v r="$(median $plat_all)" -v k=$SHORT_STALL \
     'BEGIN { exit !(r + 0 > 0 && (f > k * r || p > k * r)) }'; then
  pass send-lat-short-form "not judged, a host stall: $short_detail; long-form perftest median $(median $plat_all) us"
elif awk -v f="$(median $fshort)" -v p="$(median $pshort)" -v b=$SHORT_LAT_BOUND \
     'BEGIN { exit !(f + 0 > 0 && p + 0 > 0 && f / p <= b) }'; then
  pass send-lat-short-form "$short_detail"
else
  fail send-lat-short-form "$short_detail"
fi

# --- error paths: each a clear error, no hang ------------------------------------------------
expect_err() { # name pattern file
  if grep -q "$2" "$3"; then pass "$1" "$(grep -m1 "$2" "$3")"; else fail "$1"; cat "$3"; fi
}
timeout 60 $SRV --timeout 10 >/tmp/e-dev.srv 2>&1 &
spid=$!; sleep 1
timeout 60 $CLI -d mlx5_9 --timeout 10 >/tmp/e-dev.out 2>&1
rc=$?; wait $spid
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then
  expect_err error-missing-device "RDMA device .mlx5_9. not found; available: rxe0" /tmp/e-dev.out
else fail error-missing-device "rc=$rc"; fi
fab_pair e-gid --op write --test bw -s 4096 -n 100 -x 99 --timeout 10
expect_err error-wrong-gid-index "GID index 99 .*\(out of range\|is empty\)" /tmp/e-gid.out
# Peer killed mid-test: kill -9 one end during a long test. The other end must stop with an
# error naming the peer well before its data timeout (--timeout 10): the control connection's
# close is watched while the data moves. Seconds from the kill to the exit are printed, and more
# than DEAD_PEER_S (5) fails.
DEAD_PEER_S=5
now_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 100 }'; }
kill_test() { # name victim(server|client) client-args...
  name=$1; victim=$2; shift 2
  timeout 100 $SRV -d rxe0 --timeout 10 >/tmp/$name.srv 2>&1 &
  spid=$!; sleep 1
  timeout 100 $CLI -d rxe0 --timeout 10 "$@" >/tmp/$name.out 2>&1 &
  cpid=$!; sleep 4
  if [ "$victim" = server ]; then kill -9 $spid; watch_pid=$cpid; log=/tmp/$name.out
  else kill -9 $cpid; watch_pid=$spid; log=/tmp/$name.srv; fi
  k=$(now_cs)
  wait $watch_pid; rc=$?
  secs=$(since "$k" "$(now_cs)")
  wait
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qE "peer .*(closed|dropped)|peer stopped answering" $log \
     && awk -v s="$secs" -v l=$DEAD_PEER_S 'BEGIN { exit !(s <= l) }'; then
    pass $name "noticed ${secs} s after the kill: $(tail -1 $log)"
  else
    fail $name "rc=$rc after ${secs} s (limit $DEAD_PEER_S s)"; cat $log
  fi
}
kill_test error-server-killed server --op write --test bw -s 65536 -n 10000000
kill_test error-client-killed client --op send --test bw -s 65536 -n 10000000
kill_test error-server-killed-lat server --op send --test lat -s 2 -n 5000000
# Memlock too low: an unprivileged user (root has CAP_IPC_LOCK and ignores the limit).
chmod 666 /dev/infiniband/* 2>/dev/null
timeout 100 $SRV -d rxe0 --timeout 10 >/tmp/e-mem.srv 2>&1 &
spid=$!; sleep 1
timeout 60 su nobody -s /bin/sh -c \
  "ulimit -l 64; exec $CLI -d rxe0 --op write --test bw -s 1048576 -n 10 --timeout 10" >/tmp/e-mem.out 2>&1
wait $spid
expect_err error-memlock "ulimit -l" /tmp/e-mem.out
# No libibverbs at all: the error names the library.
mkdir -p /tmp/hidden
libs=$(find /lib /usr/lib /lib64 -name 'libibverbs.so*' 2>/dev/null)
for l in $libs; do mkdir -p /tmp/hidden$(dirname $l); mv $l /tmp/hidden$l; done
timeout 20 $CLI >/tmp/e-lib.out 2>&1
for l in $libs; do mv /tmp/hidden$l $l; done
expect_err error-no-libibverbs "cannot load libibverbs.so.1" /tmp/e-lib.out

sh /fabrik/vm-tests-collective.sh  # bench collective --backend rdma, cluster matrix --transport rdma
sh /fabrik/vm-tests-fix.sh  # fabrik fix: MTU, memlock and a module applied, checked, benchmarked, undone

# --- a real snapshot of this RDMA machine, printed base64 between markers for run.sh ----------
hostname softroce-vm
if timeout 120 $F snapshot -o /tmp/snap.tar.gz --timeout 10 >/tmp/snap.out 2>&1; then
  pass fabrik-snapshot "$(du -k /tmp/snap.tar.gz | cut -f1) KiB"
  echo FABRIK-SNAPSHOT-BEGIN
  base64 /tmp/snap.tar.gz
  echo FABRIK-SNAPSHOT-END
else
  fail fabrik-snapshot; cat /tmp/snap.out
fi
