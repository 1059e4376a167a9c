#!/usr/bin/env bash
# The fabrik namespace testbed for people and benchmark scripts: runs `fabrik-netns` (the
# fabrik-testbed crate's binary, the same layout the tests build). Usage: netns.sh with no
# arguments, or docs/bench.md. FABRIK_NETNS names a built binary; otherwise cargo builds it.
set -euo pipefail
if [ -n "${FABRIK_NETNS:-}" ]; then exec "$FABRIK_NETNS" "$@"; fi
exec cargo run -q --manifest-path "$(dirname "$0")/../Cargo.toml" -p fabrik-testbed --bin fabrik-netns -- "$@"
