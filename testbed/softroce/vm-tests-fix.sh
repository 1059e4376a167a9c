# `fabrik fix` on a real RDMA device, inside the Soft-RoCE VM (busybox sh). Run by vm-tests.sh
# (on the rxe0 it made) or alone with the kernel argument fab.script=vm-tests-fix.sh.
# Two faults as they happen on real nodes: the RoCE netdev at MTU 1500 (FAB-MTU-001) and a
# locked-memory limit of 64 KiB for a user's login (FAB-RDMA-003). `fabrik fix --apply` makes
# the changes; the doctor runs again, in a new PAM session for the limit (runuser with
# pam_limits, as a login reads limits.d); perftest and fabrik's RDMA benchmark run as that user;
# `fabrik fix --undo` puts back what was there and the doctor sees the faults again.
# Prints FABRIK-TEST PASS|FAIL lines, and the before/after for docs/fix.md.
IP=/usr/sbin/ip
F=/usr/bin/fabrik
export FABRIK_TOKEN=softroce-ci-token
pass() { echo "FABRIK-TEST PASS $*"; }
fail() { echo "FABRIK-TEST FAIL $*"; }
has() { grep -q "\"rule\": \"$1\"" "$2"; }
# A user's session: the shell's limit is 64 KiB (what the fault is), then a login through PAM.
as_user() { (ulimit -l 64; runuser -u nobody -- "$@"); }

if [ ! -e /sys/class/infiniband/rxe0 ]; then
  $IP link set lo up
  $IP link add va type veth peer name vb
  $IP addr add 192.0.2.1/24 dev va; $IP link set va up; $IP link set vb up
  rdma link add rxe0 type rxe netdev va || fail fix-rxe-link
  sleep 1
fi
chmod 666 /dev/infiniband/* 2>/dev/null
# The node's own shells carry the small limit too (vm-tests.sh raised its own): fabrik fix sees
# the fault where it runs, and every later login gets its limit from PAM.
ulimit -l 64
nd=$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1 2>/dev/null || echo va)
mtu0=$(cat /sys/class/net/$nd/mtu)
$IP link set dev "$nd" mtu 1500
hostname softroce-vm

# --- before ---------------------------------------------------------------------------------
$F doctor --format json >/tmp/fx-d0.json 2>&1
as_user $F doctor --format json >/tmp/fx-u0.json 2>&1
if has FAB-MTU-001 /tmp/fx-d0.json && has FAB-RDMA-003 /tmp/fx-u0.json; then
  pass fix-faults-seen "MTU $(cat /sys/class/net/$nd/mtu) on $nd; user memlock $(as_user sh -c 'ulimit -l') KiB"
else
  fail fix-faults-seen; cat /tmp/fx-d0.json /tmp/fx-u0.json
fi

# --- the plan, then --apply -----------------------------------------------------------------
$F fix --format json >/tmp/fx-plan.json 2>&1
if grep -q '"kind": "mtu"' /tmp/fx-plan.json && grep -q '"kind": "memlock"' /tmp/fx-plan.json \
   && grep -q '"previous": "1500"' /tmp/fx-plan.json; then
  pass fix-plan "MTU and memlock steps, previous MTU 1500"
else
  fail fix-plan; cat /tmp/fx-plan.json
fi
# Without --drained the MTU step is left alone: it interrupts traffic.
$F fix --apply --rule FAB-MTU-001 --record /tmp/fx-undo0.json >/tmp/fx-a0.out 2>&1
if grep -q "skipped, needs a drained node" /tmp/fx-a0.out && [ "$(cat /sys/class/net/$nd/mtu)" = 1500 ]; then
  pass fix-drain-guard
else
  fail fix-drain-guard; cat /tmp/fx-a0.out
fi
echo "FIX-BEFORE mtu=$(cat /sys/class/net/$nd/mtu) user_memlock_kib=$(as_user sh -c 'ulimit -l') limits_d=$(ls /etc/security/limits.d | wc -l)"
$F fix --apply --drained --record /tmp/fx-undo.json >/tmp/fx-a1.out 2>&1
arc=$?
sed 's/^/  /' /tmp/fx-a1.out
echo "FIX-AFTER mtu=$(cat /sys/class/net/$nd/mtu) user_memlock=$(as_user sh -c 'ulimit -l') limits_d=$(ls /etc/security/limits.d | wc -l)"
if [ $arc = 0 ] && [ "$(cat /sys/class/net/$nd/mtu)" = 9000 ] && grep -q "FAB-MTU-001.*fixed" /tmp/fx-a1.out \
   && [ -f /etc/security/limits.d/90-fabrik-memlock.conf ] && [ -f /tmp/fx-undo.json ]; then
  pass fix-apply "exit $arc, MTU 9000, limits.d written, undo record kept"
else
  fail fix-apply "exit $arc"; cat /tmp/fx-undo.json
fi

# --- the findings are gone: the doctor as root, and as the user in a new PAM session ----------
$F doctor --format json >/tmp/fx-d1.json 2>&1
as_user $F doctor --format json >/tmp/fx-u1.json 2>&1
if ! has FAB-MTU-001 /tmp/fx-d1.json && ! has FAB-RDMA-003 /tmp/fx-u1.json; then
  pass fix-findings-gone "user memlock in a new session: $(as_user sh -c 'ulimit -l')"
else
  fail fix-findings-gone; cat /tmp/fx-d1.json /tmp/fx-u1.json
fi

# --- and the benchmarks run, as the user -----------------------------------------------------
as_user ib_write_bw -d rxe0 -x 1 -s 1048576 -n 50 -F --report_gbits >/tmp/fx-pt.srv 2>&1 &
spid=$!; sleep 1
as_user ib_write_bw -d rxe0 -x 1 -s 1048576 -n 50 -F --report_gbits 192.0.2.1 >/tmp/fx-pt.out 2>&1
prc=$?; wait $spid
if [ $prc = 0 ] && grep -qE '^ *1048576 +50 ' /tmp/fx-pt.out; then
  pass fix-perftest-after "$(grep -E '^ *1048576 ' /tmp/fx-pt.out | head -1)"
else
  fail fix-perftest-after "rc=$prc"; cat /tmp/fx-pt.out /tmp/fx-pt.srv
fi
as_user env FABRIK_TOKEN=$FABRIK_TOKEN $F bench p2p --transport rdma --server --once -d rxe0 --timeout 30 >/tmp/fx-fb.srv 2>&1 &
spid=$!; sleep 1
as_user env FABRIK_TOKEN=$FABRIK_TOKEN $F bench p2p --transport rdma --client 192.0.2.1 -d rxe0 --op write --test bw -s 1048576 -n 50 --verify --timeout 30 >/tmp/fx-fb.out 2>&1
frc=$?; wait $spid
if [ $frc = 0 ] && grep -q "verify: payloads checked" /tmp/fx-fb.out; then
  pass fix-fabrik-bench-after "$(grep -E '^ *1048576 ' /tmp/fx-fb.out | head -1)"
else
  fail fix-fabrik-bench-after "rc=$frc"; cat /tmp/fx-fb.out /tmp/fx-fb.srv
fi

# --- undo: the values recorded come back, and so do the findings --------------------------
$F fix --undo /tmp/fx-undo.json >/tmp/fx-u.out 2>&1
urc=$?
sed 's/^/  /' /tmp/fx-u.out
$F doctor --format json >/tmp/fx-d2.json 2>&1
as_user $F doctor --format json >/tmp/fx-u2.json 2>&1
echo "FIX-UNDONE mtu=$(cat /sys/class/net/$nd/mtu) user_memlock_kib=$(as_user sh -c 'ulimit -l') limits_d=$(ls /etc/security/limits.d | wc -l)"
if [ $urc = 0 ] && [ "$(cat /sys/class/net/$nd/mtu)" = 1500 ] && [ ! -e /etc/security/limits.d/90-fabrik-memlock.conf ] \
   && has FAB-MTU-001 /tmp/fx-d2.json && has FAB-RDMA-003 /tmp/fx-u2.json && grep -q '"status": "undone"' /tmp/fx-undo.json; then
  pass fix-undo "MTU 1500 again, limits.d file removed, both findings back"
else
  fail fix-undo "exit $urc"; cat /tmp/fx-u.out
fi
$IP link set dev "$nd" mtu "$mtu0"
