/// One record of a sensor data notification: a sample and its timestamp.
///
///     sensor id u8, timestamp u16 (ms), sample (the sensor's sampleLength bytes)
public struct SensorRecord: Sendable, Hashable {
    /// The bytes before the sample: id and timestamp.
    public static let headerLength = 3

    /// Milliseconds of the device clock (wraps every 65.536 s).
    public var timestamp: SensorTimestamp
    public var sample: SensorSample

    /// A record of `sample` taken at `timestamp`.
    public init(timestamp: SensorTimestamp, sample: SensorSample) {
        self.timestamp = timestamp
        self.sample = sample
    }

    /// The sensor of the sample.
    public var sensor: SensorType { sample.sensor }

    /// The record's length on the wire: 3 + the sensor's sample length.
    public var length: Int { Self.headerLength + sensor.sampleLength }

    /// The physical sample, scaled with the range `information` gives its sensor; throws `.sensorNotListed` when
    /// `information` does not list the sensor.
    public func value(using information: SensorInformation) throws(WearableError) -> SensorValue {
        guard let entry = information[sensor] else {
            throw WearableError(.sensorNotListed, "sensor record: \(sensor) is not in the sensor information")
        }
        return sample.scaled(by: entry.range)
    }
}

/// The sensorData characteristic: one notification holds one or more records back to back.
///
/// A record's length depends on its sensor, so the decoder walks the notification with the sample lengths of the
/// device's `SensorInformation`, as the SDK does. It is strict where the SDK is lenient (the SDK stops quietly at an
/// unknown id): an unknown sensor id, a sensor the information does not list, a record cut short, an accuracy byte
/// above 3 or an empty notification throw, and the whole notification is refused. Nothing carries over from one
/// notification to the next, so a caller counts the refusal and goes on with the next one (`SensorDataParser`
/// does exactly that).
public struct SensorDataNotification: Sendable, Hashable {
    /// The records in wire order; never empty.
    public let records: [SensorRecord]

    /// Throws `.truncated` for no records (a notification always carries one).
    public init(records: [SensorRecord]) throws(WearableError) {
        guard !records.isEmpty else {
            throw WearableError(.truncated, "sensor data: a notification holds at least one record", category: .usage)
        }
        self.records = records
    }

    /// Decodes the records of `bytes`, each of the length `information` gives its sensor.
    public init(decoding bytes: ArraySlice<UInt8>, using information: SensorInformation) throws(WearableError) {
        guard !bytes.isEmpty else { throw WearableError(.truncated, "sensor data: empty notification") }
        var records: [SensorRecord] = []
        var r = WireReader(bytes, context: "sensor data")
        while !r.isAtEnd {
            let start = r.offset
            // The record's name for errors; built only when one is thrown (it cost more than the decoding).
            let label = { [index = records.count] in "sensor data: record \(index) (offset \(start))" }
            let id = try r.u8("sensor id")
            let sensor = try SensorType(id: id, in: label())
            guard let entry = information[sensor] else {
                throw WearableError(.sensorNotListed, "\(label()): \(sensor) is not in the sensor information, its sample length is unknown")
            }
            guard r.remaining >= SensorRecord.headerLength - 1 + entry.sampleLength else {
                throw WearableError(.truncated, "\(label()): \(sensor) record needs \(SensorRecord.headerLength + entry.sampleLength) bytes, "
                    + "\(r.remaining + 1) left")
            }
            let timestamp = try r.u16("timestamp")
            var sampleReader = WireReader(try r.slice(entry.sampleLength, "sample"), record: records.count, at: start, of: "sensor data")
            let sample = try SensorSample.read(sensor, &sampleReader)
            try sampleReader.expectEnd()
            records.append(SensorRecord(timestamp: timestamp, sample: sample))
        }
        self.records = records
    }

    /// Decodes `bytes` (see `init(decoding:)` on a slice).
    public init(decoding bytes: [UInt8], using information: SensorInformation) throws(WearableError) {
        try self.init(decoding: bytes[...], using: information)
    }

    /// The records back to back.
    public func encoded() -> [UInt8] {
        var w = WireWriter(capacity: records.reduce(0) { $0 + $1.length })
        for record in records {
            w.u8(record.sensor.rawValue)
            w.u16(record.timestamp)
            record.sample.write(to: &w)
        }
        return w.bytes
    }
}

/// Decodes a stream of sensor data notifications with one device's `SensorInformation`, counting what it accepts
/// and refuses. A bad notification is refused whole and counted by its error code; the next one is decoded as if
/// nothing happened (notifications are independent).
public struct SensorDataParser: Sendable {
    /// What the parser has seen.
    public struct Statistics: Sendable, Hashable {
        /// Notifications decoded into records.
        public var accepted = 0
        /// Records in the accepted notifications.
        public var records = 0
        /// Notifications refused.
        public var refused = 0
        /// Refused notifications by the error's code.
        public var refusedByCode: [WearableError.Code: Int] = [:]

        /// All counts zero.
        public init() {}
    }

    /// The device's sensor information: the sample lengths and the ranges.
    public var information: SensorInformation
    /// The counts so far.
    public private(set) var statistics = Statistics()
    /// The error of the last refused notification.
    public private(set) var lastError: WearableError?

    /// A parser for a device whose sensor information is `information`.
    public init(information: SensorInformation) {
        self.information = information
    }

    /// The records of one notification, or the error that refused it (counted in `statistics`).
    public mutating func parse(_ notification: ArraySlice<UInt8>) -> Result<[SensorRecord], WearableError> {
        do throws(WearableError) {
            let records = try SensorDataNotification(decoding: notification, using: information).records
            statistics.accepted += 1
            statistics.records += records.count
            return .success(records)
        } catch {
            statistics.refused += 1
            statistics.refusedByCode[error.code, default: 0] += 1
            lastError = error
            return .failure(error)
        }
    }

    /// The records of one notification, or the error that refused it (see the slice variant).
    public mutating func parse(_ notification: [UInt8]) -> Result<[SensorRecord], WearableError> { parse(notification[...]) }
}
