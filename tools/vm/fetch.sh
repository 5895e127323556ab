#!/usr/bin/env bash
# Fetch everything the VM rig needs.
#
#  * Host tools (installed with apt-get): qemu-system-x86 (no recommends), kmod, cpio,
#    plus gcc and the libusb/bluez headers used to build test fixtures.
#  * Guest payload (downloaded with `apt-get download`, unpacked with `dpkg-deb -x`,
#    never installed): the Debian kernel (by default the package linux-image-6.12-amd64
#    points to; see TUNEUP_VM_KERNEL below), busybox-static, bluez-test-tools (btvirt),
#    bluez (hciconfig, sdptool, bluetoothd), dbus-daemon (for bluetoothd) and the
#    shared libraries those need.
#
# Everything lands in $TUNEUP_VM_CACHE (default ~/.cache/tuneup-vm):
#   debs/            the downloaded .deb files
#   root/            all packages unpacked on top of each other (kernel in root/boot,
#                    modules in root/lib/modules/<version>)
#   kernel.env       KVER=..., VMLINUZ=..., MODROOT=... for the other scripts
#   fetched.ok       stamp written last: the kernel package that was asked for
#
# Idempotent: a rerun with the stamp present only checks the host tools and exits.
# TUNEUP_VM_REFRESH=1 forces a new `apt-get update` and download.
# TUNEUP_VM_KERNEL=PACKAGE picks another kernel package instead of
# linux-image-amd64 (e.g. linux-image-6.12-amd64, or a versioned
# linux-image-6.1.0-NN-amd64); give it its own TUNEUP_VM_CACHE.
set -euo pipefail

CACHE="${TUNEUP_VM_CACHE:-$HOME/.cache/tuneup-vm}"
log() { echo "fetch: $*" >&2; }

# Guest packages (the kernel package is resolved below).
# dbus-daemon is there because bluetoothd (the only SDP server BlueZ has) will
# not start without a D-Bus system bus. The lib* packages are every shared
# library those binaries (and libusb) need, except libc6, which always comes
# from the host so that it matches the host-built binaries copied into the guest.
GUEST_PKGS=(busybox-static bluez bluez-test-tools dbus-daemon
            libapparmor1 libasound2 libaudit1 libbz2-1.0 libcap-ng0 libcap2
            libdbus-1-3 libdw1 libelf1 libexpat1 libgcrypt20 libglib2.0-0
            libgpg-error0 liblz4-1 liblzma5 libpcre2-8-0 libselinux1 libsystemd0
            libudev1 libzstd1 zlib1g libusb-1.0-0 libbluetooth3)

# Host tools: command -> package.
declare -A HOST_TOOLS=(
  [qemu-system-x86_64]=qemu-system-x86
  [modprobe]=kmod
  [depmod]=kmod
  [cpio]=cpio
  [gcc]=gcc
  [pkg-config]=pkg-config
  [xz]=xz-utils          # newer kernels ship .ko.xz modules
)
# Headers for fixtures (checked by file, not by command).
declare -A HOST_FILES=(
  [/usr/include/libusb-1.0/libusb.h]=libusb-1.0-0-dev
  [/usr/include/bluetooth/rfcomm.h]=libbluetooth-dev
)

apt_updated=0
apt_update_once() {
  if [[ $apt_updated == 0 ]]; then
    log "apt-get update"
    apt-get update -qq >&2
    apt_updated=1
  fi
}

# --- host tools ------------------------------------------------------------
missing=()
for cmd in "${!HOST_TOOLS[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${HOST_TOOLS[$cmd]}")
done
for f in "${!HOST_FILES[@]}"; do
  [[ -e $f ]] || missing+=("${HOST_FILES[$f]}")
done
if ((${#missing[@]})); then
  # de-duplicate
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  apt_update_once
  log "installing host tools: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# --- guest payload ---------------------------------------------------------
# The stamp records which kernel was asked for, so changing TUNEUP_VM_KERNEL
# refetches instead of silently reusing the other kernel.
# Default: bookworm's 6.12. Its 6.1.0-56 oopses in hci_chan_del after a failed Bluetooth connection, which would
# hang every later Bluetooth step (see /tools/vm/README.md).
want_kernel=${TUNEUP_VM_KERNEL:-linux-image-6.12-amd64}
if [[ -e $CACHE/fetched.ok && $(cat "$CACHE/fetched.ok") == "$want_kernel" && -z ${TUNEUP_VM_REFRESH:-} ]]; then
  log "cache is complete: $CACHE ($want_kernel)"
  exit 0
fi

apt_update_once
# A refresh starts from an empty debs/ so newer versions replace the old ones.
[[ -n ${TUNEUP_VM_REFRESH:-} ]] && rm -rf "$CACHE/debs"
mkdir -p "$CACHE/debs"
# `apt-cache depends` prints "  Depends: linux-image-6.1.0-NN-amd64".
# A meta package (linux-image-amd64, linux-image-6.12-amd64) is followed to the
# versioned image package it depends on.
kpkg=$want_kernel
dep=$(apt-cache depends "$kpkg" | awk '/Depends: linux-image-/ {print $2; exit}')
kpkg=${dep:-$kpkg}
log "kernel package: $kpkg"

# apt-get download writes into the current directory; it skips nothing, so
# only ask for packages whose .deb is not already there.
cd "$CACHE/debs"
want=()
for p in "$kpkg" "${GUEST_PKGS[@]}"; do
  compgen -G "${p}_*.deb" >/dev/null || want+=("$p")
done
if ((${#want[@]})); then
  log "downloading: ${want[*]}"
  # APT::Sandbox::User=root: the cache is root's, so the _apt user could not write it.
  apt-get download -q -o APT::Sandbox::User=root "${want[@]}" >&2
fi

# Unpack into a fresh root so a refresh never mixes two kernel versions.
rm -rf "$CACHE/root.new"
mkdir -p "$CACHE/root.new"
for p in "$kpkg" "${GUEST_PKGS[@]}"; do
  deb=$(ls -t "${p}"_*.deb | head -n1)
  log "unpacking $deb"
  dpkg-deb -x "$deb" "$CACHE/root.new"
done
rm -rf "$CACHE/root"
mv "$CACHE/root.new" "$CACHE/root"

kver=$(ls "$CACHE/root/lib/modules" | head -n1)
vmlinuz="$CACHE/root/boot/vmlinuz-$kver"
[[ -f $vmlinuz ]] || { log "no kernel image at $vmlinuz"; exit 1; }
# The .deb has no modules.dep (its postinst would run depmod): make one so
# `modprobe -d ROOT -S VERSION --show-depends` works on the unpacked tree.
depmod -b "$CACHE/root" "$kver"
cat >"$CACHE/kernel.env" <<EOF
KVER=$kver
VMLINUZ=$vmlinuz
MODROOT=$CACHE/root
EOF
echo "$want_kernel" >"$CACHE/fetched.ok"
log "done: kernel $kver in $CACHE"
