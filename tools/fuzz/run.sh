#!/usr/bin/env bash
# Builds the LightX stream-decoder fuzzer with libFuzzer and runs it.
#   tools/fuzz/run.sh [SECONDS]   (default 60; 0 = until stopped)
# Crashes are written to tools/fuzz/crash-*; reproduce with: tools/fuzz/fuzz-lightx tools/fuzz/crash-XXXX, then keep
# the input in tools/fuzz/regressions/ (see README.md) so that `swift test` replays it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
binary="$here/fuzz-lightx"

swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name LightXFuzz \
    "$root"/Sources/Failure/*.swift "$root"/Sources/LightX/*.swift "$root/Tests/LightXTests/DecoderReplay.swift" \
    "$here/FuzzStreamDecoder.swift" \
    -o "$binary"

mkdir -p "$here/corpus"
# Seed the corpus with valid frames (real traffic) and the kept hostile inputs.
if [ -z "$(ls -A "$here/corpus")" ]; then
    cp "$here"/seeds/* "$here"/regressions/* "$here/corpus/"
fi
args=(-max_len=4096 -print_final_stats=1 -artifact_prefix="$here/crash-")
[ "$seconds" != 0 ] && args+=(-max_total_time="$seconds")
SWIFT_BACKTRACE=enable=no "$binary" "${args[@]}" "$here/corpus"
