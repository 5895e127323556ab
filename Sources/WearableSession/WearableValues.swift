import Wearable

/// Something that happened to a session or its device, as the SDK's session delegate and device events say it.
public enum WearableEvent: Sendable, Hashable {
    /// `open()` succeeded.
    case didOpen
    /// `open()` failed (with the error it threw).
    case didFailToOpen(WearableSessionError)
    /// The session closed: nil for a requested `close()`, the error when the link was lost.
    case didClose(WearableSessionError?)
    /// Reconnecting (`Options.reconnect`): the link was lost and the session is reopening the device; listeners go
    /// on. `didReconnect` follows when it is back, `didClose(error)` when it gives up.
    case didLoseLink(WearableSessionError)
    /// The device is open again with the accepted configurations written again, `gap` after the link was lost
    /// (loss to configuration written, on the session's clock), at the `attempts`th attempt.
    case didReconnect(gap: Duration, attempts: Int)
    /// The device accepted a sensor configuration write (`didUpdateSensorConfiguration` follows).
    case didWriteSensorConfiguration
    /// The device's sensor configuration, read back after a write (or notified).
    case didUpdateSensorConfiguration(SensorConfiguration)
    /// A sensor configuration write was refused (by the library's checks or by the device, with its reason) or
    /// could not be made.
    case didFailToWriteSensorConfiguration(WearableSessionError)
    /// The device accepted a gesture configuration write (`didUpdateGestureConfiguration` follows).
    case didWriteGestureConfiguration
    /// The device's gesture configuration, read back after a write (or notified).
    case didUpdateGestureConfiguration(GestureConfiguration)
    /// A gesture configuration write was refused or could not be made.
    case didFailToWriteGestureConfiguration(WearableSessionError)
    /// A notification that did not decode; it was counted and skipped, the stream goes on.
    case didReceiveMalformedNotification(WearableCharacteristic, WearableError)
}

/// One sensor sample as listeners receive it.
public struct SensorReading: Sendable, Hashable {
    /// The sensor.
    public var sensor: SensorType
    /// The device's u16 millisecond timestamp, as sent.
    public var timestamp: SensorTimestamp
    /// The timestamp unwrapped: milliseconds of the device clock on a monotonic 64-bit line (the first timestamp
    /// of the session is its own value; every wrap of the u16 adds 65536).
    public var deviceTime: Int64
    /// When the notification arrived: time on the session's clock since the session object was made.
    public var hostTime: Duration
    /// The raw sample.
    public var sample: SensorSample
    /// The sample in physical units (the sensor's range from SensorInformation).
    public var value: SensorValue
    /// Samples of this sensor missing just before this one (0 when none; > 0 marks a detected gap).
    public var missingBefore: Int

    public init(sensor: SensorType, timestamp: SensorTimestamp, deviceTime: Int64, hostTime: Duration, sample: SensorSample, value: SensorValue,
                missingBefore: Int) {
        (self.sensor, self.timestamp, self.deviceTime, self.hostTime, self.sample, self.value, self.missingBefore) =
            (sensor, timestamp, deviceTime, hostTime, sample, value, missingBefore)
    }

    /// Yaw, pitch and roll in degrees of a rotation or game rotation sample (docs/wearable.md §4.1); nil for other
    /// sensors.
    public var orientation: Orientation? { value.orientation }
}

/// One gesture as listeners receive it.
public struct GestureReading: Sendable, Hashable {
    public var gesture: GestureType
    /// The device's u16 millisecond timestamp.
    public var timestamp: SensorTimestamp
    /// The timestamp unwrapped on the same line as the sensor readings' `deviceTime`.
    public var deviceTime: Int64
    /// When the notification arrived (session clock).
    public var hostTime: Duration
}

/// What a session received since it was last opened.
public struct WearableStatistics: Sendable, Hashable {
    /// Per sensor.
    public struct SensorCounts: Sendable, Hashable {
        /// Samples delivered.
        public var samples = 0
        /// Gaps detected (runs of missing samples).
        public var gaps = 0
        /// Samples missing in those gaps.
        public var missingSamples = 0
        /// Samples whose time was not after the previous one's (duplicates, reordering).
        public var outOfOrder = 0
        public init() {}
    }

    public var sensors: [SensorType: SensorCounts] = [:]
    /// Sensor data notifications decoded.
    public var sensorNotifications = 0
    /// Gestures delivered.
    public var gestures = 0
    /// Notifications that did not decode (sensor data or gestures), in all and by the codec's error code.
    public var malformedNotifications = 0
    public var malformedByCode: [String: Int] = [:]
    /// Notifications of handles the session does not know.
    public var unknownNotifications = 0
    /// Reconnects after a lost link (`Options.reconnect`), and the time the link was down in them in all. The gap of
    /// a reconnect is not counted as a sensor gap: a sensor's first sample after it has `missingBefore` 0.
    public var reconnects = 0
    public var linkDownTime: Duration = .zero

    public init() {}

    /// The counts of `sensor` (zeros when it sent nothing).
    public subscript(sensor: SensorType) -> SensorCounts { sensors[sensor] ?? SensorCounts() }
}

/// Unwraps u16 millisecond timestamps onto a 64-bit line: each timestamp is placed within ±32.768 s of the latest
/// one, so records of several sensors may interleave slightly out of order and a wrap adds 65536. Pure.
public struct TimestampUnwrapper: Sendable, Hashable {
    private var latest: (raw: UInt16, time: Int64)?

    public init() {}

    public mutating func unwrap(_ raw: UInt16) -> Int64 {
        guard let latest else {
            self.latest = (raw, Int64(raw))
            return Int64(raw)
        }
        let delta = Int64(Int16(bitPattern: raw &- latest.raw))
        let time = latest.time + delta
        if delta > 0 { self.latest = (raw, time) }
        return time
    }

    public static func == (l: Self, r: Self) -> Bool { l.latest?.raw == r.latest?.raw && l.latest?.time == r.latest?.time }
    public func hash(into h: inout Hasher) {
        h.combine(latest?.raw)
        h.combine(latest?.time)
    }
}

/// Detects gaps in one sensor's samples from their unwrapped times and the configured period. Pure.
public struct GapDetector: Sendable, Hashable {
    private var last: Int64?

    public init() {}

    /// Forgets the previous sample (after a configuration change the next sample starts afresh).
    public mutating func reset() { last = nil }

    /// The samples missing before one at `time` (ms) for a sensor sampling every `period` ms; -1 for a sample not
    /// after the previous one.
    public mutating func missing(before time: Int64, period: Int64) -> Int {
        defer { if last.map({ time > $0 }) ?? true { last = time } }
        guard let last else { return 0 }
        let delta = time - last
        guard delta > 0 else { return -1 }
        guard period > 0, delta * 2 > period * 3 else { return 0 }
        return max(0, Int((Double(delta) / Double(period)).rounded()) - 1)
    }
}
