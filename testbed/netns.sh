#!/usr/bin/env bash
# The fabrik namespace testbed for people and benchmark scripts: runs `fabrik-netns` (the
# fabrik-testbed crate's binary, the same layout the tests build). Usage: netns.sh with no
# arguments, or docs/bench.md.
#
# FABRIK_NETNS names a built binary to run as is. Otherwise the newer of
# target/{release,debug}/fabrik-netns runs (under CARGO_TARGET_DIR when set); cargo builds it
# only when there is none or the crate's sources are newer, so that a script calling this many
# times pays for one build at most, not a cargo check on every call.
set -euo pipefail
if [ -n "${FABRIK_NETNS:-}" ]; then exec "$FABRIK_NETNS" "$@"; fi
repo=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
bin=
for p in "$target/release/fabrik-netns" "$target/debug/fabrik-netns"; do
  if [ -x "$p" ] && { [ -z "$bin" ] || [ "$p" -nt "$bin" ]; }; then bin=$p; fi
done
stale() {
  [ -n "$(find "$repo/crates/fabrik-testbed" \( -name '*.rs' -o -name Cargo.toml \) -newer "$1" -print -quit)" ]
}
if [ -z "$bin" ] || stale "$bin"; then
  profile=debug
  case "$bin" in */release/fabrik-netns) profile=release ;; esac
  flag=
  [ "$profile" = release ] && flag=--release
  cargo build -q $flag --manifest-path "$repo/Cargo.toml" -p fabrik-testbed --bin fabrik-netns >&2
  bin=$target/$profile/fabrik-netns
fi
exec "$bin" "$@"
