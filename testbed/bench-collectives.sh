#!/usr/bin/env bash
# Side-by-side CPU all_reduce benchmark on the namespace testbed: fabrik's tcp backend, Open MPI
# (MPI_Allreduce, TCP BTL only) and gloo (torch.distributed), same hosts, same sizes, one run.
# Prints per rank count one table with, per size, each tool's median time (µs) and busbw (GB/s,
# nccl-tests' formula), fabrik's time over the best anchor's (below 1 is fabrik ahead), and the
# crossover sizes where that ratio crosses 1. MPI_Allreduce is out-of-place and gloo's
# all_reduce in-place; each is compared with fabrik's run of the same placement.
#
# On a shared machine the CPU left to the run drifts within a minute, so the tools take turns:
# ROUNDS rounds of fabrik, Open MPI, gloo, each the full sweep, and the table shows each tool's
# median time per size over the rounds (every round's busbw is printed above it). Small sizes
# run more iterations (ITERS x 1 MiB / size, at most 1000) so each timing spans milliseconds.
#
#   testbed/bench-collectives.sh [RANKS...]        default: 2 4 8
#   env: ROUNDS (3), ITERS (10), WARMUP (3), CHANNELS (2), ALGO (auto), CHUNK (fabrik's default),
#        SIZES (8 B, then 16 B to 256 MiB by factors of 4)
#
# Needs root, a release build of fabrik (cargo build --release -p fabrik), and for the anchors
# Debian's openmpi-bin + libopenmpi-dev and python3-torch (or torch from PyPI). Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 2; }
FABRIK=$(realpath "${FABRIK:-target/release/fabrik}")
[ -x "$FABRIK" ] || { echo "build fabrik first: cargo build --release -p fabrik" >&2; exit 2; }
SIZES=${SIZES:-"8 $(awk 'BEGIN{for (s = 16; s <= 268435456; s *= 4) printf "%d ", s}')"}
ITERS=${ITERS:-10}
CHUNK=${CHUNK:-}
WARMUP=${WARMUP:-3}
CHANNELS=${CHANNELS:-2}
ROUNDS=${ROUNDS:-3}
ALGO=${ALGO:-auto}
# Iterations for a size: ITERS at 1 MiB and up, more below (the same rule in every tool).
iters_for() { awk -v s="$1" -v i="$ITERS" 'BEGIN{ n = int(i * 1048576 / s); if (n < i) n = i; if (n > 1000) n = 1000; print n }'; }
# Debian's python3-torch lives in the system interpreter, not in a pyenv one.
PYTHON=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
WORK=$(mktemp -d)
NAME=fabbc$$
trap 'testbed/netns.sh down $NAME >/dev/null 2>&1 || true; rm -rf $WORK' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# --- the MPI anchor: a tiny MPI_Allreduce timing loop -------------------------------------
cat > "$WORK/allreduce.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &n);
  int base = atoi(argv[1]), warmup = atoi(argv[2]);
  for (int a = 3; a < argc; a++) {
    size_t bytes = strtoull(argv[a], NULL, 10), count = bytes / sizeof(float);
    long it = (long)((double)base * 1048576.0 / (double)bytes);
    int iters = it < base ? base : it > 1000 ? 1000 : (int)it;
    float *s = malloc(bytes), *r = malloc(bytes);
    for (size_t i = 0; i < count; i++) s[i] = (float)((rank + i) % 5);
    for (int i = 0; i < warmup; i++) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (MPI_Wtime() - t0) * 1e6 / iters, sum;
    MPI_Allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%zu %f\n", bytes, sum / n);
    free(s); free(r);
  }
  MPI_Finalize();
  return 0;
}
C
HAVE_MPI=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  mpicc -O2 -o "$WORK/allreduce" "$WORK/allreduce.c" && HAVE_MPI=1
fi
# mpirun starts its daemons through this "rsh": host 10.77.0.K is namespace NAME-h(K-1).
cat > "$WORK/nsrsh" <<SH
#!/bin/sh
host=\$1; shift
exec ip netns exec $NAME-h\$((\${host##*.} - 1)) sh -c "\$*"
SH
chmod +x "$WORK/nsrsh"

# --- the gloo anchor ------------------------------------------------------------------------
cat > "$WORK/gloo.py" <<'PY'
import os, sys, time, torch, torch.distributed as dist
rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method=f"tcp://10.77.0.1:{os.environ['MASTER_PORT']}", rank=rank, world_size=n)
base, warmup = int(sys.argv[1]), int(sys.argv[2])
for b in sys.argv[3:]:
    iters = min(1000, max(base, int(base * 1048576 / int(b))))
    t = torch.ones(int(b) // 4, dtype=torch.float32)
    for _ in range(warmup): dist.all_reduce(t)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters): dist.all_reduce(t)
    us = torch.tensor([(time.perf_counter() - t0) * 1e6 / iters], dtype=torch.float64)
    dist.all_reduce(us)
    if rank == 0: print(int(b), us.item() / n, flush=True)
dist.destroy_process_group()
PY
HAVE_GLOO=0
"$PYTHON" -c "import torch.distributed as d; assert d.is_gloo_available()" 2>/dev/null && HAVE_GLOO=1

busbw() { awk -v b="$1" -v us="$2" -v n="$3" 'BEGIN{ if (us > 0) printf "%.3g", b / us / 1e3 * 2 * (n - 1) / n; else print "-" }'; }

for N in ${@:-2 4 8}; do
  testbed/netns.sh up "$NAME" "$N" 1 >/dev/null
  PORT=$((29700 + N))
  rm -f "$WORK"/fabrik.*.txt "$WORK"/mpi.*.txt "$WORK"/gloo.*.txt
  for round in $(seq 1 "$ROUNDS"); do
  # fabrik: one run per size, so each size gets its own iteration count
  : > "$WORK/fabrik.$round.txt"
  k=0
  for s in $SIZES; do
    k=$((k + 1))
    for h in $(seq 0 $((N - 1))); do
      ip netns exec "$NAME-h$h" env RANK=$h WORLD_SIZE=$N MASTER_ADDR=10.77.0.1 MASTER_PORT=$((PORT + 1000 * round + 10 * k)) \
        FABRIK_TOKEN=bench "$FABRIK" bench collective all_reduce -b "$s" -e "$s" -n "$(iters_for "$s")" \
        -w "$WARMUP" -c 0 --channels "$CHANNELS" --algo "$ALGO" ${CHUNK:+--chunk-size "$CHUNK"} --format json --name "h$h" > "$WORK/fab$h.json" &
    done
    wait || true
    python3 -c "
import json
d = json.load(open('$WORK/fab0.json'))
for r in d['rows']: print(r['size'], r['out_of_place']['time_us'], r['in_place']['time_us'])" >> "$WORK/fabrik.$round.txt" \
      || echo "fabrik run failed at $s B" >&2
  done
  # Open MPI
  : > "$WORK/mpi.$round.txt"
  if [ $HAVE_MPI = 1 ]; then
    hosts=$(for h in $(seq 0 $((N - 1))); do echo -n "10.77.0.$((h + 1)),"; done)
    ip netns exec "$NAME-h0" mpirun -np "$N" --host "${hosts%,}" --mca plm_rsh_agent "$WORK/nsrsh" \
      --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
      --mca plm_rsh_no_tree_spawn 1 "$WORK/allreduce" "$ITERS" "$WARMUP" $SIZES > "$WORK/mpi.$round.txt" 2>"$WORK/mpi.err" \
      || echo "Open MPI run failed: $(tail -3 "$WORK/mpi.err")" >&2
  fi
  # gloo
  : > "$WORK/gloo.$round.txt"
  if [ $HAVE_GLOO = 1 ]; then
    for h in $(seq 0 $((N - 1))); do
      ip netns exec "$NAME-h$h" env RANK=$h WORLD_SIZE=$N MASTER_PORT=$((PORT + 100 + 10 * round)) GLOO_SOCKET_IFNAME=eth0 \
        "$PYTHON" "$WORK/gloo.py" "$ITERS" "$WARMUP" $SIZES > "$WORK/gloo$h.txt" 2>"$WORK/gloo$h.err" &
    done
    wait || true
    cp "$WORK/gloo0.txt" "$WORK/gloo.$round.txt"
  fi
  # Each round's busbw, so the spread behind the medians is on record.
  for s in $SIZES; do
    fo=$(awk -v s=$s '$1==s{print $2}' "$WORK/fabrik.$round.txt"); fi=$(awk -v s=$s '$1==s{print $3}' "$WORK/fabrik.$round.txt")
    m=$(awk -v s=$s '$1==s{print $2}' "$WORK/mpi.$round.txt"); g=$(awk -v s=$s '$1==s{print $2}' "$WORK/gloo.$round.txt")
    echo "# round $round, $N ranks, $s B: busbw fabrik-oop $(busbw $s "${fo:-0}" $N) fabrik-ip $(busbw $s "${fi:-0}" $N) openmpi $(busbw $s "${m:-0}" $N) gloo $(busbw $s "${g:-0}" $N) (load $(cut -d' ' -f1 /proc/loadavg))"
  done
  done
  # The median time per size and column over the rounds (a failed round's missing value is skipped).
  median() { sort -g | awk '{v[NR]=$1} END { if (NR == 0) print ""; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'; }
  : > "$WORK/fabrik.txt"; : > "$WORK/mpi.txt"; : > "$WORK/gloo.txt"
  for s in $SIZES; do
    fo=$(cat "$WORK"/fabrik.*[0-9].txt | awk -v s=$s '$1==s{print $2}' | median)
    fi=$(cat "$WORK"/fabrik.*[0-9].txt | awk -v s=$s '$1==s{print $3}' | median)
    [ -n "$fo" ] && echo "$s $fo $fi" >> "$WORK/fabrik.txt"
    m=$(cat "$WORK"/mpi.*[0-9].txt | awk -v s=$s '$1==s{print $2}' | median)
    [ -n "$m" ] && echo "$s $m" >> "$WORK/mpi.txt"
    g=$(cat "$WORK"/gloo.*[0-9].txt | awk -v s=$s '$1==s{print $2}' | median)
    [ -n "$g" ] && echo "$s $g" >> "$WORK/gloo.txt"
  done
  # Per cell: time in µs / busbw in GB/s. Ratios are fabrik's time over the anchor's, each
  # against fabrik's run of the same placement (MPI out-of-place, gloo in-place); "best" is
  # over whichever anchor is faster at that size.
  echo "# all_reduce float sum, $N ranks (namespace hosts), --algo $ALGO, time µs / busbw GB/s, median of $ROUNDS rounds"
  printf "%12s %18s %18s %18s %18s %9s %9s %9s\n" size fabrik-oop fabrik-ip openmpi gloo f/mpi f/gloo f/best
  prev_side=""; crossings=""
  for s in $SIZES; do
    fo=$(awk -v s=$s '$1==s{print $2}' "$WORK/fabrik.txt"); fi=$(awk -v s=$s '$1==s{print $3}' "$WORK/fabrik.txt")
    m=$(awk -v s=$s '$1==s{print $2}' "$WORK/mpi.txt"); g=$(awk -v s=$s '$1==s{print $2}' "$WORK/gloo.txt")
    cell() { if [ -n "$1" ]; then printf "%.1f/%s" "$1" "$(busbw $s "$1" $N)"; else echo "-"; fi; }
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0 > 0 && b+0 > 0) printf "%.2f", a/b; else print "-" }'; }
    rm_=$(ratio "$fo" "$m"); rg=$(ratio "$fi" "$g")
    best=$(printf "%s\n%s\n" "$rm_" "$rg" | grep -v -- - | sort -g | tail -1)
    printf "%12s %18s %18s %18s %18s %9s %9s %9s\n" "$s" "$(cell "$fo")" "$(cell "$fi")" "$(cell "$m")" "$(cell "$g")" "$rm_" "$rg" "${best:--}"
    if [ -n "$best" ]; then
      side=$(awk -v r="$best" 'BEGIN{ print (r <= 1) ? "ahead" : "behind" }')
      [ -n "$prev_side" ] && [ "$side" != "$prev_side" ] && crossings="$crossings ${s}B(->$side)"
      prev_side=$side
    fi
  done
  echo "# crossover sizes (fabrik vs the faster anchor):${crossings:- none}"

  testbed/netns.sh down "$NAME" >/dev/null
done
