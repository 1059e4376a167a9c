# Runs inside the Soft-RoCE VM of testbed/softroce (busybox sh), chosen by fab.script=vm-top.sh:
# rxe0 on a veth, `fabrik top --format json` sampling every second while ib_write_bw runs over
# it. Prints DUMP-before/DUMP-after lines (every file the monitor reads), FABRIK-TOP lines
# (NDJSON) and FABRIK-TEST lines for run.sh.
IP=/usr/sbin/ip
$IP link set lo up
ulimit -l unlimited
$IP link add va type veth peer name vb
$IP addr add 192.0.2.1/24 dev va; $IP link set va up; $IP link set vb up
if rdma link add rxe0 type rxe netdev va; then echo "FABRIK-TEST PASS rxe-link"; else echo "FABRIK-TEST FAIL rxe-link"; fi
# One `DUMP-<tag> path<TAB>content` line per file, so the host can rebuild a real before/after
# fixture pair.
dump() {
  echo "DUMP-$1 fabrik/captured_at	$(date +%s)"
  for f in /sys/class/infiniband/rxe0/ports/1/state /sys/class/infiniband/rxe0/ports/1/phys_state \
           /sys/class/infiniband/rxe0/ports/1/rate /sys/class/infiniband/rxe0/ports/1/link_layer \
           /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0 /sys/class/infiniband/rxe0/ports/1/hw_counters/* \
           /sys/class/net/va/operstate /sys/class/net/va/statistics/*; do
    echo "DUMP-$1 ${f#/}	$(cat $f 2>/dev/null)"
  done
}
dump before
/usr/bin/fabrik top --interval 1s --count 12 --format json > /tmp/top.ndjson 2>/tmp/top.err &
top=$!
sleep 1
BW="ib_write_bw -d rxe0 -x 1 -s 65536 -n 3000 -F --report_gbits"
timeout 30 $BW >/tmp/s.txt 2>&1 &
srv=$!
sleep 1
if timeout 30 $BW 192.0.2.1; then echo "FABRIK-TEST PASS ib_write_bw"; else echo "FABRIK-TEST FAIL ib_write_bw"; fi
wait $srv
wait $top; trc=$?
dump after
while read -r line; do echo "FABRIK-TOP $line"; done < /tmp/top.ndjson
if [ $trc = 0 ] && [ -s /tmp/top.ndjson ]; then echo "FABRIK-TEST PASS fabrik-top"; else echo "FABRIK-TEST FAIL fabrik-top exit $trc"; cat /tmp/top.err; fi
/usr/bin/fabrik top --interval 1s --once
