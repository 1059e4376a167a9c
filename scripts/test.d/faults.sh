#!/usr/bin/env bash
# The fault campaign (crates/fabrik-testbed/src/campaign/): faults injected into eight namespace
# hosts, into copies of the node trees and into the Soft-RoCE VM (one boot), fabrik run on each,
# and the culprits it names compared with those injected. Prints the confusion table, precision,
# recall and the median time to a verdict (docs/benchmarks/faults.md); fails when precision or
# recall is below 0.95 or a healthy run raised an alarm. Parts that cannot run here skip with a
# message (not root: the snapshot cases only; no qemu: no VM cases); under CI a missing tool is a
# failure, since CI installs them all. FAULTS_ARGS adds arguments (--seed N replays a run).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
only=snapshots
if [ "$(id -u)" -eq 0 ]; then
  only=snapshots,netns,vm
  if ! command -v iptables >/dev/null; then
    if [ -n "${CI:-}" ]; then echo "faults: FAIL: CI must have iptables (scripts/apt/test/faults.txt)"; exit 1; fi
    echo "faults: iptables missing (scripts/apt/test/faults.txt): snapshot cases only"
    only=snapshots
  fi
else
  echo "faults: not root: the namespace and VM cases are skipped, the snapshot cases run"
fi
# The debug build the crate tests already made (a no-op for cargo then): the campaign judges
# verdicts and times them against the run's deadline, which a debug build meets.
cargo build -q --locked -p fabrik -p fabrik-testbed --bin fabrik --bin fabrik-faults
# shellcheck disable=SC2086
exec target/debug/fabrik-faults --fabrik target/debug/fabrik --only "$only" ${FAULTS_ARGS:-}
