#!/usr/bin/env bash
# Builds the tuneup that goes into the guest: release, with the Swift runtime linked in (the guest has no Swift
# toolchain). Run by prepare.sh, and by tools/test.sh ahead of time (in the background while the fuzzers run).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
swift build -c release --static-swift-stdlib --product tuneup --scratch-path "$root/.build-static"
