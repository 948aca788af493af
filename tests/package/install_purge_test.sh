#!/usr/bin/env bash
# Installs the .deb files of DIR on a throwaway copy of this system, checks
# what a new user of the packages gets, and purges them:
#   tests/package/install_purge_test.sh DIR
# The copy is an overlay of / in a private mount namespace (its upper layer
# on tmpfs), entered with chroot: nothing it does reaches the real system,
# and it needs no network (dependencies are the host's installed
# libraries). Needs root (unshare -m, mount, chroot). Exit 0: every check
# passed.
set -euo pipefail

if [ "${1:-}" != "--inside" ]; then
  deb_dir="$(cd "${1:?usage: $0 DIR-WITH-DEBS}" && pwd)"
  [ "$(id -u)" -eq 0 ] || { echo "install_purge_test: needs root" >&2; exit 2; }
  exec unshare --mount --propagation private bash "$0" --inside "$deb_dir"
fi
deb_dir="$2"

work="$(mktemp -d)"
mount -t tmpfs -o size=4g tmpfs "$work"
mkdir -p "$work/upper" "$work/work" "$work/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/work" "$work/root"
root="$work/root"
mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/run"
mount -t tmpfs tmpfs "$root/tmp"
mkdir -p "$root/tmp/debs"
cp "$deb_dir"/*.deb "$root/tmp/debs/"

chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -euo pipefail <<'CHECKS'
fail() { echo "install_purge_test: FAIL: $*" >&2; exit 1; }
check() { echo "install_purge_test: $*"; }

packages="neuron-rtd neuron-rtd-sim neuronctl neuron-rtd-exporter neuron-rtd-device-plugin"
for package in $packages; do
  ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" ||
    fail "$package is installed before the test"
done

check "dpkg -i: every package, dependencies from this system"
DEBIAN_FRONTEND=noninteractive dpkg -i /tmp/debs/*.deb >/tmp/dpkg.log 2>&1 ||
  { cat /tmp/dpkg.log >&2; fail "dpkg -i"; }

check "files where the daemon and systemd look for them"
for file in /usr/bin/neuron-rtd /usr/bin/neuronctl /usr/bin/neuron-rtd-exporter \
    /usr/bin/neuron-rtd-device-plugin /usr/lib/neuron-rtd/libneuron_rtd_sim.so \
    /usr/lib/neuron-rtd/neuron_compile_worker.py /usr/lib/neuron-rtd/torch/libtorch_cpu.so \
    /etc/neuron-rtd/neuron-rtd.toml /etc/neuron-rtd/exporter.toml \
    /usr/lib/sysusers.d/neuron-rtd.conf /usr/share/man/man1/neuron-rtd.1.gz \
    /usr/share/man/man1/neuronctl.1.gz; do
  [ -e "$file" ] || fail "$file is missing"
done
unit_dir=/lib/systemd/system
[ -e "$unit_dir/neuron-rtd.service" ] || unit_dir=/usr/lib/systemd/system
for unit in neuron-rtd.service neuron-rtd-exporter.service; do
  [ -e "$unit_dir/$unit" ] || fail "no $unit"
done
dpkg-query -W -f='${Conffiles}\n' neuron-rtd | grep -q /etc/neuron-rtd/neuron-rtd.toml ||
  fail "neuron-rtd.toml is not a conffile"
dpkg-query -W -f='${Conffiles}\n' neuron-rtd-exporter | grep -q /etc/neuron-rtd/exporter.toml ||
  fail "exporter.toml is not a conffile"

check "the daemon's user and its socket's group"
getent passwd neuron-rtd >/dev/null || fail "no user neuron-rtd"
getent group neuron >/dev/null || fail "no group neuron"

check "neuron-rtd needs no libtorch; the plugin finds the one it carries"
! ldd /usr/bin/neuron-rtd | grep -E "lib(torch|c10)" || fail "neuron-rtd links libtorch"
ldd /usr/lib/neuron-rtd/libneuron_rtd_sim.so | grep "libtorch_cpu.so => /usr/lib/neuron-rtd/torch/" \
  >/dev/null || fail "the plugin does not find its libtorch"
neuron-rtd --version | grep -q "neuron-rtd" || fail "neuron-rtd --version"

check "the daemon as its unit runs it (its user, the shipped config) serves the simulated device"
mkdir -p /run/neuron-rtd && chown neuron-rtd:neuron /run/neuron-rtd
setpriv --reuid neuron-rtd --regid neuron --init-groups -- \
  neuron-rtd --config /etc/neuron-rtd/neuron-rtd.toml \
  --compile-after-launches 0 >/tmp/rtd.log 2>&1 &
daemon=$!
for _ in $(seq 1 300); do
  [ -S /run/neuron-rtd/neuron-rtd.sock ] && break
  kill -0 "$daemon" 2>/dev/null || { cat /tmp/rtd.log >&2; fail "neuron-rtd exited"; }
  sleep 0.1
done
neuronctl --address unix:/run/neuron-rtd/neuron-rtd.sock ls >/tmp/ls.txt 2>&1 ||
  { cat /tmp/ls.txt /tmp/rtd.log >&2; fail "neuronctl ls"; }
grep -q "sim" /tmp/ls.txt || { cat /tmp/ls.txt >&2; fail "neuronctl ls shows no simulated device"; }
kill -TERM "$daemon"
wait "$daemon" || { cat /tmp/rtd.log >&2; fail "neuron-rtd did not exit cleanly on SIGTERM"; }
neuron-rtd-exporter --version >/dev/null || fail "neuron-rtd-exporter --version"
neuron-rtd-device-plugin --version >/dev/null || fail "neuron-rtd-device-plugin --version"

check "remove keeps the edited configuration; purge takes it"
echo "# edited by the operator" >> /etc/neuron-rtd/neuron-rtd.toml
dpkg -r $packages >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log >&2; fail "dpkg -r"; }
[ ! -e /usr/bin/neuron-rtd ] || fail "/usr/bin/neuron-rtd is left after remove"
[ ! -e /usr/lib/neuron-rtd ] || fail "/usr/lib/neuron-rtd is left after remove"
grep -q "edited by the operator" /etc/neuron-rtd/neuron-rtd.toml ||
  fail "remove lost the edited configuration"
dpkg -P $packages >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log >&2; fail "dpkg -P"; }
[ ! -e /etc/neuron-rtd ] || fail "/etc/neuron-rtd is left after purge"
for package in $packages; do
  ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "installed" ||
    fail "$package is still known to dpkg"
done
check "ok"
CHECKS
