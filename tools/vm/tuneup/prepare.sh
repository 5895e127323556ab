#!/usr/bin/env bash
# Host side of the tuneup end-to-end scenario: the tuneup for the guest (the guest has no Swift toolchain: tuneup
# links the Swift runtime statically, and the system libraries it links — libusb, libudev, libbluetooth, ... — come
# along through ldd; libsndfile, libsoxr and libcurl are dlopen'd by the audio commands only, which the guest does not
# run) and the list of what goes into the guest.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
# The tuneup its tests ran (TUNEUP_GUEST_BINARY), else a static release build of its own.
binary=$("$root/tools/vm/tuneup/guest-binary.sh")
strip -o "$out/tuneup" "$binary"
echo "$out/tuneup:/usr/bin/tuneup"
for f in app-1.5.0.img app-2.0.0.img dev-public.pem; do echo "$root/firmware-images/$f:/images/$f"; done
# The station's recipe, with the images it names where its relative paths lead (../firmware-images).
echo "$root/recipes/sim-headset.yaml:/recipes/sim-headset.yaml"
for f in app-1.5.0.img resource-1.0.0.img dev-public.pem; do echo "$root/firmware-images/$f:/firmware-images/$f"; done
