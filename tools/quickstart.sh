#!/usr/bin/env bash
# Builds tuneup and runs it against the built-in simulated headset ('sim').
# Safe to run again: the simulated headset keeps its settings in ~/.local/state/tuneup/.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
echo "== building tuneup (release)"
swift build -c release --product tuneup
tuneup=.build/release/tuneup
set -x
$tuneup probe
$tuneup anc on
$tuneup ambient set --left 5 --right 4
$tuneup eq preset movie
$tuneup probe --format json
