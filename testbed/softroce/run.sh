#!/usr/bin/env bash
# Boots the Soft-RoCE VM (qemu TCG: KVM hangs on the project's machines) and runs fabrik's RDMA
# tests inside, beside perftest on the same rxe device, then checks the serial console:
# exit 0 only when every FABRIK-TEST line is PASS and the VM reached SOFTROCE-DONE.
#
#   testbed/softroce/run.sh [FABRIK_BIN]
#   env: SOFTROCE_TIMEOUT (s, default 900), SOFTROCE_MEM (MiB, default 1024),
#        SOFTROCE_ARGS (extra fab.k=v: bw_size, bw_iters, lat_size, lat_iters, lat_ratio_iters,
#        rounds, short_iters, short_runs, short_lat_bound)
# The console log is kept in testbed/cache/softroce-console.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${SOFTROCE_CACHE:-$repo/testbed/cache}
"$here/build.sh" "$@"
ver=$(cat "$cache/kernel-version")
log=$cache/softroce-console.txt
# The guest's speed follows the host's (TCG emulates every instruction): the host's CPU, load and
# busiest processes go on record beside the ratios.
echo "softroce: host $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
top -bn1 2>/dev/null | sed -n '8,10s/^/softroce:   busiest now: /p' || true
start=$(date +%s)
set +e
timeout "${SOFTROCE_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg -m "${SOFTROCE_MEM:-1024}" -smp 2 \
  -kernel "$cache/kern/boot/vmlinuz-$ver" -initrd "$cache/initrd.gz" -nographic -no-reboot \
  -append "console=ttyS0 quiet panic=-1 fab.role=loop ${SOFTROCE_ARGS:-}" </dev/null >"$log" 2>&1
qrc=$?
set -e
tr -d '\r' <"$log" >"$log.tmp" && mv "$log.tmp" "$log"
echo "softroce: VM ran $(( $(date +%s) - start )) s (qemu exit $qrc); console in $log"
grep -E '^ *(RDMA|#bytes|[0-9]+ )' "$log" | sed 's/^/  /' | head -60 || true
grep -E "^FABRIK-(TEST|RATIO)" "$log" || true
fails=$(grep -c '^FABRIK-TEST FAIL' "$log" || true)
passes=$(grep -c '^FABRIK-TEST PASS' "$log" || true)
if ! grep -q '^SOFTROCE-DONE' "$log"; then
  echo "softroce: FAIL: the VM did not finish (timeout or crash); tail of the console:"; tail -30 "$log"
  exit 1
fi
# The VM's own `fabrik snapshot`, when asked for: SOFTROCE_FIXTURE=DIR unpacks it there.
if grep -q '^FABRIK-SNAPSHOT-BEGIN' "$log"; then
  sed -n '/^FABRIK-SNAPSHOT-BEGIN/,/^FABRIK-SNAPSHOT-END/p' "$log" | sed '1d;$d' | base64 -d >"$cache/softroce-snapshot.tar.gz"
  echo "softroce: VM snapshot in $cache/softroce-snapshot.tar.gz"
  if [ -n "${SOFTROCE_FIXTURE:-}" ]; then
    tmp=$(mktemp -d); tar -xzf "$cache/softroce-snapshot.tar.gz" -C "$tmp"
    top=$tmp; [ "$(ls -A "$tmp" | wc -l)" -eq 1 ] && [ -d "$tmp/$(ls -A "$tmp")" ] && top=$tmp/$(ls -A "$tmp")
    rm -rf "$SOFTROCE_FIXTURE"; mkdir -p "$SOFTROCE_FIXTURE"
    cp -a "$top/." "$SOFTROCE_FIXTURE/"; rm -rf "$tmp"
    echo "softroce: unpacked into $SOFTROCE_FIXTURE"
  fi
fi
echo "softroce: $passes passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passes" -gt 0 ]
