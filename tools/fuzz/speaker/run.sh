#!/usr/bin/env bash
# Builds the Speaker protocol fuzzer (control deframer + message decoder, audio and discovery datagram decoders) with
# libFuzzer and runs it.
#   tools/fuzz/speaker/run.sh [SECONDS]   (default 60; 0 = until stopped)
# Crashes are written to tools/fuzz/speaker/crash-*; reproduce with: tools/fuzz/speaker/fuzz-speaker CRASH-FILE, then
# keep the input in tools/fuzz/speaker/regressions/ (see ../README.md) so that `swift test` replays it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
# Speaker imports CFLAC (FLAC audio datagrams through libFLAC): its C file compiled here, its module map by -I; and
# CZlib (zlib's CRC-32), a module map by -I over the system's libz.
obj="${TMPDIR:-/tmp}/tuneup-fuzz-cflac.o"
clang -c -O1 -fsanitize=fuzzer-no-link,address -I "$root/Sources/CFLAC/include" "$root/Sources/CFLAC/flac.c" -o "$obj"
# 8192: room for a maximal control frame (4110 bytes) with others around it.
exec "$here/../fuzz.sh" "$here" speaker Speaker Tests/SpeakerTests/SpeakerReplay.swift "$here/FuzzSpeaker.swift" 8192 "${1:-60}" \
    -I "$root/Sources/CFLAC/include" -I "$root/Sources/CZlib" "$obj" -lFLAC -lz
