#!/usr/bin/env bash
# Build the guest initramfs (a gzip'd newc cpio) from the cache that fetch.sh filled.
#
# usage: build-initramfs.sh --scenario DIR [--out FILE] [--add SRC:DEST]... [--module NAME]...
#
#   --scenario DIR   copied to /scenario in the guest; /init runs `sh /scenario/run.sh`
#                    and powers off when it returns. (prepare.sh, if any, is left out:
#                    it is a host-side hook, see e2e.sh.)
#   --add SRC:DEST   copy a host file (or directory) to DEST in the guest. For ELF
#                    files every shared library `ldd` lists is copied too.
#                    Libraries opened with dlopen() are not seen by ldd: --add them.
#   --module NAME    load one more kernel module (with its dependencies) at boot.
#   --out FILE       default: $TUNEUP_VM_CACHE/initramfs.cpio.gz
#
# Guest layout: busybox (all applets as symlinks in /bin), the bluez/dbus tools
# below, usr-merged /lib -> usr/lib with the libraries, /lib/modules/<kver> with
# just the modules needed (re-indexed with depmod), /init, /scenario.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE="${TUNEUP_VM_CACHE:-$HOME/.cache/tuneup-vm}"
log() { echo "build-initramfs: $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ -e $CACHE/fetched.ok ]] || die "cache not ready, run $HERE/fetch.sh first"
# shellcheck source=/dev/null
source "$CACHE/kernel.env"   # KVER, VMLINUZ, MODROOT

# Kernel modules loaded at boot, in this order (dependencies come along).
MODULES=(
  # USB device side: dummy_hcd gives a UDC ("dummy_udc.0") wired to a virtual host
  # controller in the same kernel; libcomposite + usb_f_fs make configfs gadgets
  # with FunctionFS functions.
  dummy_hcd libcomposite usb_f_fs
  # USB host side: the HID class driver, so that a HID gadget really gets bound
  # by the kernel and libusb has to detach it.
  usbhid hid_generic
  # Bluetooth: virtual HCI (used by btvirt), RFCOMM sockets.
  hci_vhci bluetooth rfcomm
  # Crypto that btvirt's emulated controllers need through AF_ALG
  # (ecb(aes) for LE encryption, cmac(aes) for SMP). aes itself is built in.
  af_alg algif_skcipher algif_hash ecb cmac
)
# Binaries taken from the unpacked Debian packages (guest path = path in root/).
GUEST_BINS=(
  /usr/bin/btvirt        # virtual controllers: `btvirt -l2` -> hci0 + hci1
  /bin/hciconfig         # bring controllers up, read their bdaddr
  /usr/bin/btmon         # HCI trace, for debugging
  /usr/bin/sdptool       # SDP client (and `add` via bluetoothd --compat)
  /usr/sbin/bluetoothd   # the SDP server (needs dbus-daemon)
  /usr/bin/dbus-daemon
  /usr/bin/rfcomm-tester # BlueZ's own RFCOMM self-test, handy to tell rig from test bugs
  /usr/bin/gatttool      # BlueZ's ATT client: a third-party central for the BLE wearable
  /usr/bin/btmgmt        # management commands (LE on) without bluetoothd
)

scenario="" out="$CACHE/initramfs.cpio.gz"
adds=()
while (($#)); do
  case $1 in
    --scenario) scenario=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --add) adds+=("$2"); shift 2 ;;
    --module) MODULES+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ -n $scenario ]] || die "--scenario DIR is required"
[[ -f $scenario/run.sh ]] || die "$scenario/run.sh not found"

stage=$(mktemp -d "${TMPDIR:-/tmp}/tuneup-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# --- skeleton ---------------------------------------------------------------
mkdir -p "$stage"/{usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,etc,proc,sys,dev,tmp,run,var,root,scenario}
ln -s usr/bin "$stage/bin"
ln -s usr/sbin "$stage/sbin"
ln -s usr/lib "$stage/lib"
ln -s usr/lib64 "$stage/lib64"
ln -s ../run "$stage/var/run"
echo "root:x:0:0:root:/root:/bin/sh" >"$stage/etc/passwd"
echo "root:x:0:" >"$stage/etc/group"
# No ld.so.cache: Debian's loader searches /lib/x86_64-linux-gnu by default.

# --- busybox ------------------------------------------------------------------
cp "$MODROOT/bin/busybox" "$stage/usr/bin/busybox"
for applet in $("$MODROOT/bin/busybox" --list); do
  [[ -e $stage/usr/bin/$applet ]] || ln -s busybox "$stage/usr/bin/$applet"
done

# --- shared libraries ------------------------------------------------------------
# Libraries are looked up in the unpacked packages first, then on the host.
# libc/ld.so always come from the host (root/ has no libc6), so host-built
# binaries and Debian's binaries share one glibc, the host's.
CACHE_LIBPATH="$MODROOT/lib/x86_64-linux-gnu:$MODROOT/usr/lib/x86_64-linux-gnu"
copy_libs() {  # copy_libs ELF
  local elf=$1 line lib
  # ldd fails (exit 1) on static binaries and on non-ELF files: nothing to copy.
  local out
  out=$(LD_LIBRARY_PATH=$CACHE_LIBPATH ldd "$elf" 2>/dev/null) || return 0
  if grep -q 'not found' <<<"$out"; then
    die "$elf: missing libraries:"$'\n'"$(grep 'not found' <<<"$out")"
  fi
  while read -r line; do
    # "libfoo.so.1 => /path/libfoo.so.1 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
    lib=$(awk '{ if ($2 == "=>") print $3; else if ($1 ~ /^\//) print $1 }' <<<"$line")
    [[ -n $lib ]] || continue
    local name dest
    name=$(basename "$lib")
    if [[ $name == ld-linux-x86-64.so.2 ]]; then
      dest=$stage/usr/lib64/$name
    else
      dest=$stage/usr/lib/x86_64-linux-gnu/$name
    fi
    [[ -e $dest ]] || cp -L "$lib" "$dest"
  done <<<"$out"
}

add_file() {  # add_file SRC GUESTPATH
  local src=$1 dst=$2
  [[ -e $src ]] || die "no such file: $src"
  mkdir -p "$stage$(dirname "$dst")"
  if [[ -d $src ]]; then
    cp -a "$src/." "$stage$dst/"
    return
  fi
  cp -L "$src" "$stage$dst"
  copy_libs "$src"
}

for b in "${GUEST_BINS[@]}"; do
  add_file "$MODROOT$b" "$b"
done
mkdir -p "$stage/etc/bluetooth"   # bluetoothd reads main.conf from here (optional)
for spec in "${adds[@]}"; do
  [[ $spec == *:* ]] || die "--add wants SRC:DEST, got $spec"
  add_file "${spec%%:*}" "${spec#*:}"
done

# --- kernel modules -----------------------------------------------------------
kdir=lib/modules/$KVER
mkdir -p "$stage/usr/$kdir"
for m in "${MODULES[@]}"; do
  # Lines look like "insmod /path/to/mod.ko [params]" or "builtin NAME".
  modprobe -d "$MODROOT" -S "$KVER" --show-depends "$m" | while read -r kind path _; do
    [[ $kind == insmod ]] || continue
    rel=${path#"$MODROOT/"}
    mkdir -p "$stage/usr/$(dirname "$rel")"
    # Newer Debian kernels ship .ko.xz; busybox modprobe wants plain .ko.
    case $path in
      *.ko.xz) xz -dc "$path" >"$stage/usr/${rel%.xz}" ;;
      *.ko.zst) zstd -qdc "$path" >"$stage/usr/${rel%.zst}" ;;
      *) cp "$path" "$stage/usr/$rel" ;;
    esac
  done
done
cp "$MODROOT/$kdir"/modules.{builtin,builtin.modinfo,order} "$stage/usr/$kdir/"
depmod -b "$stage" "$KVER"
printf '%s\n' "${MODULES[@]}" >"$stage/etc/tuneup-modules"

# --- scenario -------------------------------------------------------------------
cp -a "$scenario/." "$stage/scenario/"
rm -f "$stage/scenario/prepare.sh"

# --- /init ------------------------------------------------------------------------
cat >"$stage/init" <<'EOF'
#!/bin/sh
# Generated by tools/vm/build-initramfs.sh.
export PATH=/usr/bin:/usr/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev   # also creates /dev/bus/usb/BBB/DDD for libusb
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
# Kernel messages would interleave with the scenario's lines on the console:
# keep only emergencies there (`dmesg` still has everything).
dmesg -n 1
ip link set lo up 2>/dev/null
for m in $(cat /etc/tuneup-modules); do
  modprobe "$m" || echo "init: modprobe $m failed"
done
grep -q " /sys/kernel/config " /proc/mounts || mount -t configfs configfs /sys/kernel/config
echo "TUNEUP-VM-BEGIN kernel $(uname -r) uptime $(cut -d' ' -f1 /proc/uptime)s"
cd /scenario
sh ./run.sh
rc=$?
[ $rc -eq 0 ] || echo "FAIL scenario: run.sh exited with status $rc"
echo "TUNEUP-VM-END rc=$rc uptime $(cut -d' ' -f1 /proc/uptime)s"
sync
poweroff -f
EOF
chmod +x "$stage/init"

mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
log "wrote $out ($(du -h "$out" | cut -f1))"
