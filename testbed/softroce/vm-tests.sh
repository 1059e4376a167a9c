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

# server_then_client NAME SERVER_ARGS -- CLIENT_ARGS: fabrik server in the background, client in
# the foreground; client output in /tmp/NAME.out, server's in /tmp/NAME.srv.
fab_pair() {
  name=$1; shift
  timeout 120 $SRV -d rxe0 "$@" >/tmp/$name.srv 2>&1 &
  spid=$!
  sleep 1
  timeout 120 $CLI -d rxe0 "$@" >/tmp/$name.out 2>&1
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

# --- perftest on the same device, same sizes, same GID --------------------------------------
gid=$(sed -n 's/.*GID index \([0-9]*\).*/\1/p' /tmp/bw-write.out | head -1); gid=${gid:-1}
echo "  perftest uses GID index $gid (the one fabrik chose)"
perf_pair() {
  name=$1; shift
  timeout 120 "$@" >/tmp/$name.srv 2>&1 &
  spid=$!
  sleep 1
  timeout 120 "$@" 192.0.2.1 >/tmp/$name.out 2>&1
  crc=$?
  wait $spid
  return $crc
}
ROUNDS=${rounds:-3}
# Alternating rounds, medians: a TCG guest on a shared host is noisy, and alternation spreads
# the noise over both tools alike.
fbw_all=; pbw_all=; flat_all=; plat_all=
for r in $(seq 1 $ROUNDS); do
  fab_pair r-bw --op write --test bw -s $BW_SIZE -n $BW_ITERS \
    || { fail fabrik-write-bw-round-$r; cat /tmp/r-bw.out; }
  fbw_all="$fbw_all $(awk -v s=$BW_SIZE '$1 == s && NF >= 5 { print $4 }' /tmp/r-bw.out | head -1)"
  perf_pair pt-bw ib_write_bw -d rxe0 -x $gid -s $BW_SIZE -n $BW_ITERS -F --report_gbits \
    || { fail perftest-write-bw-round-$r; cat /tmp/pt-bw.out; }
  pbw_all="$pbw_all $(awk -v s=$BW_SIZE '$1 == s && NF >= 5 { print $4 }' /tmp/pt-bw.out | head -1)"
  fab_pair r-lat --op send --test lat -s $LAT_SIZE -n $LAT_ITERS \
    || { fail fabrik-send-lat-round-$r; cat /tmp/r-lat.out; }
  flat_all="$flat_all $(awk -v s=$LAT_SIZE '$1 == s && NF >= 6 { print $5 }' /tmp/r-lat.out | head -1)"
  perf_pair pt-lat ib_send_lat -d rxe0 -x $gid -s $LAT_SIZE -n $LAT_ITERS -F \
    || { fail perftest-send-lat-round-$r; cat /tmp/pt-lat.out; }
  plat_all="$plat_all $(awk -v s=$LAT_SIZE '$1 == s && NF >= 6 { print $5 }' /tmp/pt-lat.out | head -1)"
done
sed 's/^/  /' /tmp/pt-bw.out | grep -E "bytes|^  *$BW_SIZE "
sed 's/^/  /' /tmp/pt-lat.out | grep -E "bytes|^  *$LAT_SIZE "
echo "  rounds: fabrik write bw [$fbw_all ] perftest [$pbw_all ] Gb/s; fabrik send lat [$flat_all ] perftest [$plat_all ] us"
median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
[ -n "$(median $pbw_all)" ] && pass perftest-write-bw || fail perftest-write-bw
[ -n "$(median $plat_all)" ] && pass perftest-send-lat || fail perftest-send-lat

ratio() { # name fabrik perftest target-op target
  awk -v n="$1" -v f="$2" -v p="$3" -v op="$4" -v t="$5" -v k="$ROUNDS" 'BEGIN {
    if (f == "" || p == "" || p + 0 == 0) { print "FABRIK-RATIO " n " missing fabrik=" f " perftest=" p; exit }
    r = f / p; ok = (op == ">=") ? (r >= t) : (r <= t)
    printf "FABRIK-RATIO %s fabrik=%s perftest=%s ratio=%.3f target=%s%s %s (median of %d)\n", n, f, p, r, op, t, ok ? "met" : "missed", k }'
}
ratio write_bw_avg_gbps "$(median $fbw_all)" "$(median $pbw_all)" ">=" 0.95
ratio send_lat_typical_us "$(median $flat_all)" "$(median $plat_all)" "<=" 1.05

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
# Peer killed mid-test: kill -9 the server during a long write test; the client must stop with
# an error within its timeouts.
timeout 120 $SRV -d rxe0 >/tmp/e-kill.srv 2>&1 &
spid=$!; sleep 1
( sleep 4; kill -9 $spid ) &
t0=$(date +%s)
timeout 100 $CLI -d rxe0 --op write --test bw -s 65536 -n 10000000 --timeout 10 >/tmp/e-kill.out 2>&1
rc=$?; t1=$(date +%s)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qE "peer|retry|closed" /tmp/e-kill.out; then
  pass error-server-killed "after $((t1 - t0)) s: $(tail -1 /tmp/e-kill.out)"
else fail error-server-killed "rc=$rc"; cat /tmp/e-kill.out; fi
wait
# Client killed mid-test: the server must notice and exit.
timeout 100 $SRV -d rxe0 --timeout 10 >/tmp/e-ckill.srv 2>&1 &
spid=$!; sleep 1
timeout 100 $CLI -d rxe0 --op send --test bw -s 65536 -n 10000000 >/tmp/e-ckill.out 2>&1 &
cpid=$!; sleep 4; kill -9 $cpid
wait $spid; rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qE "closed|peer|timed out" /tmp/e-ckill.srv; then
  pass error-client-killed "$(tail -1 /tmp/e-ckill.srv)"
else fail error-client-killed "rc=$rc"; cat /tmp/e-ckill.srv; fi
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
