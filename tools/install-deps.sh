#!/usr/bin/env bash
# Installs the system packages the project needs (Debian). Does nothing when they are already there.
set -euo pipefail
# librsvg2-bin: 'tuneup wearable plot' converts its SVG to PNG with rsvg-convert.
# chromium: the hub's control page is tested in a real headless browser (Tests/SpeakerHubTests/HubPageTests).
# libsndfile, libsoxr, libcurl: the speakers' audio input (decoding, resampling, web streams).
# libzint-dev: the station's unit labels (barcodes); zbar-tools, dmtx-utils: the tests read the label previews back.
# libasound2-dev: 'tuneup speaker receive' plays to the sound card through ALSA (tests use its file plugin, no card).
# libqpid-proton11-dev: IPC-CFX over AMQP 1.0 (the station's publisher); rabbitmq-server, python3-qpid-proton: the
# broker and the consumer of the CFX tests and benchmark.
packages=(pkg-config libusb-1.0-0-dev libbluetooth-dev umockdev libsqlite3-dev postgresql librsvg2-bin chromium
          libsndfile1-dev libsoxr-dev libcurl4-openssl-dev libzint-dev zbar-tools dmtx-utils libasound2-dev
          libqpid-proton11-dev rabbitmq-server python3-qpid-proton)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# imgtool (MCUboot's image tool, PyPI) for the firmware-image interop tests (Tests/FirmwareTests).
if ! command -v imgtool >/dev/null 2>&1; then
    echo "== installing imgtool (pip)"
    python3 -m pip install --quiet imgtool 2>/dev/null || python3 -m pip install --quiet --user --break-system-packages imgtool
fi
