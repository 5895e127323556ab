#!/usr/bin/env bash
# Builds the Bose Wearable decoder fuzzer with libFuzzer and runs it.
#   tools/fuzz/wearable/run.sh [SECONDS]   (default 60; 0 = until stopped)
# Crashes are written to tools/fuzz/wearable/crash-*; reproduce with: tools/fuzz/wearable/fuzz-wearable CRASH, then keep
# the input in tools/fuzz/wearable/regressions/ (see tools/fuzz/README.md) so that `swift test` replays it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# -lm: SensorRange rounds with libm, which Foundation would otherwise bring in.
exec "$here/../fuzz.sh" "$here" wearable Wearable Tests/WearableTests/WearableReplay.swift "$here/FuzzWearable.swift" 1024 "${1:-60}" -lm
