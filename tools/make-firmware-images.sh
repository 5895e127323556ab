#!/usr/bin/env bash
# Builds firmware-images/: signed application images for the simulated headset (older, current = factory, newer,
# a new major with 8 bands, a small one for power-cut sweeps), a signed resource image, and deliberately broken
# images for tests. Everything is deterministic: the keys are committed, payload filler is seeded and Ed25519
# signatures are deterministic, so running this again reproduces the same bytes (check with git status).
#
# Usage: tools/make-firmware-images.sh            builds tuneup (debug) and uses it
#        TUNEUP=/path/to/tuneup tools/make-firmware-images.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=firmware-images
manifests=$out/manifests

if [ -n "${TUNEUP:-}" ]; then
    tuneup=$TUNEUP
else
    echo "== building tuneup"
    swift build --product tuneup
    tuneup="$(swift build --show-bin-path)/tuneup"
fi

key=$out/test-only-dev-private.pem      # DevelopmentKeys.testOnlySigningKey (Sources/Firmware/DevelopmentKeys.swift)
other=$out/test-only-other-private.pem  # an unrelated key, for the "signed by another key" image
if [ ! -f "$key" ]; then
    echo "warning: $key is missing; generating a new one: paste it into Sources/Firmware/DevelopmentKeys.swift" >&2
    $tuneup image keygen -o "$key" --public-out "$out/dev-public.pem"
fi
[ -f "$other" ] || $tuneup image keygen -o "$other"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$manifests"

# --- manifests: what the simulated MCU reads at boot ---------------------------------------------------------
# manifest FILE VERSION PRODUCT EXTRA_PRESET(0/1) [MODEL]: the factory layout (10 bands, -10...+10 dB).
manifest() {
    local file=$1 version=$2 product=$3 bass=$4 model=${5:-TS-1}
    local extra=""
    [ "$bass" = 1 ] && extra=',
    { "name": "Bass Boost", "gains": [6, 5, 4, 2, 0, 0, 0, 0, 0, 0] }'
    cat > "$file" <<EOF
{
  "version": "$version",
  "model": "$model",
  "product": "$product",
  "bandFrequencies": [31, 62, 125, 250, 500, 1000, 2000, 4000, 8000, 16000],
  "minGain": -10,
  "maxGain": 10,
  "presets": [
    { "name": "Music", "gains": [4, 3, 2, 0, -1, -1, 0, 2, 3, 4] },
    { "name": "Movie", "gains": [5, 4, 2, 0, 0, 1, 2, 1, 0, -1] },
    { "name": "Voice", "gains": [-4, -3, -2, 0, 2, 4, 5, 4, 1, -2] },
    { "name": "User", "gains": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0] }$extra
  ],
  "ambientSteps": 8
}
EOF
}
manifest "$manifests/app-1.3.0.json" 1.3.0 "Tuneup Sim Headset" 0
manifest "$manifests/app-1.4.2.json" 1.4.2 "Tuneup Sim Headset" 0          # = AppManifest.factory
manifest "$manifests/app-1.4.3.json" 1.4.3 "Tuneup Sim Headset" 0
manifest "$manifests/app-1.5.0.json" 1.5.0 "Tuneup Sim Headset Pro" 1
manifest "$manifests/app-1.5.0-ts9.json" 1.5.0 "Tuneup Sim Headset Pro" 1 TS-9
manifest "$manifests/app-1.6.0.json" 1.6.0 "Tuneup Sim Headset Pro" 1
cat > "$manifests/app-2.0.0.json" <<'EOF'
{
  "version": "2.0.0",
  "model": "TS-1",
  "product": "Tuneup Sim Headset Pro",
  "bandFrequencies": [62, 125, 250, 500, 1000, 2000, 4000, 8000],
  "minGain": -12,
  "maxGain": 12,
  "presets": [
    { "name": "Music", "gains": [3, 2, 0, -1, -1, 0, 2, 3] },
    { "name": "Movie", "gains": [4, 2, 0, 0, 1, 2, 1, 0] },
    { "name": "Voice", "gains": [-3, -2, 0, 2, 4, 5, 4, 1] },
    { "name": "User", "gains": [0, 0, 0, 0, 0, 0, 0, 0] },
    { "name": "Bass Boost", "gains": [8, 6, 3, 0, 0, 0, 0, 0] }
  ],
  "ambientSteps": 10
}
EOF

# --- helpers ------------------------------------------------------------------------------------------------
# app OUTPUT MANIFEST SIZE SEED: build-sim-app, then sign with the development key (version, model and region
# app come from the manifest).
app() {
    local output=$1 manifest=$2 size=$3 seed=$4
    $tuneup image build-sim-app --manifest "$manifest" --size "$size" --seed "$seed" -o "$work/payload.bin" >/dev/null
    $tuneup image sign "$work/payload.bin" -o "$output" --key "$key" >/dev/null
}
# flip FILE OFFSET: XOR one byte with 0x01 in place.
flip() {
    local file=$1 offset=$2
    local byte
    byte=$(od -An -tu1 -j "$offset" -N1 "$file" | tr -d ' ')
    printf "\\$(printf %03o $((byte ^ 1)))" | dd of="$file" bs=1 seek="$offset" conv=notrunc status=none
}

# --- good images --------------------------------------------------------------------------------------------
echo "== signed application images"
app "$out/app-1.3.0.img" "$manifests/app-1.3.0.json" 96KiB 130
app "$out/app-1.4.2.img" "$manifests/app-1.4.2.json" 64KiB 4295229442   # = SampleImages.factoryApplication
#   (the simulator's factory image: same payload size and seed as Sources/HeadsetSimulator/Firmware/FactoryFirmware.swift)
app "$out/app-1.5.0.img" "$manifests/app-1.5.0.json" 160KiB 150
app "$out/app-2.0.0.img" "$manifests/app-2.0.0.json" 192KiB 200
app "$out/app-1.4.3-small.img" "$manifests/app-1.4.3.json" 5KiB 143      # 2 sectors: power-cut sweeps
echo "== resource image"
(yes "Tuneup Sim resource bank: voice prompts, tones and language packs." || true) | head -c 65536 > "$work/resource.bin"
$tuneup image sign "$work/resource.bin" -o "$out/resource-1.0.0.img" --key "$key" --version 1.0.0 --model TS-1 --region resource >/dev/null
echo "== raw payloads (no region, no signature)"
$tuneup image build-sim-app --manifest "$manifests/app-1.5.0.json" --size 32KiB --seed 151 -o "$out/raw-app-1.5.0-no-region.bin" >/dev/null
$tuneup image build-sim-app --manifest "$manifests/app-1.4.3.json" --size 5KiB --seed 143 -o "$out/raw-app-1.4.3-small.hex" >/dev/null

# --- deliberately broken images (all based on a 32 KiB 1.5.0 application) ----------------------------------
echo "== broken images"
base=$work/broken-base.img
app "$base" "$manifests/app-1.5.0.json" 32KiB 151
size=$(stat -c %s "$base")
head -c $((size / 2)) "$base" > "$out/broken-truncated.img"                  # cut in the middle of the payload
cp "$base" "$out/broken-bad-hash.img";      flip "$out/broken-bad-hash.img" $((0x200 + 4096))  # a payload byte
cp "$base" "$out/broken-bad-signature.img"; flip "$out/broken-bad-signature.img" $((size - 1)) # last signature byte
$tuneup image sign "$out/raw-app-1.5.0-no-region.bin" -o "$out/broken-other-key.img" --key "$other" >/dev/null
$tuneup image sign "$out/raw-app-1.5.0-no-region.bin" -o "$out/broken-unsigned.img" --unsigned >/dev/null
app "$out/broken-other-model.img" "$manifests/app-1.5.0-ts9.json" 32KiB 152
# Too large for the 512 KiB application region: a valid, signed 1.6.0 whose payload is padded with zeros (so git
# stores it compressed to a few KiB).
$tuneup image build-sim-app --manifest "$manifests/app-1.6.0.json" --size 4KiB --seed 160 -o "$work/large.bin" >/dev/null
truncate -s 540000 "$work/large.bin"
$tuneup image sign "$work/large.bin" -o "$out/broken-too-large.img" --key "$key" 2>/dev/null >/dev/null

echo "== checking"
$tuneup image verify "$out/app-1.5.0.img" --key "$out/dev-public.pem"
for f in broken-truncated broken-bad-hash broken-bad-signature broken-other-key broken-unsigned broken-too-large; do
    if $tuneup image verify "$out/$f.img" --key "$out/dev-public.pem" 2>/dev/null; then
        echo "error: $f.img verified" >&2
        exit 1
    fi
done
ls -l "$out"
du -sh "$out"
