#!/usr/bin/env bash
# Prints the path of the tuneup a scenario's guest runs: TUNEUP_GUEST_BINARY (tools/test.sh hands over the release
# build its tests ran; the Swift runtime's libraries come along through ldd), else a static release build of its own
# (built here, its output on stderr).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
if [ -n "${TUNEUP_GUEST_BINARY:-}" ]; then
    echo "$TUNEUP_GUEST_BINARY"
else
    "$root/tools/vm/tuneup/build.sh" >&2
    echo "$root/.build-static/release/tuneup"
fi
