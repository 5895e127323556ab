#!/usr/bin/env bash
# Builds the LightX stream-decoder fuzzer with libFuzzer and runs it.
#   tools/fuzz/run.sh [SECONDS]   (default 60; 0 = until stopped)
# Crashes are written to tools/fuzz/crash-*; reproduce with: tools/fuzz/fuzz-lightx tools/fuzz/crash-XXXX, then keep
# the input in tools/fuzz/regressions/ (see README.md) so that `swift test` replays it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/fuzz.sh" "$here" lightx LightX Tests/LightXTests/DecoderReplay.swift "$here/FuzzStreamDecoder.swift" 4096 "${1:-60}"
