#!/usr/bin/env bash
# The project's test command: builds everything and runs the unit and integration tests.
# With CI=true (as in .ci/run) it also fuzzes the LightX stream decoder for 60 seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== swift build (debug, with tests)"
swift build --build-tests
echo "== swift test"
swift test --skip-build --parallel

if [ "${CI:-}" = "true" ]; then
    echo "== fuzzing the LightX stream decoder (60 s)"
    tools/fuzz/run.sh 60
fi
echo "== all tests passed"
