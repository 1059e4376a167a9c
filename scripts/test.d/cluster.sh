#!/usr/bin/env bash
# Cluster suite, in crates/fabrik/tests/cluster_testbed.rs: the report of a real run (PNG plots
# decoded and drawn, nothing outside the page, rendered in headless Chromium), then 8 namespace
# hosts running every collective verified, the pair matrix with one directed link shaped slow,
# a rank killed mid-sweep and a rank with the wrong token. Each part skips with a message when
# it cannot run (no chromium; not root or no network namespaces), and fails then where
# FABRIK_REQUIRE_TESTBEDS=1 (fabrik_testbed::skip).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
  echo "cluster.sh: no chromium, the browser check will be skipped (scripts/apt/test/cluster.txt installs it)"
exec cargo test -p fabrik --test cluster_testbed -- --ignored --nocapture --test-threads 1
