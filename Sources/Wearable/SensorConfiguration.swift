#if canImport(Failure)
import Failure
#endif

/// The sensorConfiguration characteristic: one 3-byte entry per sensor, big-endian.
///
///     sensor id u8, period u16 in milliseconds (0 = disabled; else 320, 160, 80, 40 or 20)
///
/// All enabled sensors share one period; a value with two different periods cannot exist (the decoder throws
/// `.mixedPeriods`, so does `init`). The mutating methods keep that rule: enabling a sensor at a period moves every
/// enabled sensor to it, as the device would. Entries keep their wire order; a sensor not listed is disabled.
///
/// Whether the device can honour a configuration (the period is available, not too many sensors, the payload fits
/// its transmission period) is the device's decision, answered with an ATT error, not this codec's.
public struct SensorConfiguration: Sendable, Hashable {
    /// The length of one entry.
    public static let entryLength = 3

    /// One sensor's setting.
    public struct Entry: Sendable, Hashable {
        /// The sensor.
        public var sensor: SensorType
        /// Its period, or nil when the sensor is disabled (0 ms on the wire).
        public var period: SamplePeriod?

        /// `sensor` at `period` (nil: disabled).
        public init(sensor: SensorType, period: SamplePeriod?) {
            self.sensor = sensor
            self.period = period
        }
    }

    /// The entries in wire order, one per sensor.
    public private(set) var entries: [Entry]

    /// Throws `.duplicateEntry` (a sensor twice) or `.mixedPeriods` (enabled sensors at different periods).
    public init(_ entries: [Entry]) throws(WearableError) {
        try Self.check(entries, context: "sensor configuration", category: .usage)
        self.entries = entries
    }

    /// Every sensor of `sensors` listed and disabled (what a device reports when a connection starts).
    public init(disabled sensors: [SensorType]) throws(WearableError) {
        try self.init(sensors.map { Entry(sensor: $0, period: nil) })
    }

    private static func check(_ entries: [Entry], context: String, category: FailureCategory) throws(WearableError) {
        var seen = Set<SensorType>()
        var shared: (SensorType, SamplePeriod)?
        for (i, e) in entries.enumerated() {
            guard seen.insert(e.sensor).inserted else {
                throw WearableError(.duplicateEntry, "\(context): entry \(i) lists \(e.sensor) a second time", category: category)
            }
            guard let period = e.period else { continue }
            if let (first, p) = shared, p != period {
                throw WearableError(.mixedPeriods, "\(context): entry \(i) enables \(e.sensor) at \(period), \(first) is at \(p); "
                    + "enabled sensors share one period", category: category)
            }
            if shared == nil { shared = (e.sensor, period) }
        }
    }

    /// The enabled sensors, in wire order.
    public var enabledSensors: [SensorType] { entries.filter { $0.period != nil }.map(\.sensor) }

    /// The period every enabled sensor samples at; nil when none is enabled.
    public var enabledSensorsSamplePeriod: SamplePeriod? { entries.lazy.compactMap(\.period).first }

    /// The period of `sensor`, nil when it is disabled or not listed.
    public func period(of sensor: SensorType) -> SamplePeriod? { entries.first { $0.sensor == sensor }?.period }

    /// Whether `sensor` is listed and enabled.
    public func isEnabled(_ sensor: SensorType) -> Bool { period(of: sensor) != nil }

    /// Enables `sensor` at `period` (listing it when it is not) and moves every other enabled sensor to `period`.
    public mutating func enable(sensor: SensorType, at period: SamplePeriod) {
        for i in entries.indices where entries[i].period != nil { entries[i].period = period }
        if let i = entries.firstIndex(where: { $0.sensor == sensor }) {
            entries[i].period = period
        } else {
            entries.append(Entry(sensor: sensor, period: period))
        }
    }

    /// Disables `sensor` (it stays listed).
    public mutating func disable(sensor: SensorType) {
        if let i = entries.firstIndex(where: { $0.sensor == sensor }) { entries[i].period = nil }
    }

    /// Disables every sensor (they stay listed).
    public mutating func disableAll() {
        for i in entries.indices { entries[i].period = nil }
    }

    /// Moves every enabled sensor to `period`.
    public mutating func setEnabledSensorsSamplePeriod(_ period: SamplePeriod) {
        for i in entries.indices where entries[i].period != nil { entries[i].period = period }
    }

    /// Decodes the payload; throws `WearableError` as the type's description lists, never traps.
    public init(decoding bytes: ArraySlice<UInt8>) throws(WearableError) {
        let context = "sensor configuration"
        var entries: [Entry] = []
        try forEachEntry(in: bytes, size: Self.entryLength, context: context) { (r: inout WireReader, _: Int) throws(WearableError) in
            let sensor = try SensorType(id: try r.u8("sensor id"), in: r.context)
            let milliseconds = try r.u16("period")
            var period: SamplePeriod?
            if milliseconds != 0 {
                guard let p = SamplePeriod(milliseconds: milliseconds) else {
                    throw WearableError(.unknownPeriod, "\(r.context): \(sensor) period \(milliseconds) ms is not 0, 320, 160, 80, 40 or 20")
                }
                period = p
            }
            entries.append(Entry(sensor: sensor, period: period))
        }
        try Self.check(entries, context: context, category: .device)
        self.entries = entries
    }

    /// Decodes `bytes` (see `init(decoding:)` on a slice).
    public init(decoding bytes: [UInt8]) throws(WearableError) { try self.init(decoding: bytes[...]) }

    /// 3 bytes per entry, in order.
    public func encoded() -> [UInt8] {
        var w = WireWriter(capacity: entries.count * Self.entryLength)
        for e in entries {
            w.u8(e.sensor.rawValue)
            w.u16(e.period?.milliseconds ?? 0)
        }
        return w.bytes
    }
}
