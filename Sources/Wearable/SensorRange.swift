/// A sensor's scaling: its raw i16 range and the physical range it maps to (SensorInformation's minScaled,
/// maxScaled, minRaw, maxRaw). Both ranges have min below max, so scaling is defined and invertible.
///
/// The mapping is the SDK's, linear through the two ranges:
///
///     value = (raw - minRaw) * (maxScaled - minScaled) / (maxRaw - minRaw) + minScaled
///
/// computed with the product exact (in integers) and one rounding for the division, so a value is reproducible bit
/// for bit. Raw integers outside minRaw...maxRaw scale along the same line.
public struct SensorRange: Sendable, Hashable {
    /// The physical value of `minRaw`.
    public let minScaled: Int16
    /// The physical value of `maxRaw`.
    public let maxScaled: Int16
    /// The raw integer of `minScaled`.
    public let minRaw: Int16
    /// The raw integer of `maxScaled`.
    public let maxRaw: Int16

    /// Throws `.invalidRange` unless `minScaled < maxScaled` and `minRaw < maxRaw`.
    public init(minScaled: Int16, maxScaled: Int16, minRaw: Int16, maxRaw: Int16) throws(WearableError) {
        guard minScaled < maxScaled, minRaw < maxRaw else {
            throw WearableError(.invalidRange, "sensor range: scaled \(minScaled)...\(maxScaled), raw \(minRaw)...\(maxRaw): "
                + "min must be below max in both", category: .usage)
        }
        self.minScaled = minScaled
        self.maxScaled = maxScaled
        self.minRaw = minRaw
        self.maxRaw = maxRaw
    }

    private var scaledSpan: Int { Int(maxScaled) - Int(minScaled) }
    private var rawSpan: Int { Int(maxRaw) - Int(minRaw) }

    /// The physical value of `raw` (in the sensor's unit: g, degrees per second, ...).
    public func value(raw: Int16) -> Double {
        Double((Int(raw) - Int(minRaw)) * scaledSpan) / Double(rawSpan) + Double(minScaled)
    }

    /// The raw integer whose value is nearest to `value` (the inverse of `value(raw:)`: `raw(value(raw: r)) == r`
    /// for every r). Throws `.valueOutOfRange` when `value` is not finite or its raw integer does not fit an i16.
    public func raw(_ value: Double) throws(WearableError) -> Int16 {
        guard value.isFinite else {
            throw WearableError(.valueOutOfRange, "sensor range: \(value) has no raw value", category: .usage)
        }
        let exact = (value - Double(minScaled)) * Double(rawSpan) / Double(scaledSpan) + Double(minRaw)
        let rounded = exact.rounded()
        guard rounded >= Double(Int16.min), rounded <= Double(Int16.max) else {
            throw WearableError(.valueOutOfRange, "sensor range: \(value) is raw \(rounded), outside the i16 range "
                + "(scaled \(minScaled)...\(maxScaled) is raw \(minRaw)...\(maxRaw))", category: .usage)
        }
        return Int16(rounded)
    }

    /// The physical value of one raw step.
    public var resolution: Double { Double(scaledSpan) / Double(rawSpan) }
}
