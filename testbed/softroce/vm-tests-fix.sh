# `fabrik fix` on a real RDMA device, inside the Soft-RoCE VM (busybox sh). Run by vm-tests.sh
# (on the rxe0 it made) or alone with the kernel argument fab.script=vm-tests-fix.sh.
# Three faults as they happen on real nodes: the RoCE netdev at MTU 1500 (FAB-MTU-001), a
# locked-memory limit of 64 KiB for a user's login (FAB-RDMA-003) and a module the expectations
# want that is not loaded (FAB-EXP-006, loaded by kmod's modprobe with its dependencies). `fabrik fix --apply` makes
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

# --- a module: kmod's modprobe on the VM's /lib/modules tree (build.sh) ----------------------
# No rule of fabrik can see ib_uverbs missing here: on this kernel every driver that gives user
# space verbs (rdma_rxe, mlx5_ib, ...) depends on it, so it cannot be unloaded under rxe0.
echo "FIX-NOTE rmmod ib_uverbs under rxe0: $(/usr/sbin/rmmod ib_uverbs 2>&1 | head -1)"
# The module fault fabrik finds on a live node is the expectations' `[host] peer_memory`
# (FAB-EXP-006): the VM has no GPU and no peer-memory module, so the file names rdma_ucm, the
# RDMA CM's user-space device that `ib_write_bw -R` opens, which has dependencies of its own
# (rdma_cm, ib_cm, iw_cm, configfs) that are not loaded either, as nvidia_peermem has nvidia.
# Nothing opens the RDMA CM before the fix: librdmacm has the kernel load rdma_ucm on demand
# (ib_core's request_module of its rdma-client alias, run through /sbin/modprobe).
ulimit -l unlimited
printf '[host]\npeer_memory = "rdma_ucm"\n' >/tmp/fx-expect.toml
mods() { for m in rdma_ucm rdma_cm ib_cm iw_cm configfs; do [ -d /sys/module/$m ] && printf '%s ' $m; done; }
# perftest over rxe0 with the RDMA CM (-R) connecting the queue pairs; 0 when it ran.
perftest_cm() {
  timeout 60 ib_write_bw -d rxe0 -R -s 65536 -n 100 -F --report_gbits >/tmp/fx-cm.srv 2>&1 &
  cpid=$!; sleep 1
  timeout 60 ib_write_bw -d rxe0 -R -s 65536 -n 100 -F --report_gbits 192.0.2.1 >/tmp/fx-cm.out 2>&1
  crc=$?; wait $cpid
  [ $crc = 0 ] && grep -qE '^ *65536 +100 ' /tmp/fx-cm.out
}
$F doctor --expect /tmp/fx-expect.toml --format json >/tmp/fx-m0.json 2>&1
echo "FIX-MODULE-BEFORE loaded=[$(mods)] rdma_cm_dev=$([ -e /dev/infiniband/rdma_cm ] && echo yes || echo no) modules_load_d=$(ls /etc/modules-load.d | wc -l)"
if has FAB-EXP-006 /tmp/fx-m0.json && [ ! -d /sys/module/rdma_ucm ] && [ ! -d /sys/module/rdma_cm ]; then
  pass fix-module-fault-seen "FAB-EXP-006: no rdma_ucm in /proc/modules, nor rdma_cm"
else
  fail fix-module-fault-seen "loaded [$(mods)]"; cat /tmp/fx-m0.json
fi
$F fix --expect /tmp/fx-expect.toml --rule FAB-EXP-006 --format script >/tmp/fx-m.sh 2>&1
if grep -q "modprobe" /tmp/fx-m.sh && grep -q "modules-load.d/fabrik-rdma_ucm.conf" /tmp/fx-m.sh; then
  pass fix-module-plan "$(grep -m1 'modprobe' /tmp/fx-m.sh | sed 's/^ *//')"
else
  fail fix-module-plan; cat /tmp/fx-m.sh
fi
# A safe step: no --drained.
$F fix --apply --expect /tmp/fx-expect.toml --rule FAB-EXP-006 --record /tmp/fx-mundo.json >/tmp/fx-ma.out 2>&1
marc=$?
sed 's/^/  /' /tmp/fx-ma.out
$F doctor --expect /tmp/fx-expect.toml --format json >/tmp/fx-m1.json 2>&1
echo "FIX-MODULE-AFTER loaded=[$(mods)] rdma_cm_dev=$([ -e /dev/infiniband/rdma_cm ] && echo yes || echo no) modules_load_d=$(cat /etc/modules-load.d/fabrik-rdma_ucm.conf 2>/dev/null | grep -v '^#')"
if [ $marc = 0 ] && grep -q "FAB-EXP-006.*fixed" /tmp/fx-ma.out && ! has FAB-EXP-006 /tmp/fx-m1.json \
   && [ -d /sys/module/rdma_ucm ] && [ -d /sys/module/rdma_cm ] && [ -e /dev/infiniband/rdma_cm ] \
   && grep -qx rdma_ucm /etc/modules-load.d/fabrik-rdma_ucm.conf; then
  pass fix-module-apply "exit $marc, rdma_ucm and its dependencies loaded, /etc/modules-load.d/fabrik-rdma_ucm.conf written, finding gone"
else
  fail fix-module-apply "exit $marc"; cat /tmp/fx-m1.json /tmp/fx-mundo.json
fi
if perftest_cm; then
  pass fix-module-perftest-after "ib_write_bw -R: $(grep -E '^ *65536 ' /tmp/fx-cm.out | head -1)"
else
  fail fix-module-perftest-after; cat /tmp/fx-cm.out /tmp/fx-cm.srv
fi
$F bench p2p --transport rdma --server --once -d rxe0 --timeout 30 >/tmp/fx-mb.srv 2>&1 &
spid=$!; sleep 1
$F bench p2p --transport rdma --client 192.0.2.1 -d rxe0 --op write --test bw -s 1048576 -n 50 --verify --timeout 30 >/tmp/fx-mb.out 2>&1
frc=$?; wait $spid
if [ $frc = 0 ] && grep -q "verify: payloads checked" /tmp/fx-mb.out; then
  pass fix-module-fabrik-bench-after "$(grep -E '^ *1048576 ' /tmp/fx-mb.out | head -1)"
else
  fail fix-module-fabrik-bench-after "rc=$frc"; cat /tmp/fx-mb.out /tmp/fx-mb.srv
fi
$F fix --undo /tmp/fx-mundo.json >/tmp/fx-mu.out 2>&1
murc=$?
sed 's/^/  /' /tmp/fx-mu.out
$F doctor --expect /tmp/fx-expect.toml --format json >/tmp/fx-m2.json 2>&1
echo "FIX-MODULE-UNDONE loaded=[$(mods)] rdma_cm_dev=$([ -e /dev/infiniband/rdma_cm ] && echo yes || echo no) modules_load_d=$(ls /etc/modules-load.d | wc -l)"
# `modprobe -r` removes the module and those of its dependencies it finds unused on its way
# (kmod 30 left ib_cm, iw_cm and configfs, unused): the record holds rdma_ucm's own state.
if [ $murc = 0 ] && [ ! -d /sys/module/rdma_ucm ] && [ ! -d /sys/module/rdma_cm ] \
   && [ ! -e /etc/modules-load.d/fabrik-rdma_ucm.conf ] && has FAB-EXP-006 /tmp/fx-m2.json \
   && grep -q '"status": "undone"' /tmp/fx-mundo.json; then
  pass fix-module-undo "rdma_ucm and rdma_cm unloaded (still loaded: [$(mods)]), modules-load.d file removed, finding back"
else
  fail fix-module-undo "exit $murc, loaded [$(mods)]"; cat /tmp/fx-mu.out /tmp/fx-mundo.json
fi
