#!/usr/bin/env bash
# Live check of `fabrik top` on real rxe counters: boots Debian's kernel under qemu (TCG) with a
# busybox initramfs of its own (the recipe testbed/softroce/build.sh follows), creates rxe0 on a veth,
# runs ib_write_bw over it while `fabrik top --format json` samples every second, then prints the
# table. Prints FABRIK-TOP lines (NDJSON) and checks that rxe0's packet counters moved.
#
#   bash crates/fabrik-monitor/bench/softroce.sh [path/to/fabrik]     (root; downloads packages)
set -euo pipefail
FABRIK=$(readlink -f "${1:-target/release/fabrik}")
[ -x "$FABRIK" ] || { echo "no fabrik binary at $FABRIK (cargo build --release -p fabrik)"; exit 2; }
W=${W:-/tmp/softroce-monitor}; mkdir -p "$W"; cd "$W"
apt-get install -y -qq qemu-system-x86 busybox-static cpio perftest ibverbs-utils ibverbs-providers iproute2 >/dev/null
ver=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: linux-image-\(.*-amd64\)$/\1/p' | head -1)
[ -f kern/boot/vmlinuz-$ver ] || { apt-get download "linux-image-$ver-unsigned" >/dev/null 2>&1 || apt-get download "linux-image-$ver"; dpkg -x linux-image-$ver*.deb kern; }
K=kern/lib/modules/$ver/kernel
MODS="crc32_generic ib_core ib_uverbs udp_tunnel ip6_udp_tunnel rdma_rxe veth"
rm -rf ird; mkdir -p ird/{bin,proc,sys,dev,mods,tmp,run,etc/libibverbs.d}
cp /usr/bin/busybox ird/bin/
for m in $MODS; do cp "$(find $K -name $m.ko)" ird/mods/; done
for b in /usr/sbin/ip /usr/bin/rdma /usr/bin/ib_write_bw /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so "$FABRIK"; do
  dest="ird$b"; [ "$b" = "$FABRIK" ] && dest=ird/usr/bin/fabrik
  mkdir -p "$(dirname "$dest")"; cp -L "$b" "$dest"
  for l in $(ldd "$b" | grep -o '/[^ ]*'); do mkdir -p "ird$(dirname $l)"; cp -L "$l" "ird$l"; done
done
cp /etc/libibverbs.d/rxe.driver ird/etc/libibverbs.d/
cat > ird/init <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $MODS; do insmod /mods/\$m.ko; done
INIT
cat >> ird/init <<'INIT'
IP=/usr/sbin/ip
$IP link set lo up
ulimit -l unlimited
$IP link add va type veth peer name vb
$IP addr add 192.0.2.1/24 dev va; $IP link set va up; $IP link set vb up
/usr/bin/rdma link add rxe0 type rxe netdev va
# Dumps the files the monitor reads, one `DUMP-<tag> path<TAB>content` line each, so the host
# can rebuild a real before/after fixture pair.
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
/usr/bin/fabrik top --interval 1s --count 12 --format json > /tmp/top.ndjson 2>&1 &
sleep 1
BW="ib_write_bw -d rxe0 -x 1 -s 65536 -n 3000 -F --report_gbits"
timeout 30 $BW >/tmp/s.txt 2>&1 & sleep 1; timeout 30 $BW 192.0.2.1
wait
dump after
while read -r line; do echo "FABRIK-TOP $line"; done < /tmp/top.ndjson
/usr/bin/fabrik top --interval 1s --once
echo SOFTROCE-DONE
poweroff -f
INIT
chmod +x ird/init
(cd ird && find . | cpio -o -H newc 2>/dev/null | gzip) > initrd.gz
timeout 400 qemu-system-x86_64 -accel tcg -m 768 -smp 2 -kernel kern/boot/vmlinuz-$ver \
  -initrd initrd.gz -nographic -no-reboot -append "console=ttyS0 quiet panic=-1" | tee out.txt
grep -q SOFTROCE-DONE out.txt
# Rebuild the real counter trees: $W/rxe-vm/{before,after}.
python3 - out.txt "$W/rxe-vm" <<'PY'
import os, sys
out, dest = sys.argv[1], sys.argv[2]
for line in open(out, errors="replace"):
    line = line.rstrip("\r\n")
    for tag in ("before", "after"):
        pre = f"DUMP-{tag} "
        if line.startswith(pre) and "\t" in line:
            rel, val = line[len(pre):].split("\t", 1)
            path = os.path.join(dest, tag, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(val + "\n")
PY
grep '^FABRIK-TOP ' out.txt | sed 's/^FABRIK-TOP //' | tr -d '\r' > top.ndjson
python3 - top.ndjson <<'PY'
import json, sys
best = {}
for line in open(sys.argv[1]):
    f = json.loads(line)
    for p in f["ports"]:
        if p["device"] == "rxe0":
            t = p["traffic"]
            best["tx_pps"] = max(best.get("tx_pps", 0), t["tx_packets_per_s"] or 0)
            for c in p["changes"]:
                best.setdefault("moved", set()).add(c["name"])
    for n in f["netdevs"]:
        if n["name"] == "va":
            best["va_bps"] = max(best.get("va_bps", 0), n["traffic"]["tx_bits_per_s"] or 0)
print("rxe0 peak sent_pkts/s:", best.get("tx_pps"), "moved:", sorted(best.get("moved", [])))
print("va peak tx bits/s:", best.get("va_bps"))
sys.exit(0 if best.get("tx_pps", 0) > 0 else 1)
PY
