/// The sensorInformation characteristic: one 12-byte entry per sensor the device lists, big-endian.
///
///     sensor id u8, minScaled i16, maxScaled i16, minRaw i16, maxRaw i16, available-periods mask u16,
///     sampleLength u8
///
/// The decoder is strict: a length that is not a whole number of entries, an unknown sensor id, a sensor listed
/// twice, a range that cannot scale, a period bit above 4 or a sample length that is not the sensor's sample all
/// throw. Entries keep their wire order, so `encoded()` gives back the same bytes.
public struct SensorInformation: Sendable, Hashable {
    /// The length of one entry.
    public static let entryLength = 12

    /// What the device says about one sensor.
    public struct Entry: Sendable, Hashable {
        /// The sensor.
        public var sensor: SensorType
        /// The scaling of its raw values.
        public var range: SensorRange
        /// The periods it can sample at (bit positions of the mask).
        public var availablePeriods: Set<SamplePeriod>

        /// What the device says about `sensor`.
        public init(sensor: SensorType, range: SensorRange, availablePeriods: Set<SamplePeriod>) {
            self.sensor = sensor
            self.range = range
            self.availablePeriods = availablePeriods
        }

        /// The length of one of its samples in a sensor data record (after id and timestamp); always the sensor's
        /// `sampleLength` (the decoder refuses any other).
        public var sampleLength: Int { sensor.sampleLength }
    }

    /// The entries in wire order, one per sensor.
    public let entries: [Entry]

    /// Throws `.duplicateEntry` when a sensor appears twice.
    public init(_ entries: [Entry]) throws(WearableError) {
        var seen = Set<SensorType>()
        for (i, e) in entries.enumerated() where !seen.insert(e.sensor).inserted {
            throw WearableError(.duplicateEntry, "sensor information: entry \(i) lists \(e.sensor) a second time", category: .usage)
        }
        self.entries = entries
    }

    /// The entry of `sensor`, or nil when the device does not list it.
    public subscript(sensor: SensorType) -> Entry? { entries.first { $0.sensor == sensor } }

    /// The listed sensors, in wire order.
    public var sensors: [SensorType] { entries.map(\.sensor) }

    /// Decodes the payload; throws `WearableError` as the type's description lists, never traps.
    public init(decoding bytes: ArraySlice<UInt8>) throws(WearableError) {
        let context = "sensor information"
        var entries: [Entry] = []
        try forEachEntry(in: bytes, size: Self.entryLength, context: context) { (r: inout WireReader, index: Int) throws(WearableError) in
            let sensor = try SensorType(id: try r.u8("sensor id"), in: r.context)
            let minScaled = try r.i16("min scaled"), maxScaled = try r.i16("max scaled")
            let minRaw = try r.i16("min raw"), maxRaw = try r.i16("max raw")
            let range: SensorRange
            do {
                range = try SensorRange(minScaled: minScaled, maxScaled: maxScaled, minRaw: minRaw, maxRaw: maxRaw)
            } catch {
                throw WearableError(.invalidRange, "\(r.context): \(sensor) scales raw \(minRaw)...\(maxRaw) to "
                    + "\(minScaled)...\(maxScaled); min must be below max in both")
            }
            let periods = try SamplePeriod.set(fromMask: try r.u16("available periods"), in: r.context)
            let sampleLength = try r.u8("sample length")
            guard Int(sampleLength) == sensor.sampleLength else {
                throw WearableError(.sampleLengthMismatch, "\(r.context): \(sensor) sample length \(sampleLength), "
                    + "its sample is \(sensor.sampleLength) bytes")
            }
            if entries.contains(where: { $0.sensor == sensor }) {
                throw WearableError(.duplicateEntry, "\(r.context): \(sensor) is listed a second time")
            }
            entries.append(Entry(sensor: sensor, range: range, availablePeriods: periods))
        }
        self.entries = entries
    }

    /// Decodes `bytes` (see `init(decoding:)` on a slice).
    public init(decoding bytes: [UInt8]) throws(WearableError) { try self.init(decoding: bytes[...]) }

    /// 12 bytes per entry, in order.
    public func encoded() -> [UInt8] {
        var w = WireWriter(capacity: entries.count * Self.entryLength)
        for e in entries {
            w.u8(e.sensor.rawValue)
            w.i16(e.range.minScaled)
            w.i16(e.range.maxScaled)
            w.i16(e.range.minRaw)
            w.i16(e.range.maxRaw)
            w.u16(SamplePeriod.mask(of: e.availablePeriods))
            w.u8(UInt8(e.sampleLength))
        }
        return w.bytes
    }
}
