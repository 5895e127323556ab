#!/usr/bin/env bash
# The main job on the built-in simulated headset ('sim'): build tuneup, probe the headset, flash a newer signed
# firmware image with a live progress bar (verified, committed, rebooted, confirmed), and probe it again.
# Safe to run again: the simulated headset keeps its flash and settings in ~/.local/state/tuneup/, and a second
# run finds 1.5.0 already installed and says so (tuneup flash --force would write it again).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
echo "== building tuneup (release)"
swift build -c release --product tuneup
tuneup=.build/release/tuneup
set -x
$tuneup probe
$tuneup flash firmware-images/app-1.5.0.img --key firmware-images/dev-public.pem
$tuneup probe
$tuneup eq info
