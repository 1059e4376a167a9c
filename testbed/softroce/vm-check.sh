# Runs inside the Soft-RoCE VM (busybox sh) as fab.script=vm-check.sh: `fabrik check` on the
# VM's live root (a real kernel with rdma_rxe, real sysfs, DCB over netlink, ibv_devinfo run
# within the budget), timed, then `fabrik snapshot` and the check of that snapshot, which must
# give the same findings. Prints FABRIK-TEST and FABRIK-CHECK-TIME lines for run.sh.
IP=/usr/sbin/ip
F=/usr/bin/fabrik
pass() { echo "FABRIK-TEST PASS $*"; }
fail() { echo "FABRIK-TEST FAIL $*"; }
$IP link set lo up
ulimit -l unlimited
$IP link add va type veth peer name vb
$IP addr add 192.0.2.1/24 dev va; $IP link set va up; $IP link set vb up
rdma link add rxe0 type rxe netdev va || fail rxe-link
sleep 1
for i in 1 2 3 4 5; do
  $F check --root / --budget 20s --format json >/tmp/check.json 2>/tmp/check.err; rc=$?
  echo "FABRIK-CHECK-TIME live run=$i exit=$rc elapsed_s=$(sed -n 's/.*"elapsed_s": *\([0-9.]*\).*/\1/p' /tmp/check.json | head -1)"
done
$F check --root / --budget 20s | sed 's/^/  /'
grep -q '"rule"' /tmp/check.json && pass live-check-ran || fail live-check-ran "$(head -c 300 /tmp/check.err)"
$F snapshot -o /tmp/snap >/tmp/snap.out 2>&1 && pass snapshot || fail snapshot "$(head -c 300 /tmp/snap.out)"
sed 's/^/  /' /tmp/snap.out | head -20
ls /tmp/snap/fabrik/dcb /tmp/snap/fabrik/cmd 2>&1 | sed 's/^/  /'
for i in 1 2 3; do
  $F check --root /tmp/snap --budget 20s --format json >/tmp/snapcheck.json 2>/dev/null; rc=$?
  echo "FABRIK-CHECK-TIME snapshot run=$i exit=$rc elapsed_s=$(sed -n 's/.*"elapsed_s": *\([0-9.]*\).*/\1/p' /tmp/snapcheck.json | head -1)"
done
rules() { grep -o '"rule": *"[A-Z0-9-]*"' "$1" | sort | tr -d ' \n'; }
if [ "$(rules /tmp/check.json)" = "$(rules /tmp/snapcheck.json)" ]; then
  pass same-findings "$(rules /tmp/check.json)"
else
  fail same-findings "live $(rules /tmp/check.json) snapshot $(rules /tmp/snapcheck.json)"
fi
