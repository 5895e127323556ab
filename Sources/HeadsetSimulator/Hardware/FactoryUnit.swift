import LightX
import Support
import Transport

/// A simulated production line: units fresh from assembly (`--blank`). Each unit has a unique chip uid and its own
/// microphone spread, both derived from `seed` and the unit's index only, so a line run is reproducible and has a
/// real yield.
public struct ProductionLine: Sendable, Hashable {
    /// Seed of the line: uids and spreads are functions of (seed, index).
    public var seed: UInt64
    /// The share (0...1) of units with a microphone so far off that its calibration correction exceeds
    /// `ProductionLine.correctionLimitDB`.
    public var failShare: Double
    /// The key 0x6A (factory unlock) takes.
    public var factoryKey: FactoryKey

    /// Creates a line; failShare is clamped to 0...1 (NaN is 0).
    public init(seed: UInt64 = 1, failShare: Double = 0, factoryKey: FactoryKey = .development) {
        self.seed = seed
        self.failShare = failShare.isNaN ? 0 : min(1, max(0, failShare))
        self.factoryKey = factoryKey
    }

    /// A good unit's corrections stay within ±3 dB; a failing unit has one microphone 6.01...9 dB off (beyond a
    /// ±6 dB limit too, such as `recipes/sim-headset.yaml`'s, inclusive or not). A test limit
    /// between the two (e.g. 4 dB) separates them.
    public static let correctionLimitDB = 4.0

    /// Unit `index` of this line.
    public func unit(_ index: Int) -> FactoryUnit { FactoryUnit(line: self, index: index) }
}

/// One unit of a `ProductionLine`: what the chip and the assembly fixed.
public struct FactoryUnit: Sendable, Hashable {
    /// The chip uid: 24-bit lot and 8-bit wafer from the seed, then a bijective scramble of the index, so two units
    /// of one line never share a uid.
    public let hardwareID: HardwareID
    /// Microphone sensitivity offsets in hundredths of a dB (feedforward L, R, feedback L, R).
    public let microphoneOffsets: [Int16]
    /// Whether the spread puts this unit outside the calibration limit.
    public let failsLimit: Bool
    /// The line's unlock key.
    public let factoryKey: FactoryKey
    /// Seed of this unit's measurement noise (from the line's seed and the index).
    let noiseSeed: UInt64

    init(line: ProductionLine, index: Int) {
        var lineRandom = SeededRandom(seed: line.seed)
        let lotAndWafer = lineRandom.next() & 0xFFFF_FFFF_0000_0000
        // Multiplying by an odd constant is a bijection modulo 2^32, so distinct indices give distinct uids.
        let position = (UInt32(truncatingIfNeeded: index) &* 0x9E37_79B1) ^ 0x5A5A_5A5A
        hardwareID = HardwareID(lotAndWafer | UInt64(position))
        // The unit's own generator: from a second draw of the line's (so nearby line seeds share nothing: a seed
        // XORed with the index made seeds 0...7 give one set of units in another order) and the index.
        let unitBase = lineRandom.next()
        var random = SeededRandom(seed: unitBase &+ UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15)
        func uniform() -> Double { Double(random.next() >> 11) / Double(1 << 53) }
        failsLimit = uniform() < line.failShare
        var offsets = (0..<4).map { _ -> Int16 in
            // Roughly normal (sum of three uniforms), σ ≈ 1 dB, clipped to ±3 dB.
            let x = (uniform() + uniform() + uniform() - 1.5) * 2
            return Int16(max(-300, min(300, (x * 100).rounded())))
        }
        if failsLimit {
            let mic = Int(random.next() % 4)
            let size = 601 + Int16(random.next() % 300)
            offsets[mic] = random.next() & 1 == 0 ? size : -size
        }
        microphoneOffsets = offsets
        factoryKey = line.factoryKey
        noiseSeed = random.next()
    }

    /// What the ANC calibration measures: the correction of each microphone (minus its offset).
    public var calibration: AncCalibration {
        let g = microphoneOffsets.map { -$0 }
        return AncCalibration(feedforwardLeft: g[0], feedforwardRight: g[1], feedbackLeft: g[2], feedbackRight: g[3])
    }

    // MARK: Measurements (extension 0x6B)

    /// A microphone's sensitivity before its offset, dBFS.
    public static let nominalSensitivityDBFS = -38.0
    /// The ANC attenuation of perfectly matched microphones, dB.
    public static let nominalAttenuationDB = 24.0
    /// Per-read measurement noise: uniform within ±this, dB.
    public static let noiseDB = 0.3

    /// What measurement `m` reads on this unit: `read` is the how-manieth measurement the unit takes (the noise is a
    /// function of the line's seed, the unit, `m` and `read`, so a retry can change a marginal value), `battery` the
    /// simulated battery level, `storedCalibration` what flash holds (the ANC applies only a stored calibration).
    ///
    /// - battery-level: the battery level, exact.
    /// - mic-sensitivity-left / -right: −38 dBFS + the feedforward microphone's offset + noise (±0.3 dB).
    /// - anc-attenuation: 24 dB − 2 × the largest residual mismatch of the four microphones − |noise|. A residual is
    ///   |offset + applied correction|; the ANC applies a stored correction up to ±`ProductionLine.correctionLimitDB`,
    ///   so a calibrated good unit reads about 24 dB, an uncalibrated one 24 − 2 × its largest |offset|, and a unit
    ///   of the fail share stays low even calibrated.
    public func measurement(_ m: FactoryMeasurement, read: UInt64, battery: UInt32, storedCalibration: AncCalibration?) -> Double {
        var random = SeededRandom(seed: noiseSeed ^ (UInt64(m.rawValue) << 56) ^ (read &* 0x9E37_79B9_7F4A_7C15))
        let noise = (random.nextUnit() * 2 - 1) * Self.noiseDB
        switch m {
        case .batteryLevel:
            return Double(battery)
        case .micSensitivityLeft:
            return Self.nominalSensitivityDBFS + Double(microphoneOffsets[0]) / 100 + noise
        case .micSensitivityRight:
            return Self.nominalSensitivityDBFS + Double(microphoneOffsets[1]) / 100 + noise
        case .ancAttenuation:
            let limit = Int(ProductionLine.correctionLimitDB * 100)
            let applied = storedCalibration?.gains ?? [0, 0, 0, 0]
            let residual = zip(microphoneOffsets, applied).map { offset, gain in
                abs(Int(offset) + max(-limit, min(limit, Int(gain))))
            }.max() ?? 0
            return Self.nominalAttenuationDB - 2 * Double(residual) / 100 - abs(noise)
        }
    }

    /// How long measurement `m` keeps the unit busy, before the time scale: battery 0.5, microphones 1, ANC 1.5 ×
    /// `base` (`DeviceTiming.factoryMeasurement`, 100 ms: 50...150 ms).
    static func measurementTime(_ m: FactoryMeasurement, base: Duration) -> Duration {
        switch m {
        case .batteryLevel: return base / 2
        case .micSensitivityLeft, .micSensitivityRight: return base
        case .ancAttenuation: return base * 3 / 2
        }
    }
}
