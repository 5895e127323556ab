#!/usr/bin/env bash
# Builds the tuneup that goes into the guest: release, with the Swift runtime linked in (the guest has no Swift
# toolchain). Run by prepare.sh, and by tools/test.sh in the background from the start of a run, at idle priority.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
# No debug information: the guest needs none (a crash still names its functions), and leaving it out makes the build
# that CI runs beside everything else cheaper, the binary a third of the size and the initramfs quicker to pack.
started=$(date +%s)
swift build -c release --static-swift-stdlib -debug-info-format none --product tuneup --scratch-path "$root/.build-static"
echo "guest build: $(( $(date +%s) - started )) s"
