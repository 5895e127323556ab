#!/usr/bin/env bash
# Builds the Bose Wearable decoder fuzzer with libFuzzer and runs it.
#   tools/fuzz/wearable/run.sh [SECONDS]   (default 60; 0 = until stopped)
# Crashes are written to tools/fuzz/wearable/crash-*; reproduce with: tools/fuzz/wearable/fuzz-wearable CRASH, then keep
# the input in tools/fuzz/wearable/regressions/ (see tools/fuzz/README.md) so that `swift test` replays it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
seconds=${1:-60}
binary="$here/fuzz-wearable"

# -lm: SensorRange rounds with libm, which Foundation would otherwise bring in.
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name WearableFuzz \
    "$root"/Sources/Failure/*.swift "$root"/Sources/Wearable/*.swift "$root/Tests/WearableTests/WearableReplay.swift" \
    "$here/FuzzWearable.swift" \
    -lm -o "$binary"

mkdir -p "$here/corpus"
# Seed the corpus with valid payloads of every kind and the kept hostile inputs.
if [ -z "$(ls -A "$here/corpus")" ]; then
    cp "$here"/seeds/* "$here"/regressions/* "$here/corpus/"
fi
args=(-max_len=1024 -print_final_stats=1 -artifact_prefix="$here/crash-")
[ "$seconds" != 0 ] && args+=(-max_total_time="$seconds")
SWIFT_BACKTRACE=enable=no "$binary" "${args[@]}" "$here/corpus"
