#!/usr/bin/env bash
# Builds the Speaker protocol fuzzer (control deframer + message decoder, audio and discovery datagram decoders) with
# libFuzzer and runs it.
#   tools/fuzz/speaker/run.sh [SECONDS]   (default 60; 0 = until stopped)
# Crashes are written to tools/fuzz/speaker/crash-*; reproduce with: tools/fuzz/speaker/fuzz-speaker CRASH-FILE, then
# keep the input in tools/fuzz/speaker/regressions/ (see ../README.md) so that `swift test` replays it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
seconds=${1:-60}
binary="$here/fuzz-speaker"

swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name SpeakerFuzz \
    "$root"/Sources/Failure/*.swift "$root"/Sources/Speaker/*.swift "$root/Tests/SpeakerTests/SpeakerReplay.swift" \
    "$here/FuzzSpeaker.swift" \
    -o "$binary"

mkdir -p "$here/corpus"
# Seed the corpus with valid traffic and the kept hostile inputs.
if [ -z "$(ls -A "$here/corpus")" ]; then
    cp "$here"/seeds/* "$here"/regressions/* "$here/corpus/"
fi
# 8192: room for a maximal control frame (4110 bytes) with others around it.
args=(-max_len=8192 -print_final_stats=1 -artifact_prefix="$here/crash-")
[ "$seconds" != 0 ] && args+=(-max_total_time="$seconds")
SWIFT_BACKTRACE=enable=no "$binary" "${args[@]}" "$here/corpus"
