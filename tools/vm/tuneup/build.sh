#!/usr/bin/env bash
# Builds the tuneup that goes into the guest: release, with the Swift runtime linked in (the guest has no Swift
# toolchain). Run by prepare.sh, and by tools/test.sh in the background from the start of a run, at idle priority.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
# No debug information: the guest's copy is stripped anyway (prepare.sh; a crash still names its functions), and
# leaving it out saves the compiler and the linker work in the build that CI runs beside everything else.
started=$(date +%s)
swift build -c release --static-swift-stdlib -debug-info-format none --product tuneup --scratch-path "$root/.build-static"
echo "guest build: $(( $(date +%s) - started )) s"
