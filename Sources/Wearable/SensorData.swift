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
    public var information: SensorInformation {
        didSet {
            layout = SensorDataLayout(information: information)
            shape = nil
        }
    }
    /// Where the records of a notification are (`parseViews`), from `information`.
    public private(set) var layout: SensorDataLayout
    /// The shape of the last notification `parseViews` accepted.
    @usableFromInline var shape: SensorDataShape?
    /// The counts so far.
    public private(set) var statistics = Statistics()
    /// The error of the last refused notification.
    public private(set) var lastError: WearableError?

    /// A parser for a device whose sensor information is `information`.
    public init(information: SensorInformation) {
        self.information = information
        self.layout = SensorDataLayout(information: information)
    }

    @usableFromInline
    mutating func countAccepted(_ records: Int) {
        statistics.accepted &+= 1
        statistics.records &+= records
    }

    /// The records of one notification, or the error that refused it (counted in `statistics`).
    public mutating func parse(_ notification: ArraySlice<UInt8>) -> Result<[SensorRecord], WearableError> {
        do throws(WearableError) {
            let records = try SensorDataNotification(decoding: notification, using: information).records
            countAccepted(records.count)
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

/// One record of a checked sensor data notification, in place: its sensor, timestamp and sample bytes, valid during
/// the call that hands it out (`SensorDataLayout.forEachRecord`).
public struct SensorRecordView {
    public let sensor: SensorType
    public let timestamp: SensorTimestamp
    /// The sample's `sensor.sampleLength` bytes.
    public let sampleBytes: UnsafeRawBufferPointer

    @inlinable
    init(sensor: SensorType, timestamp: SensorTimestamp, sampleBytes: UnsafeRawBufferPointer) {
        self.sensor = sensor
        self.timestamp = timestamp
        self.sampleBytes = sampleBytes
    }

    /// The record as a value, its sample decoded (the layout checked the bytes, so this does not throw for a view
    /// `SensorDataLayout` handed out).
    public func record() throws(WearableError) -> SensorRecord {
        var r = WireReader(Array(sampleBytes)[...], context: "sensor data")
        return SensorRecord(timestamp: timestamp, sample: try SensorSample.read(sensor, &r))
    }
}

/// Where a sensor data notification's records are, checked in place with one table lookup per record. It accepts
/// exactly what `SensorDataNotification(decoding:using:)` accepts (every record of a sensor the information lists,
/// whole, a vector accuracy byte 0...3, at least one record) — the fuzzer and the replay tests check that the two
/// agree — and says nothing about why it refuses (the decoder does).
public struct SensorDataLayout: Sendable, Hashable {
    /// Per sensor id: the sample length (0: unknown or not listed), bit 7 set when the sample ends with a vector
    /// accuracy byte.
    private let table: [UInt8]

    public init(information: SensorInformation) {
        var table = [UInt8](repeating: 0, count: 256)
        for entry in information.entries {
            table[Int(entry.sensor.rawValue)] = UInt8(entry.sampleLength) | (entry.sensor.hasVectorAccuracy ? 0x80 : 0)
        }
        self.table = table
    }

    /// The records' places in `bytes`, or nil when the notification is refused.
    public func shape(of bytes: UnsafeRawBufferPointer) -> SensorDataShape? {
        let n = bytes.count
        guard n > 0, n <= Int(UInt16.max) else { return nil }
        return table.withUnsafeBufferPointer { table -> SensorDataShape? in
            var records: [UInt32] = []
            var i = 0
            while i < n {
                let entry = table[Int(bytes[i])]
                let length = Int(entry & 0x7F)
                let end = i + 3 + length
                guard length != 0, end <= n else { return nil }
                if entry & 0x80 != 0, bytes[end - 1] > 3 { return nil }
                records.append(SensorDataShape.record(offset: i, id: bytes[i], sampleLength: length, accuracy: entry & 0x80 != 0))
                i = end
            }
            return SensorDataShape(length: n, records: records)
        }
    }

    /// Checks the whole notification, then hands each record to `body` in order. Returns the number of records, or
    /// nil when the notification is refused (then `body` is never called).
    public func forEachRecord(in bytes: UnsafeRawBufferPointer, _ body: (SensorRecordView) throws -> Void) rethrows -> Int? {
        guard let shape = shape(of: bytes) else { return nil }
        try shape.forEachRecord(in: bytes, body)
        return shape.count
    }
}

/// The places of a notification's records: their offsets and sensor ids, in order. A device sends the same shape
/// every transmission period, so a parser keeps the last one and checks a new notification against it with
/// independent loads (`matches`) instead of walking it record by record.
public struct SensorDataShape: Sendable, Hashable {
    /// The notification's length.
    public let length: Int
    /// Per record: offset (bits 0-15), sensor id (16-23), sample length (24-30), a vector accuracy byte (31).
    @usableFromInline let records: [UInt32]

    @usableFromInline
    static func record(offset: Int, id: UInt8, sampleLength: Int, accuracy: Bool) -> UInt32 {
        UInt32(offset) | UInt32(id) << 16 | UInt32(sampleLength) << 24 | (accuracy ? 1 << 31 : 0)
    }

    /// The number of records.
    public var count: Int { records.count }

    /// Whether `bytes` has this shape and passes the layout's checks: the same length, the same sensor id at every
    /// record's offset (so the same record lengths), every vector accuracy byte 0...3.
    @inlinable
    public func matches(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == length else { return false }
        return records.withUnsafeBufferPointer { records in
            var bad: UInt8 = 0
            for r in records {
                let offset = Int(r & 0xFFFF)
                bad |= bytes[offset] ^ UInt8(truncatingIfNeeded: r >> 16)
                if r & 0x8000_0000 != 0 { bad |= bytes[offset &+ 2 &+ Int((r >> 24) & 0x7F)] & 0xFC }
            }
            return bad == 0
        }
    }

    /// Hands each record of `bytes` (which has this shape) to `body`, in order.
    @inlinable
    public func forEachRecord(in bytes: UnsafeRawBufferPointer, _ body: (SensorRecordView) throws -> Void) rethrows {
        try records.withUnsafeBufferPointer { records in
            for r in records {
                let offset = Int(r & 0xFFFF)
                let length = Int((r >> 24) & 0x7F)
                let sensor = SensorType(rawValue: UInt8(truncatingIfNeeded: r >> 16)).unsafelyUnwrapped
                let timestamp = UInt16(bytes[offset &+ 1]) << 8 | UInt16(bytes[offset &+ 2])
                try body(SensorRecordView(sensor: sensor, timestamp: timestamp,
                                          sampleBytes: UnsafeRawBufferPointer(rebasing: bytes[(offset &+ 3)..<(offset &+ 3 &+ length)])))
            }
        }
    }
}

extension SensorDataParser {
    /// The records of one notification as views (no copies, no allocation once the device's shape is known), handed
    /// to `body` once the whole notification is checked; false when it is refused (counted in `statistics` by the
    /// decoder's error code, as `parse` counts it). The last accepted shape is kept (`SensorDataShape`).
    @inlinable
    public mutating func parseViews(_ notification: [UInt8], _ body: (SensorRecordView) -> Void) -> Bool {
        // The device's usual shape: checked with independent loads, no walk.
        if let known = shape {
            let matched = notification.withUnsafeBytes { raw -> Bool in
                guard known.matches(raw) else { return false }
                known.forEachRecord(in: raw, body)
                return true
            }
            if matched {
                countAccepted(known.count)
                return true
            }
        }
        let layout = self.layout
        if let found = notification.withUnsafeBytes({ raw -> SensorDataShape? in
            guard let found = layout.shape(of: raw) else { return nil }
            found.forEachRecord(in: raw, body)
            return found
        }) {
            shape = found
            countAccepted(found.count)
            return true
        }
        // Refused: the decoder says why, and counts it (the two agree on what they accept: the fuzzer checks it).
        _ = parse(notification)
        return false
    }
}
