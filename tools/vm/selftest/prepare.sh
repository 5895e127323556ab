#!/usr/bin/env bash
# Host side of the self-test scenario: build the C fixtures into OUTDIR and
# print SRC:DEST for each (e2e.sh turns them into --add, copying libusb along).
set -euo pipefail
out=$1
src=$(cd "$(dirname "$0")/src" && pwd)
cc() { gcc -O2 -Wall -Werror "$@" >&2; }
cc -static -o "$out/ffs-hid-device" "$src/ffs-hid-device.c"
# Debian's libusb-1.0.a would need a static libudev, which Debian does not ship:
# link libusb dynamically, build-initramfs.sh copies the .so from ldd.
cc -o "$out/hid-host" "$src/hid-host.c" $(pkg-config --cflags --libs libusb-1.0)
cc -static -o "$out/bt-rfcomm" "$src/bt-rfcomm.c"
for b in ffs-hid-device hid-host bt-rfcomm; do echo "$out/$b:/usr/bin/$b"; done
