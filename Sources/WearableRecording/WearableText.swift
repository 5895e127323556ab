import Foundation
import Wearable

/// Names, units and the summary of a wearable stream as people read them (the commands' text, the plot's axes).
public enum WearableText {
    /// A sensor by name, any case, with or without dashes and underscores (`game-rotation`, `gameRotation`), or by id
    /// (`3`); nil for anything else.
    public static func sensor(named text: String) -> SensorType? {
        let key = normalized(text)
        if let id = UInt8(key), let s = SensorType(rawValue: id) { return s }
        return SensorType.allCases.first { $0.description.lowercased() == key }
    }

    /// A gesture by name (double-tap, doubleTap, double_tap) or by id (129 or 0x81); nil for anything else.
    public static func gesture(named text: String) -> GestureType? {
        let key = normalized(text)
        let id = key.hasPrefix("0x") ? UInt8(key.dropFirst(2), radix: 16) : UInt8(key)
        if let id, let g = GestureType(rawValue: id) { return g }
        return GestureType.allCases.first { $0.description.lowercased() == key }
    }

    private static func normalized(_ text: String) -> String {
        text.lowercased().replacingOccurrences(of: "-", with: "").replacingOccurrences(of: "_", with: "")
    }

    /// The physical unit of a sensor's values as people read it (`°/s`, `µT`; the recording's metadata has the ASCII
    /// spelling: `RecordingMetadata.unit`).
    public static func unit(_ sensor: SensorType) -> String {
        switch sensor {
        case .accelerometer: return "g"
        case .gyroscope: return "°/s"
        case .rotation, .gameRotation: return "(unitless)"
        case .orientation: return "°"
        case .magnetometer, .uncalibratedMagnetometer: return "µT"
        }
    }

    /// "1 sample", "2 samples", "0 samples".
    public static func counted(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    /// A stream's summary line for people: one line per sensor, gestures, malformed notifications, reconnects.
    public static func summary(_ s: WearableLine) -> String {
        var lines = (s.counts ?? [:]).sorted { $0.key < $1.key }.map { name, c in
            "\(name): \(counted(c.samples, "sample")), \(counted(c.gaps, "gap")) (\(c.missingSamples) missing), \(c.outOfOrder) out of order"
        }
        let byCode = (s.malformedByCode ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        lines.append("gestures: \(s.gestureCount ?? 0); malformed notifications: \(s.malformedNotifications ?? 0)"
            + (byCode.isEmpty ? "" : " (" + byCode.joined(separator: ", ") + ")"))
        if let n = s.reconnects, n > 0 {
            lines.append("reconnects: \(n) (link down \(String(format: "%.2f", s.linkDownSeconds ?? 0)) s in all)")
        }
        return lines.joined(separator: "\n")
    }
}
