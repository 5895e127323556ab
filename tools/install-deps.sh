#!/usr/bin/env bash
# Installs the system packages the project needs (Debian). Does nothing when they are already there.
#   tools/install-deps.sh [build|runtime|all]   (default all)
# build: what compiling needs (headers, pkg-config). runtime: what only the tests and the tools they drive need, so
# that tools/test.sh can install it while the build computes.
set -euo pipefail
# libusb, libbluetooth, libsqlite3: the transports and the records.
# libsndfile, libsoxr, libcurl: the speakers' audio input (decoding, resampling, web streams).
# libzint-dev: the station's unit labels (barcodes).
# libasound2-dev: 'tuneup speaker receive' plays to the sound card through ALSA (tests use its file plugin, no card).
# libqpid-proton11-dev: IPC-CFX over AMQP 1.0 (the station's publisher).
# libflac-dev: the speakers' FLAC audio datagrams (CFLAC links libFLAC; docs/speaker-protocol.md §7.2).
# zlib1g-dev: the speaker protocol's CRC-32 (CZlib).
build_packages=(pkg-config libusb-1.0-0-dev libbluetooth-dev libsqlite3-dev libsndfile1-dev libsoxr-dev
                libcurl4-openssl-dev libzint-dev libasound2-dev libqpid-proton11-dev libflac-dev zlib1g-dev)
# umockdev: the USB tests' recorded devices. postgresql: throwaway servers of the records' tests.
# librsvg2-bin: 'tuneup wearable plot' converts its SVG to PNG with rsvg-convert.
# chromium: the hub's control page, the operator page and the line dashboard are tested in a real headless browser.
# zbar-tools, dmtx-utils: the tests read the label previews back.
# rabbitmq-server, python3-qpid-proton: the broker and the consumer of the CFX tests and benchmark.
# gdb: a test that gives up on a `tuneup` that did not finish reports its threads' stacks (TestSupport's HangReport).
# snapserver, snapclient: 'tuneup-bench speaker-vs-snapcast' runs Snapcast beside the speakers (it starts its own).
# dpkg-dev, chrpath, lintian: tools/package.sh builds the Debian package (dpkg-shlibdeps computes its Depends, chrpath
# drops the binary's RUNPATH) and lintian checks it (docs/packaging.md).
# mmdebstrap: the package is proven on a clean Debian 12 root it makes (tools/packaging/clean-root-test.sh).
# tshark: the Wireshark dissectors (tools/wireshark) are checked against the project's own decoding of captures.
# binutils: readelf, for the test of what the CLI links (LinkedLibrariesTests), and strip for the package.
runtime_packages=(umockdev postgresql librsvg2-bin chromium zbar-tools dmtx-utils rabbitmq-server python3-qpid-proton
                  gdb snapserver snapclient dpkg-dev chrpath lintian mmdebstrap tshark binutils)

case "${1:-all}" in
    build) packages=("${build_packages[@]}") ;;
    runtime) packages=("${runtime_packages[@]}") ;;
    all) packages=("${build_packages[@]}" "${runtime_packages[@]}") ;;
    *) echo "usage: tools/install-deps.sh [build|runtime|all]" >&2; exit 64 ;;
esac
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    # Services a package would start (snapserver, snapclient) are not started: a policy-rc.d that denies every
    # start while apt runs (invoke-rc.d and deb-systemd-invoke ask it; a container without systemd has one already).
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
        $sudo chmod 755 "$policy"
        trap '$sudo rm -f "$policy"' EXIT
    fi
    # tshark asks whether non-root users may capture: no (the tests only read files).
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
    # Nor enabled at boot where systemd runs (the benchmark starts its own on free ports).
    if [ -d /run/systemd/system ]; then
        for service in snapserver snapclient; do
            $sudo systemctl disable --now "$service" >/dev/null 2>&1 || true
        done
    fi
fi
# imgtool (MCUboot's image tool, PyPI) for the firmware-image interop tests (Tests/FirmwareTests).
if [ "${1:-all}" != build ] && ! command -v imgtool >/dev/null 2>&1; then
    echo "== installing imgtool (pip)"
    python3 -m pip install --quiet imgtool 2>/dev/null || python3 -m pip install --quiet --user --break-system-packages imgtool
fi
# snapcast (PyPI), the control client Home Assistant's Snapcast integration uses: the hub's Snapcast control tests
# drive the hub and a real snapserver with it.
if [ "${1:-all}" != build ] && ! python3 -c 'import snapcast' >/dev/null 2>&1; then
    echo "== installing snapcast (pip)"
    python3 -m pip install --quiet snapcast==2.3.8 2>/dev/null || python3 -m pip install --quiet --user --break-system-packages snapcast==2.3.8
fi
