#!/usr/bin/env bash
# The Debian package end to end: built by scripts/package-deb.sh (cargo-deb), installed with dpkg
# on this machine, its files and commands checked, then removed. Root only (dpkg -i). It runs
# after monitor.sh, whose `top` CPU check uses the release budget only where a release binary
# was already built (docs/benchmarks/monitor.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" -ne 0 ]; then echo "package: SKIP: installing a package needs root"; exit 0; fi
pass=0
ok() { echo "package: ok: $*"; pass=$((pass + 1)); }
fail() { echo "package: FAIL: $*" >&2; exit 1; }

bash scripts/package-deb.sh
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | sed -n 1p)
deb=$(ls -t target/debian/fabrik_"$version"-*.deb 2>/dev/null | sed -n 1p)
[ -n "$deb" ] || fail "no target/debian/fabrik_$version-*.deb"
ok "built $deb ($(du -h "$deb" | cut -f1))"

contents=$(dpkg-deb --contents "$deb")
for f in ./usr/bin/fabrik ./usr/lib/fabrik/fabrik-healthcheck ./etc/default/fabrik-healthcheck \
  ./lib/systemd/system/fabrik-exporter.service ./usr/share/man/man1/fabrik.1.gz \
  ./usr/share/bash-completion/completions/fabrik ./usr/share/zsh/vendor-completions/_fabrik \
  ./usr/share/fish/vendor_completions.d/fabrik.fish ./usr/share/fabrik/prometheus/fabrik-alerts.yml \
  ./usr/share/fabrik/grafana/fabrik-dashboard.json \
  ./usr/share/fabrik/kubernetes/exporter-daemonset.yaml \
  ./usr/share/fabrik/expect/dgx-h100.toml ./usr/share/fabrik/expect/README.md; do
  grep -q " $f\$" <<<"$contents" || fail "the package lacks $f"
done
ok "the package holds the binary, the Slurm wrapper, the unit, completions, the manual and deploy/"

trap 'dpkg -r fabrik >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb" >/dev/null
[ "$(/usr/bin/fabrik --version)" = "fabrik $version" ] || fail "installed fabrik --version: $(/usr/bin/fabrik --version)"
ok "dpkg -i installs fabrik $version"
dpkg-query -W -f='${Conffiles}\n' fabrik | grep -q '/etc/default/fabrik-healthcheck' \
  || fail "/etc/default/fabrik-healthcheck is not a conffile"
ok "/etc/default/fabrik-healthcheck is a conffile"

set +e
/usr/bin/fabrik check --root fixtures/nodes/ib-ndr-8gpu >/dev/null; healthy=$?
/usr/bin/fabrik check --root fixtures/nodes/roce-dualport >/dev/null; broken=$?
set -e
[ "$healthy" -eq 0 ] && [ "$broken" -eq 1 ] || fail "installed fabrik check: exit $healthy (healthy) and $broken (broken)"
ok "the installed fabrik check passes a healthy node and fails a broken one"
n=$(ls /usr/share/fabrik/expect/*.toml | wc -l)
[ "$n" -eq "$(ls deploy/expect/*.toml | wc -l)" ] || fail "/usr/share/fabrik/expect holds $n files"
set +e
/usr/bin/fabrik check --root fixtures/nodes/ib-ndr-8gpu --expect /usr/share/fabrik/expect/dgx-h100.toml >/dev/null; met=$?
/usr/bin/fabrik check --root fixtures/nodes/ib-ndr-8gpu --expect /usr/share/fabrik/expect/dgx-b200.toml >/dev/null; other=$?
set -e
[ "$met" -eq 0 ] && [ "$other" -eq 1 ] || fail "installed expectations: exit $met (dgx-h100) and $other (dgx-b200) on the H100 fixture"
ok "the $n expectations files are installed in /usr/share/fabrik/expect and judge a node"

zcat /usr/share/man/man1/fabrik.1.gz | grep -q '^\.TH fabrik 1' || fail "the manual page has no .TH header"
ok "manual page"
bash -c '. /usr/share/bash-completion/completions/fabrik && complete -p fabrik' | grep -q _fabrik \
  || fail "bash completion does not register"
ok "bash completion registers"
grep -q '^ExecStart=/usr/bin/fabrik exporter' /lib/systemd/system/fabrik-exporter.service || fail "unit ExecStart"
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify /lib/systemd/system/fabrik-exporter.service 2>&1 | grep -v 'Failed to' | grep -i 'error' && fail "systemd-analyze verify"
  ok "systemd-analyze verify accepts the unit"
fi

dpkg -r fabrik >/dev/null
[ ! -e /usr/bin/fabrik ] || fail "dpkg -r left /usr/bin/fabrik"
ok "dpkg -r removes it"
echo "package: $pass passed, 0 failed"
