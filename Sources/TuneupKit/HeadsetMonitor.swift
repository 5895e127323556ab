import Foundation
import Headset
import LightX

/// One device push as `tuneup monitor` reports it: the local time it arrived, its kind and its value (JSON), and a
/// line for people.
public struct HeadsetPushEvent: Encodable, Sendable, Hashable {
    public var time: String
    /// "anc", "ambient-preset", "battery" or "other".
    public var type: String
    public var enabled: Bool?
    public var preset: String?
    public var percent: Int?
    public var command: String?
    public var payload: String?

    public init(_ push: HeadsetPush, at date: Date) {
        time = ISO8601DateFormatter.string(from: date, timeZone: .current, formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        switch push {
        case let .ancEnabled(on): type = "anc"; enabled = on
        case let .awarenessPreset(p): type = "ambient-preset"; preset = p.name?.lowercased() ?? String(p.rawValue)
        case let .batteryLevel(p): type = "battery"; percent = p
        case let .other(command, payload):
            type = "other"
            self.command = "0x" + String(command.rawValue, radix: 16)
            self.payload = LightX.hexString(payload)
        }
    }

    /// "12:03:04.123  ANC on" (the time of day, to the millisecond).
    public var text: String {
        let clock = time.split(separator: "T").last.map { String($0.prefix(12)) } ?? time
        switch type {
        case "anc": return "\(clock)  ANC \(enabled ?? false ? "on" : "off")"
        case "ambient-preset": return "\(clock)  ambient preset \(preset ?? "?")"
        case "battery": return "\(clock)  battery \(percent ?? 0)%"
        default: return "\(clock)  push \(command ?? "?") [\(payload ?? "")]"
        }
    }
}

/// `tuneup monitor`: a headset's pushes followed as they arrive.
public enum HeadsetMonitor {
    /// Proves the device answers (its product name, "device" when it has none), calls `started` with it, then hands
    /// every push to `emit` until `count` of them or `deadline`.
    /// - Throws: `HeadsetError(.disconnected)` naming `address` when the device goes away first; what `emit` throws.
    public static func follow(_ headset: Headset, address: String, count: Int?, until deadline: ContinuousClock.Instant?,
                              started: (String) -> Void, emit: @escaping @Sendable (HeadsetPushEvent) throws -> Void) async throws {
        let pushes = await headset.pushes()
        // One exchange first: proves the device is there and answering before the caller says it is listening.
        let product = try await headset.readIfSupported(ConfigStrings.identity[0]) ?? "device"
        started(product)
        let finished = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                var seen = 0
                for await push in pushes {
                    try emit(HeadsetPushEvent(push, at: Date()))
                    seen += 1
                    if let count, seen >= count { return true }
                }
                return false  // The stream ended: the device went away.
            }
            if let deadline {
                group.addTask {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    return true
                }
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !finished {
            throw HeadsetError(.disconnected, "\(address) disconnected")
        }
    }
}
