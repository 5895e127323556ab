extension AppManifest {
    /// A simulated application payload: the manifest, then deterministic filler up to `size` bytes.
    ///
    /// The filler is a SplitMix64 stream from `seed`, so the same manifest, size and seed always give the same
    /// bytes. When `size` is smaller than the encoded manifest the result is just the manifest.
    public static func buildPayload(_ manifest: AppManifest, size: Int, seed: UInt64) -> [UInt8] {
        var out = manifest.encoded()
        let fill = max(0, size - out.count)
        guard fill > 0 else { return out }
        var state = seed
        let filler = [UInt8](unsafeUninitializedCapacity: fill) { buffer, initialized in
            var i = 0
            while i < fill {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                for k in 0..<min(8, fill - i) { buffer[i + k] = UInt8(truncatingIfNeeded: z >> UInt64(8 * k)) }
                i += 8
            }
            initialized = fill
        }
        out += filler
        return out
    }

    /// The factory application (the one the simulated headset ships with): version 1.4.2, model TS-1, product
    /// "Tuneup Sim Headset", 10 bands 31 Hz...16 kHz, -10...+10 dB, presets Music/Movie/Voice/User with the
    /// simulator's factory gains (`GraphicEQState.factoryPresets`), 8 ambient steps.
    public static let factory = AppManifest(
        version: "1.4.2", model: "TS-1", product: "Tuneup Sim Headset",
        bandFrequencies: [31, 62, 125, 250, 500, 1000, 2000, 4000, 8000, 16000],
        minGain: -10, maxGain: 10,
        presets: [
            Preset(name: "Music", gains: [4, 3, 2, 0, -1, -1, 0, 2, 3, 4]),
            Preset(name: "Movie", gains: [5, 4, 2, 0, 0, 1, 2, 1, 0, -1]),
            Preset(name: "Voice", gains: [-4, -3, -2, 0, 2, 4, 5, 4, 1, -2]),
            Preset(name: "User", gains: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ],
        ambientSteps: 8)
}
