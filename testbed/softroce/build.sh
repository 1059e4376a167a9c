#!/usr/bin/env bash
# Builds the Soft-RoCE VM: Debian's plain amd64 kernel (it ships rdma_rxe; the cloud flavour does
# not) and a busybox initramfs with iproute2, rdma-core (libibverbs + the rxe provider),
# ibv_devinfo, perftest, kmod and the fabrik binary with their shared libraries, the kernel's
# modules the VM loads in a /lib/modules/<release> tree indexed by kmod's depmod (so `modprobe`,
# and the module fixes of `fabrik fix`, work as on any node), plus a MOCK
# libcuda.so.1 (testbed/mocks/mock-libcuda.c: host memory behind the CUDA driver API, no GPU) in
# /fabrik/mock-cuda, used only by the tests that say "mock-cuda" to run `--mem cuda` over rxe.
#
#   testbed/softroce/build.sh [FABRIK_BIN]     -> testbed/cache/{kern/,initrd.gz,kernel-version}
#   env: SOFTROCE_SCRIPTS: more test scripts for /fabrik/ (paths, space-separated); the kernel
#        argument fab.script=NAME runs one of them instead of vm-tests.sh.
#
# The kernel package is downloaded once and kept in testbed/cache (gitignored); the initramfs is
# rebuilt on every call (seconds) so that it always holds the current binary and tests.
# Needs the Debian packages of scripts/apt/test/verbs.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${SOFTROCE_CACHE:-$repo/testbed/cache}
bin=${1:-${FABRIK_BIN:-}}
if [ -z "$bin" ]; then
  for c in "$repo/target/release/fabrik" "$repo/target/debug/fabrik"; do [ -x "$c" ] && { bin=$c; break; }; done
fi
bin=$(readlink -f "$bin" 2>/dev/null || echo "$bin")
[ -n "$bin" ] && [ -x "$bin" ] || { echo "build.sh: no fabrik binary (cargo build -p fabrik first)" >&2; exit 1; }
need() { command -v "$1" >/dev/null || { echo "build.sh: missing $1 (install the packages of scripts/apt/test/verbs.txt)" >&2; exit 1; }; }
for c in busybox cpio gzip ibv_devinfo ib_write_bw ib_send_lat rdma dpkg apt-cache cc depmod modinfo; do need "$c"; done
[ -x /usr/sbin/ip ] || { echo "build.sh: missing /usr/sbin/ip (iproute2)" >&2; exit 1; }
busybox_bin=$(command -v busybox)

mkdir -p "$cache"; cd "$cache"
ver=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(.*-amd64\)$/\1/p' | head -1)
if [ -z "$ver" ] && [ -f kernel-version ]; then ver=$(cat kernel-version); fi
[ -n "$ver" ] || { echo "build.sh: cannot tell the kernel version (apt-get update?)" >&2; exit 1; }
if [ ! -f "kern/boot/vmlinuz-$ver" ]; then
  deb=$(ls linux-image-"$ver"*_amd64.deb 2>/dev/null | head -1 || true)
  if [ -z "$deb" ]; then
    apt-get download "linux-image-$ver-unsigned" >/dev/null 2>&1 || apt-get download "linux-image-$ver" >/dev/null
    deb=$(ls linux-image-"$ver"*_amd64.deb | head -1)
  fi
  rm -rf kern; dpkg -x "$deb" kern
fi
echo "$ver" > kernel-version
M=kern/lib/modules/$ver
# Load order matters: crc32_generic before rdma_rxe (else "rdma_rxe: failed to add", ENOENT):
# rxe asks the crypto API for crc32 by name, which no modules.dep entry says.
MODS="crc32_generic rdma_rxe veth virtio_pci virtio_net"
# Shipped but not loaded at boot: rdma_ucm (the RDMA CM's user-space device, /dev/infiniband/rdma_cm,
# which `perftest -R` and UCX's rdmacm need) is the module vm-tests-fix.sh has `fabrik fix` load.
EXTRA="rdma_ucm"
rm -rf ird; mkdir -p ird/{bin,proc,sys,dev,tmp,run,etc/libibverbs.d,etc/modules-load.d,usr/bin,usr/sbin,fabrik}
ln -s usr/sbin ird/sbin
cp -L "$busybox_bin" ird/bin/busybox
# The modules with everything they depend on (modinfo's `depends`), at their paths in the
# kernel's tree; kmod's depmod then writes modules.dep and its indexes for the VM's kernel.
mod_path() {
  local f
  f=$(find "$M/kernel" \( -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" \) -print -quit)
  [ -n "$f" ] || f=$(find "$M/kernel" \( -name "${1//_/-}.ko" -o -name "${1//_/-}.ko.xz" \) -print -quit)
  [ -n "$f" ] || { echo "build.sh: module $1 not in kernel $ver" >&2; exit 1; }
  echo "$f"
}
todo="$MODS $EXTRA"; done_mods=" "
while [ -n "${todo// /}" ]; do
  set -- $todo; m=$1; shift; todo="$*"
  case $done_mods in *" $m "*) continue;; esac
  f=$(mod_path "$m")
  mkdir -p "ird/lib/modules/$ver/$(dirname "${f#"$M"/}")"; cp "$f" "ird/lib/modules/$ver/${f#"$M"/}"
  done_mods="$done_mods$m "
  todo="$todo $(modinfo -F depends "$f" | tr ',' ' ')"
done
cp "$M/modules.order" "$M/modules.builtin" "$M/modules.builtin.modinfo" "ird/lib/modules/$ver/"
depmod -b ird "$ver"
echo "$MODS" > "ird/lib/modules/$ver/fabrik-boot-order"
copy_with_libs() {
  local b=$1
  mkdir -p "ird$(dirname "$b")"; cp -L "$b" "ird$b"
  for l in $(ldd "$b" 2>/dev/null | grep -o '/[^ ]*'); do
    mkdir -p "ird$(dirname "$l")"; cp -Ln "$l" "ird$l"
  done
}
# kmod's own tools, as Debian installs them: one binary, called by the name of the tool. The
# kernel's request_module runs /sbin/modprobe too.
copy_with_libs "$(readlink -f "$(command -v modprobe)")"
for t in modprobe rmmod insmod lsmod modinfo depmod; do ln -s ../bin/kmod "ird/usr/sbin/$t"; done
rxe=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so | head -1)
for b in /usr/sbin/ip /usr/bin/rdma /usr/bin/ibv_devinfo /usr/bin/ib_write_bw /usr/bin/ib_send_lat \
         /usr/bin/ib_read_bw /usr/bin/ib_send_bw /usr/bin/ib_write_lat /usr/bin/ib_read_lat \
         /usr/lib/x86_64-linux-gnu/libibverbs.so.1 "$rxe"; do
  [ -e "$b" ] && copy_with_libs "$b"
done
cp /etc/libibverbs.d/rxe.driver ird/etc/libibverbs.d/
# A real PAM session for the memlock fix (vm-tests-fix.sh): util-linux's runuser with
# pam_limits, which reads /etc/security/limits.conf and limits.d/*.conf as on any login.
copy_with_libs /usr/sbin/runuser
for m in pam_rootok pam_permit pam_limits; do copy_with_libs "/lib/x86_64-linux-gnu/security/$m.so"; done
mkdir -p ird/etc/pam.d ird/etc/security/limits.d
printf 'auth sufficient pam_rootok.so\naccount required pam_permit.so\nsession required pam_limits.so\n' > ird/etc/pam.d/runuser
: > ird/etc/security/limits.conf
# fabrik dlopens libibverbs (copied above), so ldd shows only libc and friends.
strip -o ird/usr/bin/fabrik "$bin" 2>/dev/null || cp "$bin" ird/usr/bin/fabrik
for l in $( (ldd "$bin"; ldd "$busybox_bin") 2>/dev/null | grep -o '/[^ ]*'); do mkdir -p "ird$(dirname "$l")"; cp -Ln "$l" "ird$l"; done
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' > ird/etc/passwd
printf 'root:x:0:\nnogroup:x:65534:\n' > ird/etc/group
mkdir -p ird/fabrik/mock-cuda
cc -shared -fPIC -O2 -Wall -o ird/fabrik/mock-cuda/libcuda.so.1 "$here/../mocks/mock-libcuda.c"
cp "$here/init" ird/init
cp "$here/vm-tests.sh" ird/fabrik/vm-tests.sh
cp "$here/vm-tests-collective.sh" ird/fabrik/vm-tests-collective.sh
cp "$here/vm-tests-fix.sh" ird/fabrik/vm-tests-fix.sh
for t in ${SOFTROCE_SCRIPTS:-}; do cp "$t" ird/fabrik/; done
chmod +x ird/init ird/fabrik/vm-tests.sh
(cd ird && find . | cpio -o -H newc 2>/dev/null | gzip -1) > initrd.gz.tmp && mv initrd.gz.tmp initrd.gz
echo "build.sh: kernel $ver, initramfs $(du -h initrd.gz | cut -f1), fabrik from $bin"
