#!/usr/bin/env bash
# Host side of the tuneup end-to-end scenario: build tuneup with the Swift runtime linked in (the guest has no
# Swift toolchain; libusb, libudev and libbluetooth come along through ldd) and list what goes into the guest.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
"$root/tools/vm/tuneup/build.sh" >&2   # a no-op when tools/test.sh built it already
strip -o "$out/tuneup" "$root/.build-static/release/tuneup"
echo "$out/tuneup:/usr/bin/tuneup"
for f in app-1.5.0.img app-2.0.0.img dev-public.pem; do echo "$root/firmware-images/$f:/images/$f"; done
# The station's recipe, with the images it names where its relative paths lead (../firmware-images).
echo "$root/recipes/sim-headset.yaml:/recipes/sim-headset.yaml"
for f in app-1.5.0.img resource-1.0.0.img dev-public.pem; do echo "$root/firmware-images/$f:/firmware-images/$f"; done
