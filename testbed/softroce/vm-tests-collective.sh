# Runs inside the Soft-RoCE VM, called by vm-tests.sh once rxe0 is up (on veth `va`,
# 192.0.2.1): the `rdma` backend of `bench collective` and `cluster matrix --transport rdma`,
# ranks started with --local on this one device. Same line protocol as vm-tests.sh:
#   FABRIK-TEST PASS|FAIL <name> [detail]
#   FABRIK-COLL <backend> all_reduce <bytes> time_us=<us> busbw_MBps=<MB/s>  (rdma vs tcp, 4 ranks)
F=/usr/bin/fabrik
export FABRIK_TOKEN=${FABRIK_TOKEN:-softroce-ci-token}
pass() { echo "FABRIK-TEST PASS $*"; }
fail() { echo "FABRIK-TEST FAIL $*"; }
t_start=$(date +%s)

# Every collective over RDMA on 4 local ranks, verified, 1K, 64K and 4M.
for op in all_reduce all_gather reduce_scatter broadcast reduce alltoall; do
  out=/tmp/coll-$op.out
  if timeout 150 $F bench collective $op --backend rdma --device rxe0 --local 4 \
       -b 1K -e 4M -f 64 -n 1 -w 0 -c 1 -r 1 --timeout 30 >$out 2>&1 \
     && grep -q 'Out of bounds values *: 0 OK' $out && grep -q 'rdma rxe0' $out; then
    rows=$(grep -cE '^ +[0-9]+ ' $out)
    if [ "$rows" -eq 3 ]; then
      pass coll-rdma-$op "$rows sizes 1K..4M verified, #wrong 0, $(grep 'Avg bus bandwidth' $out | tr -s ' ')"
    else
      fail coll-rdma-$op "$rows rows, want 3"; cat $out
    fi
  else
    fail coll-rdma-$op; cat $out
  fi
done
sed 's/^/  /' /tmp/coll-all_reduce.out | grep -vE '^  #  Rank'

# rdma vs tcp backend, same run, same sizes: all_reduce on 4 ranks.
for be in rdma tcp; do
  timeout 120 $F bench collective all_reduce --backend $be --device rxe0 --local 4 \
    -b 1K -e 4M -f 64 -n 1 -w 1 -c 0 --timeout 30 >/tmp/cmp-$be.out 2>&1 \
    || { fail coll-compare-$be; cat /tmp/cmp-$be.out; }
  # busbw from the time (the table rounds GB/s to 2 decimals): bytes/us x 2(n-1)/n, in MB/s.
  awk -v be=$be '$1 ~ /^[0-9]+$/ && NF >= 10 && $6 > 0 {
    printf "FABRIK-COLL %s all_reduce %s time_us=%s busbw_MBps=%.2f\n", be, $1, $6, $1 / $6 * 1.5 }' /tmp/cmp-$be.out
done

# The pair matrix over RDMA on 3 local ranks (rounds of disjoint pairs).
timeout 120 $F cluster matrix --transport rdma --device rxe0 --local 3 --size 1M --iters 2 \
  --timeout 30 --format json >/tmp/matrix.out 2>&1
mrc=$?
# Count the measured links by their `"round":` key: `"src":` also appears in analysis.slow_links.
# Only the first pass's: when a link is flagged, the second pass's re-measured links follow under
# "isolation", which comes after the matrix's own links.
links=$(sed '/"isolation"/,$d' /tmp/matrix.out | grep -c '"round":')
# Exit 1 only says a link was flagged slow (noise on a shared TCG guest); 0 or 1 with all six
# directed links measured over rdma is a pass.
if [ "$mrc" -le 1 ] && [ "$links" -eq 6 ] && grep -q '"transport": "rdma"' /tmp/matrix.out; then
  pass matrix-rdma "3 ranks, $links links, $(grep -m1 '"median_gbps"' /tmp/matrix.out | tr -d ' ,')"
else
  fail matrix-rdma "rc=$mrc links=$links"; cat /tmp/matrix.out
fi

# A rank killed mid-run: the others stop with an error naming it, within the timeout.
port=29611
for r in 0 1 2; do
  RANK=$r WORLD_SIZE=3 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout 100 $F bench collective all_reduce --backend rdma --device rxe0 -b 1M -e 1M \
    -n 100000 -w 0 -c 0 --timeout 10 --name node$r >/tmp/kill-$r.out 2>&1 &
  eval pid$r=$!
done
for _ in $(seq 300); do grep -qE '^ +[0-9]+ |Rank  2' /tmp/kill-0.out 2>/dev/null && break; sleep 0.1; done
sleep 2
kill -9 $pid2
t0=$(date +%s)
wait $pid0; rc=$?
t1=$(date +%s)
wait $pid1
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'rank 2' /tmp/kill-0.out; then
  pass coll-rdma-rank-killed "rank 0 failed after $((t1 - t0)) s (timeout 10 s): $(grep -m1 'rank 2' /tmp/kill-0.out | cut -c1-300)"
else
  fail coll-rdma-rank-killed "rc=$rc after $((t1 - t0)) s"; cat /tmp/kill-0.out /tmp/kill-1.out
fi

# --backend auto picks rdma here, where every rank has an ACTIVE device.
if timeout 60 $F bench collective all_gather --backend auto --local 2 -b 4K -e 4K -n 1 -w 0 -c 1 \
     --timeout 20 --format json >/tmp/coll-auto.out 2>&1 \
   && grep -q '"backend": "rdma"' /tmp/coll-auto.out && grep -q '"wrong": 0' /tmp/coll-auto.out; then
  pass coll-auto-picks-rdma
else
  fail coll-auto-picks-rdma; cat /tmp/coll-auto.out
fi

# No such device: a clear error on every rank, no hang.
if timeout 60 $F bench collective all_reduce --backend rdma --device mlx5_9 --local 2 -b 1K -e 1K \
     -n 1 -w 0 --timeout 10 >/tmp/coll-nodev.out 2>&1; then
  fail coll-rdma-missing-device "succeeded"
elif grep -q "RDMA device .mlx5_9. not found" /tmp/coll-nodev.out; then
  pass coll-rdma-missing-device "$(grep -m1 'mlx5_9' /tmp/coll-nodev.out | cut -c1-200)"
else
  fail coll-rdma-missing-device; cat /tmp/coll-nodev.out
fi
echo "  collective/matrix rdma checks took $(( $(date +%s) - t_start )) s"
