#!/usr/bin/env bash
# Builds the Debian package target/debian/fabrik_VERSION-1_ARCH.deb with cargo-deb (installed
# into ~/.cargo/bin when missing): the release binary, shell completions and the manual page it
# generates itself, the Slurm health-check wrapper, the exporter's systemd unit and deploy/
# (the expectations files of deploy/expect/ go to /usr/share/fabrik/expect/).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
command -v cargo-deb >/dev/null 2>&1 || cargo install --locked cargo-deb --version 3.8.0
cargo build --release --locked -p fabrik
bin=target/release/fabrik
out=target/deb-assets
mkdir -p "$out"
"$bin" completions bash >"$out/fabrik.bash"
"$bin" completions zsh >"$out/_fabrik"
"$bin" completions fish >"$out/fabrik.fish"
"$bin" manpage | gzip -9n >"$out/fabrik.1.gz"
cargo deb --locked --no-build -p fabrik
