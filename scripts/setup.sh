#!/usr/bin/env bash
# Set-up on a fresh Debian 12 machine. Without arguments: what building and running fabrik needs
# (the Debian packages in scripts/apt/*.txt and a Rust toolchain on PATH). With --tests: also what
# the test suite and its testbeds need (scripts/apt/test/*.txt, and the Python tools listed in
# scripts/pip/*.txt installed into the virtual environment $FABRIK_TEST_VENV, /opt/fabrik-test/venv
# by default) and cargo-machete. Idempotent; safe to run again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "usage: $0 [--tests]" >&2; exit 2 ;;
esac

lists=("$here"/apt/*.txt)
[ "$tests" -eq 1 ] && lists+=("$here"/apt/test/*.txt)

mapfile -t wanted < <(cat "${lists[@]}" 2>/dev/null | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
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

if [ "$tests" -eq 1 ]; then
  venv=${FABRIK_TEST_VENV:-/opt/fabrik-test/venv}
  mapfile -t reqs < <(cat "$here"/pip/*.txt 2>/dev/null | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
  if [ ${#reqs[@]} -gt 0 ]; then
    [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "${reqs[@]}"
    echo "setup: python test tools in $venv: ${reqs[*]}" >&2
  fi
fi

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: no Rust toolchain (cargo) on PATH; install Rust stable with rustup" >&2; exit 1; }
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if [ "$tests" -eq 1 ]; then
  # .ci/run checks for dependencies no crate uses.
  command -v cargo-machete >/dev/null 2>&1 || cargo install --locked cargo-machete --version 0.9.2
fi
echo "setup: ready ($(cargo --version))" >&2
