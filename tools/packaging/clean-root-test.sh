#!/usr/bin/env bash
# Proves a Tuneup package on a Debian 12 root that has never seen the project (docs/packaging.md, issue 33).
#   tools/packaging/clean-root-test.sh DEB [--root DIR] [--keep]
# Makes the root with mmdebstrap (bookworm, from the machine's package registry, with man-db, bash-completion and
# systemd, which the checks use), then in it: `apt-get install ./DEB` resolves every dependency; the installed
# `tuneup --version`, a probe and a flash of the built-in simulated headset; `man -w` finds a page of every command
# family; bash loads the completion; `systemd-analyze verify` passes for every unit; `apt-get purge tuneup` leaves
# no file behind that was not there before the install. On the host: lintian reports no error.
# Needs root (chroot, mount), mmdebstrap and lintian. Each check prints one line; the first that fails ends the run
# with its reason (exit 1). --keep leaves the root (default: removed, also after a failure).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$(dirname "$here")")
deb=""
root=""
keep=false
while [ $# -gt 0 ]; do
    case "$1" in
        --root) [ $# -ge 2 ] || { echo "clean-root-test.sh: --root needs a directory" >&2; exit 64; }; root=$2; shift 2 ;;
        --keep) keep=true; shift ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "clean-root-test.sh: unknown option '$1'" >&2; exit 64 ;;
        *) [ -z "$deb" ] || { echo "clean-root-test.sh: one package, got '$deb' and '$1'" >&2; exit 64; }; deb=$1; shift ;;
    esac
done
[ -n "$deb" ] || { echo "usage: tools/packaging/clean-root-test.sh DEB [--root DIR] [--keep]" >&2; exit 64; }
[ -f "$deb" ] || { echo "clean-root-test.sh: no package at $deb" >&2; exit 66; }
[ "$(id -u)" -eq 0 ] || { echo "clean-root-test.sh: needs root (chroot and mount)" >&2; exit 77; }
for tool in mmdebstrap lintian chroot; do
    command -v "$tool" >/dev/null || { echo "clean-root-test.sh: $tool is missing (tools/install-deps.sh runtime)" >&2; exit 69; }
done

[ -n "$root" ] || root=$(mktemp -d /tmp/tuneup-clean-root.XXXXXX)
cleanup() {
    umount "$root/dev/pts" 2>/dev/null || true
    umount "$root/proc" 2>/dev/null || true
    if ! $keep; then rm -rf "$root"; fi
}
trap cleanup EXIT
step() { printf '== clean root: %s\n' "$*"; }
fail() { printf 'clean-root-test.sh: %s\n' "$*" >&2; exit 1; }
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

step "lintian (no errors)"
lintian_log=$(lintian --fail-on error "$deb" 2>&1) || { printf '%s\n' "$lintian_log"; fail "lintian reports errors"; }
printf '%s\n' "$lintian_log" | sed 's/^/   /'

step "a Debian 12 root (mmdebstrap --variant=apt bookworm)"
rmdir "$root" 2>/dev/null || true
mmdebstrap --quiet --variant=apt --include=man-db,bash-completion,systemd bookworm "$root" >/dev/null \
    || fail "mmdebstrap could not make the root"
# Without /proc, a Swift program sees no arguments (Foundation reads /proc/self/cmdline).
mount -t proc proc "$root/proc"
mkdir -p "$root/dev/pts"
mount -t devpts devpts "$root/dev/pts"    # apt logs through a pseudo-terminal
cp "$deb" "$root/tmp/"
cp "$repo/firmware-images/app-2.0.0.img" "$root/tmp/"
name=$(basename "$deb")

step "apt-get install ./$name (every dependency resolved from the registry)"
in_root sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/$name" >/dev/null \
    || fail "apt-get could not install $name"
in_root dpkg-query -W -f='${Status}\n' tuneup | grep -q "install ok installed" || fail "tuneup is not installed"
echo "   $(in_root dpkg-query -W -f='${Package} ${Version}, Depends: ${Depends}' tuneup)"
# What purge must give back is the root with the dependencies but without the package: purge it once, list the root,
# install it again (its dependencies are there now) and check it; the last purge must leave exactly that list.
in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq tuneup' >/dev/null || fail "apt-get purge tuneup failed"
listing() {
    # apt's and dpkg's own state, caches and logs change with any install: left out. So are the home directories:
    # what a user's commands made there (the simulated headset's state in ~/.local/state/tuneup) is the user's, and
    # no package's purge touches a home (Debian policy 10.7.3).
    (cd "$root" && find . -xdev \( -path ./proc -o -path ./tmp -o -path ./root -o -path ./home -o -path ./var/cache -o -path ./var/log \
        -o -path ./var/lib/apt -o -path ./var/lib/dpkg -o -path ./run \) -prune -o -print | sort)
}
before=$(listing)
in_root sh -c "DEBIAN_FRONTEND=noninteractive dpkg -i /tmp/$name" >/dev/null || fail "dpkg -i $name (again) failed"

step "tuneup --version, probe, flash (the built-in simulated headset)"
version=$(in_root tuneup --version) || fail "the installed tuneup --version failed"
echo "   $version"
case "$version" in [0-9]*) ;; *) fail "tuneup --version printed '$version'" ;; esac
in_root sh -c 'cd /tmp && tuneup probe' | sed 's/^/   /' || fail "tuneup probe failed"
in_root sh -c 'cd /tmp && tuneup flash --format json app-2.0.0.img' > "$root/tmp/flash.json" || fail "tuneup flash failed"
result=$(grep '"type":"result"' "$root/tmp/flash.json" || true)
case "$result" in
    *'"newVersion":"2.0.0"'*) echo "   flashed 1.4.2 → 2.0.0" ;;
    *) fail "the flash did not end with version 2.0.0: $(tail -c 300 "$root/tmp/flash.json")" ;;
esac

step "man pages, bash completion"
for page in tuneup tuneup-flash tuneup-probe tuneup-station-run tuneup-speaker-receive tuneup-wearable-stream; do
    in_root man -w "$page" >/dev/null || fail "man -w $page finds no page"
done
echo "   man -w finds tuneup, tuneup-flash, tuneup-probe, tuneup-station-run, tuneup-speaker-receive, tuneup-wearable-stream"
completion=$(in_root bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader tuneup; complete -p tuneup') \
    || fail "bash did not load the completion of tuneup"
echo "   $completion"

step "systemd-analyze verify (every unit)"
units=$(cd "$root/lib/systemd/system" && ls tuneup*.service)
[ -n "$units" ] || fail "the package installed no systemd unit"
for unit in $units; do
    case "$unit" in
        *@.service) target="/lib/systemd/system/${unit%@.service}@line1.service"
                    cp "$root/lib/systemd/system/$unit" "$root$target" ;;
        *) target="/lib/systemd/system/$unit" ;;
    esac
    out=$(in_root systemd-analyze verify "$target" 2>&1) || { printf '%s\n' "$out"; fail "systemd-analyze verify $unit"; }
    [ "$target" = "/lib/systemd/system/$unit" ] || rm -f "$root$target"
done
echo "   verified: $(echo $units)"
for unit in tuneup-receive.service tuneup-hub.service; do
    state=$(in_root systemctl is-enabled "$unit" 2>/dev/null || true)
    [ "$state" = disabled ] || fail "$unit is '$state' after the install, not disabled"
done
echo "   tuneup-receive and tuneup-hub are disabled (nothing is enabled on install)"

step "apt-get purge tuneup (nothing left behind)"
rm -f "$root/tmp/$name" "$root/tmp/app-2.0.0.img" "$root/tmp/flash.json"
in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq tuneup' >/dev/null || fail "apt-get purge tuneup failed"
after=$(listing)
left=$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after"))
if [ -n "$left" ]; then
    printf '%s\n' "$left" | head -40
    fail "purge left $(printf '%s\n' "$left" | wc -l) paths behind (above)"
fi
getent_user=$(in_root getent passwd _tuneup || true)
[ -z "$getent_user" ] || fail "purge left the user _tuneup"
echo "   nothing left: $(printf '%s\n' "$before" | wc -l) paths before the install, the same after the purge"
step "passed"
