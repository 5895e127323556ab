#!/usr/bin/env bash
# Builds the tuneup that goes into the guest: the debug build tools/test.sh has already made (a no-op then), linked
# to the Swift runtime's shared libraries, which build-initramfs.sh copies into the guest with the others it finds
# through ldd (the guest has no Swift toolchain). The guest runs what the tests ran; a release build of its own
# would cost CI a second cold build of everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
swift build --product tuneup
