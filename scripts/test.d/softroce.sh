#!/usr/bin/env bash
# Real RDMA verbs in CI: boots the Soft-RoCE VM and runs fabrik's RDMA tests beside perftest.
# Skips (exit 0, with a message) when it cannot run here, which fails it where
# FABRIK_REQUIRE_TESTBEDS=1 (scripts/lib/skip.sh); fails loudly when it runs and fails.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/scripts/lib/skip.sh"
if [ "$(id -u)" -ne 0 ]; then skip softroce "needs root (apt-get download, dpkg -x)"; fi
for c in qemu-system-x86_64 busybox cpio ib_write_bw ibv_devinfo; do
  command -v "$c" >/dev/null || skip softroce "$c missing (install scripts/apt/test/verbs.txt)"
done
# The suite prints fabrik/perftest ratios, which only mean something for an optimised build;
# cargo makes this a no-op when the release binary is fresh.
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
(cd "$repo" && cargo build -q --release --locked -p fabrik)
bin=$repo/target/release/fabrik
exec "$repo/testbed/softroce/run.sh" "$bin"
