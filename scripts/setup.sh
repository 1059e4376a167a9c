#!/usr/bin/env bash
# Everything fabrik's build and tests need on a fresh Debian 12 machine: the Debian packages listed
# in scripts/apt/*.txt (one name per line; each part of the project keeps its own list) and a Rust
# toolchain on PATH. Idempotent; safe to run again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

mapfile -t wanted < <(cat "$here"/apt/*.txt 2>/dev/null | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: no Rust toolchain (cargo) on PATH; install Rust stable with rustup" >&2; exit 1; }
rustup component add rustfmt clippy >/dev/null 2>&1 || true
echo "setup: ready ($(cargo --version))" >&2
