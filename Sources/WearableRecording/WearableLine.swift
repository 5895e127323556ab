import Support
import Wearable
import WearableSession

/// One line of a stream or a recording (JSON Lines): an event, a sample, a gesture or the closing summary. Fields a
/// line does not have are left out.
public struct WearableLine: Codable, Sendable, Hashable {
    /// "metadata" (a recording's first line), "event", "sample", "gesture" or "summary".
    public var type: String
    /// For events: "opened", "failedToOpen", "configured", "malformed", "linkLost", "reconnected", "closed".
    public var event: String?
    public var device: String?
    /// For failedToOpen, closed (absent: closed as asked) and malformed: the error's one line and code.
    public var error: String?
    public var code: String?
    public var sensor: String?
    public var gesture: String?
    /// The device's u16 millisecond timestamp as sent.
    public var timestamp: Int?
    /// The timestamp unwrapped (ms on a monotonic line).
    public var deviceTime: Int64?
    /// Arrival on the host, seconds since the command started its session.
    public var hostTime: Double?
    /// Recordings: the absolute time, ms since 1970 UTC: the metadata's `epochMsAtDeviceTimeZero` + `deviceTime`.
    public var epochMs: Int64?
    public var x: Double?, y: Double?, z: Double?, w: Double?
    public var accuracy: Int?
    public var estimatedAccuracy: Double?
    public var biasX: Double?, biasY: Double?, biasZ: Double?
    /// Rotation and game rotation: the quaternion's yaw, pitch and roll in degrees (docs/wearable.md §4.1).
    public var yaw: Double?, pitch: Double?, roll: Double?
    /// Samples of this sensor missing just before this one (a detected gap).
    public var missingBefore: Int?
    /// For configured: each enabled sensor's period in ms, and the enabled gestures.
    public var periods: [String: Int]?
    public var gestures: [String]?
    /// For the summary.
    public var durationSeconds: Double?
    public var counts: [String: Counts]?
    public var gestureCount: Int?
    public var malformedNotifications: Int?
    public var malformedByCode: [String: Int]?
    /// For the metadata line.
    public var metadata: RecordingMetadata?
    /// For `reconnected`: how long the link was down (from its loss to the configuration written again, s), the
    /// attempt that opened it, and the reconnects so far. For the summary: `reconnects` and `linkDownSeconds`.
    public var gapSeconds: Double?
    public var attempts: Int?
    public var reconnects: Int?
    public var linkDownSeconds: Double?

    public struct Counts: Codable, Sendable, Hashable {
        public var samples: Int, gaps: Int, missingSamples: Int, outOfOrder: Int
        public init(samples: Int, gaps: Int, missingSamples: Int, outOfOrder: Int) {
            (self.samples, self.gaps, self.missingSamples, self.outOfOrder) = (samples, gaps, missingSamples, outOfOrder)
        }
    }

    public init(type: String, event: String? = nil) {
        self.type = type
        self.event = event
    }

    public init(_ r: SensorReading) {
        type = "sample"
        sensor = r.sensor.description
        timestamp = Int(r.timestamp)
        deviceTime = r.deviceTime
        hostTime = (r.hostTime.wearableSeconds * 1e6).rounded() / 1e6
        missingBefore = r.missingBefore
        // Nine decimals: far finer than a 16-bit sample's step, and no float noise (0.045916042000000004) in JSON
        // and CSV.
        let t = Self.tidy
        switch r.value {
        case let .vector(v, a):
            (x, y, z, accuracy) = (t(v.x), t(v.y), t(v.z), Int(a.rawValue))
        case let .quaternion(q, a):
            (x, y, z, w, estimatedAccuracy) = (t(q.x), t(q.y), t(q.z), t(q.w), a)
            if let o = r.orientation { (yaw, pitch, roll) = (Self.degrees(o.yaw), Self.degrees(o.pitch), Self.degrees(o.roll)) }
        case let .uncalibratedVector(v, b):
            (x, y, z, biasX, biasY, biasZ) = (t(v.x), t(v.y), t(v.z), t(b.x), t(b.y), t(b.z))
        }
    }

    /// `value` to nine decimals (its shortest decimal form then has at most nine).
    public static func tidy(_ value: Double) -> Double {
        guard value.isFinite, abs(value) < 1e6 else { return value }
        return (value * 1e9).rounded() / 1e9
    }

    /// Degrees to four decimals (the 16-bit quaternion's step is about 0.007°).
    public static func degrees(_ value: Double) -> Double { (value * 1e4).rounded() / 1e4 }

    /// A duration as seconds to the microsecond.
    public static func seconds(_ d: Duration) -> Double { (d.wearableSeconds * 1e6).rounded() / 1e6 }

    public init(_ g: GestureReading) {
        type = "gesture"
        gesture = g.gesture.description
        timestamp = Int(g.timestamp)
        deviceTime = g.deviceTime
        hostTime = (g.hostTime.wearableSeconds * 1e6).rounded() / 1e6
    }

    public static func closed(_ error: WearableSessionError?) -> WearableLine {
        var line = WearableLine(type: "event", event: "closed")
        line.error = error?.message
        line.code = error?.code.rawValue
        return line
    }

    public static func summary(_ s: WearableStatistics, seconds: Double) -> WearableLine {
        var line = WearableLine(type: "summary")
        line.durationSeconds = seconds
        line.counts = Dictionary(uniqueKeysWithValues: s.sensors.map {
            ($0.key.description, Counts(samples: $0.value.samples, gaps: $0.value.gaps, missingSamples: $0.value.missingSamples,
                                        outOfOrder: $0.value.outOfOrder))
        })
        line.gestureCount = s.gestures
        line.malformedNotifications = s.malformedNotifications
        line.malformedByCode = s.malformedByCode
        line.reconnects = s.reconnects
        line.linkDownSeconds = Self.seconds(s.linkDownTime)
        return line
    }

    /// The CSV header and rows of samples and gestures (`record`).
    public static let csvHeader = CSV.row([
        "kind", "sensor_or_gesture", "timestamp", "device_time_ms", "host_time_s", "x", "y", "z", "w", "accuracy", "bias_x", "bias_y",
        "bias_z", "missing_before", "yaw_deg", "pitch_deg", "roll_deg", "epoch_ms", "gap_s",
    ])

    public var csvRow: String? {
        func f(_ v: Double?) -> String { v.map { String($0) } ?? "" }
        func i(_ v: Int?) -> String { v.map { String($0) } ?? "" }
        let e = epochMs.map { String($0) } ?? ""
        switch type {
        case "sample":
            let acc = accuracy.map { String($0) } ?? f(estimatedAccuracy)
            return CSV.row(["sample", sensor ?? "", i(timestamp), deviceTime.map { String($0) } ?? "", f(hostTime), f(x), f(y), f(z), f(w), acc,
                            f(biasX), f(biasY), f(biasZ), i(missingBefore), f(yaw), f(pitch), f(roll), e, ""])
        case "gesture":
            return CSV.row(["gesture", gesture ?? "", i(timestamp), deviceTime.map { String($0) } ?? "", f(hostTime), "", "", "", "", "", "", "", "", "", "", "", "", e, ""])
        case "event" where event == "reconnected":
            // The link's gap, marked where it ends: its length in gap_s (the samples around it keep missing_before 0).
            return CSV.row(["reconnected", "", "", "", f(hostTime), "", "", "", "", "", "", "", "", "", "", "", "", "", f(gapSeconds)])
        default:
            return nil
        }
    }
}

extension Duration {
    /// Seconds as a Double.
    public var wearableSeconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

