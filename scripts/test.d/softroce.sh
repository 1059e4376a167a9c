#!/usr/bin/env bash
# Real RDMA verbs in CI: boots the Soft-RoCE VM and runs fabrik's RDMA tests beside perftest.
# Skips (exit 0, with a message) when it cannot run here; fails loudly when it runs and fails.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "softroce: SKIP: needs root (apt-get download, dpkg -x)"; exit 0; fi
for c in qemu-system-x86_64 busybox cpio ib_write_bw ibv_devinfo; do
  command -v "$c" >/dev/null || { echo "softroce: SKIP: $c missing (install scripts/apt/verbs.txt)"; exit 0; }
done
bin=$repo/target/release/fabrik
[ -x "$bin" ] || bin=$repo/target/debug/fabrik
if [ ! -x "$bin" ]; then
  (cd "$repo" && cargo build -q -p fabrik)
  bin=$repo/target/debug/fabrik
fi
exec "$repo/testbed/softroce/run.sh" "$bin"
