#!/usr/bin/env bash
# Host side of the usbmon scenario: the usbmon reader (C, static), the tuneup the guest runs (as tools/vm/tuneup:
# TUNEUP_GUEST_BINARY, else a static release build), the image and key it flashes, and the D-Bus configuration of
# bluetoothd (the SDP server of the RFCOMM simulator).
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
gcc -O2 -Wall -Werror -static -o "$out/usbmon-pcap" "$here/src/usbmon-pcap.c" >&2
echo "$out/usbmon-pcap:/usr/bin/usbmon-pcap"
binary=$("$root/tools/vm/tuneup/guest-binary.sh")
strip -o "$out/tuneup" "$binary"
echo "$out/tuneup:/usr/bin/tuneup"
for f in app-1.5.0.img dev-public.pem; do echo "$root/firmware-images/$f:/images/$f"; done
echo "$root/tools/vm/tuneup/dbus-system.conf:/etc/tuneup-dbus-system.conf"
