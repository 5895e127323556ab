#!/usr/bin/env bash
# Builds the hub fuzzer (the HKWHub v1 API's query handling over model speakers: parsing, parameters, sessions,
# priorities, expiry, JSON answers; the WAV header reader) with libFuzzer and runs it.
#   tools/fuzz/hub/run.sh [SECONDS]   (default 60; 0 = until stopped)
# Crashes are written to tools/fuzz/hub/crash-*; reproduce with: tools/fuzz/hub/fuzz-hub CRASH-FILE, then keep the
# input in tools/fuzz/hub/regressions/ (see ../README.md) so that `swift test` replays it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
# SpeakerHubCore writes its answers with OrderedJSON, a module of its own: built first (instrumented like the rest),
# then imported and linked by the harness.
modules=$(mktemp -d)
trap 'rm -rf "$modules"' EXIT
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name OrderedJSON -package-name tuneup -wmo \
    -emit-module -emit-module-path "$modules/OrderedJSON.swiftmodule" -emit-object -o "$modules/OrderedJSON.o" \
    "$root"/Sources/OrderedJSON/*.swift
"$here/../fuzz.sh" "$here" hub SpeakerHubCore Tests/SpeakerHubTests/HubReplay.swift "$here/FuzzHub.swift" 4096 "${1:-60}" \
    -I "$modules" "$modules/OrderedJSON.o"
