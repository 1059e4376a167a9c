# The Soft-RoCE VM's part of the fault campaign (busybox sh, run by init with
# fab.script=vm-faults.sh; crates/fabrik-testbed/src/campaign/vm.rs boots it and judges). Each
# case injects one fault for real on the VM's rxe device or its veth, runs fabrik as an operator
# would, and prints its JSON output between markers:
#   FAULT-CASE <group>|<class>|<expected, space-separated>|<start s>|<end s>
#   FAULT-B64 <base64 line>...
#   FAULT-END
# Expected culprits: host:NAME, port:NAME:DEV:PORT, link:A:B. A group's healthy run is the
# baseline its fault runs are judged against (what the VM always reports names nobody). The fault's values come from the
# kernel command line (fab.gid=N fab.memlock=KIB fab.mtu=BYTES), which the campaign draws.
IP=/usr/sbin/ip
F=/usr/bin/fabrik
export FABRIK_TOKEN=fault-campaign
gid=5; memlock=64; mtu=4200
for kv in $(cat /proc/cmdline); do
  case $kv in fab.gid=*|fab.memlock=*|fab.mtu=*) eval "${kv#fab.}";; esac
done
now() { awk '{ printf "%.2f", $1 }' /proc/uptime; }
emit() {
  echo "FAULT-CASE $1|$2|$3|$4|$5"
  base64 /tmp/case.out | sed 's/^/FAULT-B64 /'
  echo "FAULT-END"
}
# run GROUP CLASS EXPECTED CMD...: runs CMD with its stdout kept, timed, and prints the case.
run() {
  group=$1; class=$2; expected=$3; shift 3
  t0=$(now)
  "$@" >/tmp/case.out 2>/tmp/case.err
  t1=$(now)
  sed 's/^/  stderr: /' /tmp/case.err | tail -5
  emit "$group" "$class" "$expected" "$t0" "$t1"
}

$IP link set lo up
ulimit -l unlimited
hostname vm
$IP link add va type veth peer name vb
$IP addr add 192.0.2.1/24 dev va; $IP link set va up; $IP link set vb up
rdma link add rxe0 type rxe netdev va || echo "FAULT-SETUP-FAIL rdma link add rxe0"
sleep 1

# --- one node: fabrik doctor on the VM --------------------------------------------------------
run doctor "healthy" "" $F doctor --format json
$IP link set va down; sleep 1
run doctor "port down" "port:vm:rxe0:1" $F doctor --format json
$IP link set va up; sleep 2
run doctor "healthy" "" $F doctor --format json
run doctor "memlock limit" "host:vm" sh -c "ulimit -l $memlock; exec $F doctor --format json"
run env "healthy" "" env NCCL_IB_GID_INDEX=1 $F doctor --env --format json
run env "wrong GID index" "port:vm:rxe0:1" env NCCL_IB_GID_INDEX="$gid" $F doctor --env --format json

# --- two ends of the veth as two hosts: vb moves into a namespace ------------------------------
if $IP netns add peer 2>/dev/null; then
  $IP link set vb netns peer
  $IP -n peer link set lo up
  $IP -n peer addr add 192.0.2.2/24 dev vb
  $IP -n peer link set vb up
  # ranks LINE: rank 0 here on va, rank 1 in the namespace on vb; rank 0's output is the case's.
  ranks() {
    port=$((29700 + $(awk '{ printf "%d", $1 }' /proc/uptime) % 200))
    RANK=1 WORLD_SIZE=2 MASTER_ADDR=192.0.2.1 MASTER_PORT=$port $IP netns exec peer \
      $F "$@" --name node1 --timeout 20 >/tmp/r1.out 2>/tmp/r1.err &
    RANK=0 WORLD_SIZE=2 MASTER_ADDR=192.0.2.1 MASTER_PORT=$port \
      $F "$@" --name node0 --timeout 20
    wait
  }
  run matrix "healthy" "" ranks cluster matrix --format json --size 256K --iters 2
  run cluster-doctor "healthy" "" ranks cluster doctor --format json
  $IP -n peer link set vb mtu "$mtu"
  run matrix "MTU mismatch between the ends" "link:node0:node1" ranks cluster matrix --format json --size 256K --iters 2
  run cluster-doctor "MTU mismatch between the ends" "host:node0 host:node1" ranks cluster doctor --format json
  $IP -n peer link set vb mtu 1500
else
  echo "FAULT-SKIP two-ends cases: ip netns add failed"
fi
echo "FAULT-DONE"
