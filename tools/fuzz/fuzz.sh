#!/usr/bin/env bash
# Builds one libFuzzer harness of the project and runs it: the shared part of tools/fuzz/run.sh,
# tools/fuzz/wearable/run.sh and tools/fuzz/speaker/run.sh.
#   fuzz.sh DIR NAME TARGET REPLAY HARNESS MAX_LEN SECONDS [EXTRA SWIFTC ARGS...]
# DIR holds seeds/ and regressions/ (they seed DIR/corpus on first use); the binary is DIR/fuzz-NAME; Sources/Failure,
# Sources/TARGET, the test target's REPLAY file (the checks `swift test` replays the kept inputs through) and HARNESS
# are compiled with -sanitize=fuzzer,address. Crashes go to DIR/crash-*; SECONDS 0 runs until stopped.
set -euo pipefail
dir=$1 name=$2 target=$3 replay=$4 harness=$5 max_len=$6 seconds=$7
shift 7
root=$(cd "$(dirname "$0")/../.." && pwd)
binary="$dir/fuzz-$name"

swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name "${target}Fuzz" -package-name tuneup \
    "$root"/Sources/Failure/*.swift "$root"/Sources/"$target"/*.swift "$root/$replay" "$harness" \
    "$@" -o "$binary"

mkdir -p "$dir/corpus"
if [ -z "$(ls -A "$dir/corpus")" ]; then
    cp "$dir"/seeds/* "$dir"/regressions/* "$dir/corpus/"
fi
args=(-max_len="$max_len" -print_final_stats=1 -artifact_prefix="$dir/crash-")
[ "$seconds" != 0 ] && args+=(-max_total_time="$seconds")
SWIFT_BACKTRACE=enable=no "$binary" "${args[@]}" "$dir/corpus"
