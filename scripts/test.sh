#!/usr/bin/env bash
# The whole test suite: every crate's unit and integration tests, then the testbed suites in
# scripts/test.d/ (network namespaces, the Soft-RoCE VM), each of which skips with a message when
# it cannot run here (not root, no qemu), or fails then where FABRIK_REQUIRE_TESTBEDS=1, as
# .ci/run sets it (scripts/lib/skip.sh; in Rust, fabrik_testbed::skip).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked
for suite in scripts/test.d/*.sh; do
  [ -e "$suite" ] || continue
  echo "== testbed suite: $suite"
  bash "$suite"
done
