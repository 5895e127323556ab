import Failure
import Foundation
import Support
import Wearable
import WearableSession

// What `tuneup wearable info`, `sensors` and `gestures` report, as values with their JSON and their text for people,
// and the configuration writes they make: a program using the library prints what tuneup prints without writing it
// again.

/// The device's DeviceInformation (`wearable info`).
public struct WearableInfoReport: Encodable, Sendable {
    public struct Status: Encodable, Sendable {
        public var pairingEnabled, secureBLEPairingRequired, alreadyPaired, serviceSuspended: Bool
    }

    public var device: String
    public var protocolVersion: String
    public var productId: Int
    public var variant: Int
    public var availableSensors: [String]
    public var availableGestures: [String]
    public var transmissionPeriodMs: Int
    public var maxPayloadPerTransmissionPeriod: Int
    public var maxActiveSensors: Int
    public var status: Status
    public var mtu: Int

    public init(_ d: DeviceInformation, device: String, mtu: UInt16) {
        self.device = device
        protocolVersion = "\(d.majorVersion).\(d.minorVersion)"
        productId = Int(d.productID)
        variant = Int(d.variant)
        availableSensors = d.availableSensors.sorted().map(\.description)
        availableGestures = d.availableGestures.sorted().map(\.description)
        transmissionPeriodMs = Int(d.transmissionPeriod)
        maxPayloadPerTransmissionPeriod = Int(d.maxPayloadPerTransmissionPeriod)
        maxActiveSensors = Int(d.maxActiveSensors)
        status = Status(pairingEnabled: d.status.pairingEnabled, secureBLEPairingRequired: d.status.secureBLEPairingRequired,
                        alreadyPaired: d.status.alreadyPaired, serviceSuspended: d.status.serviceSuspended)
        self.mtu = Int(mtu)
    }

    /// The open session's device.
    public static func of(_ s: WearableDeviceSession) async throws -> WearableInfoReport {
        guard let d = await s.deviceInformation else { throw WearableSessionError(.notOpen, "no device information", category: .connection) }
        return WearableInfoReport(d, device: s.peer, mtu: await s.mtu)
    }

    /// Aligned lines for people.
    public var text: String {
        TextTable.aligned([
            ("Device", device), ("Protocol", protocolVersion),
            ("Product", String(format: "0x%04x variant %d", productId, variant)),
            ("Sensors", availableSensors.joined(separator: ", ")),
            ("Gestures", availableGestures.joined(separator: ", ")),
            ("Transmission", "every \(transmissionPeriodMs) ms, at most \(maxPayloadPerTransmissionPeriod) bytes of sensor data"),
            ("Active sensors", "at most \(maxActiveSensors)"),
            ("Pairing", "\(status.pairingEnabled ? "enabled" : "disabled")\(status.alreadyPaired ? ", already paired" : "")"
                + "\(status.secureBLEPairingRequired ? ", secure pairing required" : "")"),
            ("Service", status.serviceSuspended ? "suspended" : "running"), ("MTU", "\(mtu)"),
        ])
    }
}

/// The sensors with their ranges and periods, and the configuration (`wearable sensors`).
public struct WearableSensorsReport: Encodable, Sendable {
    public struct Sensor: Encodable, Sendable {
        public var sensor: String
        public var id: Int
        public var unit: String
        public var minScaled, maxScaled, minRaw, maxRaw: Int
        public var availablePeriodsMs: [Int]
        public var sampleLength: Int
        public var periodMs: Int?
    }

    public var sensors: [Sensor]
    public var maxActiveSensors: Int
    public var maxPayloadPerTransmissionPeriod: Int
    public var samplePeriodMs: Int?
    /// Whether this report follows a write (its text then says what the device accepted).
    public var written: Bool
    /// The enabled sensors' names (in the text after a write).
    private var enabled: [String]

    enum CodingKeys: String, CodingKey { case sensors, maxActiveSensors, maxPayloadPerTransmissionPeriod, samplePeriodMs, written }

    /// The open session's sensors and configuration.
    public static func of(_ s: WearableDeviceSession, written: Bool) async throws -> WearableSensorsReport {
        guard let info = await s.sensorInformation, let device = await s.deviceInformation, let configuration = await s.sensorConfiguration else {
            throw WearableSessionError(.notOpen, "the session closed", category: .connection)
        }
        return WearableSensorsReport(
            sensors: info.entries.map { e in
                Sensor(sensor: e.sensor.description, id: Int(e.sensor.rawValue), unit: WearableText.unit(e.sensor),
                       minScaled: Int(e.range.minScaled), maxScaled: Int(e.range.maxScaled), minRaw: Int(e.range.minRaw),
                       maxRaw: Int(e.range.maxRaw), availablePeriodsMs: e.availablePeriods.sorted().map { Int($0.milliseconds) },
                       sampleLength: e.sampleLength, periodMs: configuration.period(of: e.sensor).map { Int($0.milliseconds) })
            },
            maxActiveSensors: Int(device.maxActiveSensors), maxPayloadPerTransmissionPeriod: Int(device.maxPayloadPerTransmissionPeriod),
            samplePeriodMs: configuration.enabledSensorsSamplePeriod.map { Int($0.milliseconds) }, written: written,
            enabled: configuration.enabledSensors.map(\.description))
    }

    /// A line per sensor, the budget, and after a write what the device accepted.
    public var text: String {
        func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        var lines = sensors.map { e in
            pad("\(pad(e.sensor, 14)) \(e.periodMs.map { "on, \($0) ms" } ?? "off")", 28)
                + "  \(e.minScaled)...\(e.maxScaled) \(e.unit) on \(e.minRaw)...\(e.maxRaw)   periods \(e.availablePeriodsMs.map { "\($0)" }.joined(separator: "/")) ms"
        }
        lines.append("at most \(maxActiveSensors) sensors at once, \(maxPayloadPerTransmissionPeriod) bytes per transmission period")
        if written {
            lines.append("accepted: " + (enabled.isEmpty ? "every sensor off" : "\(enabled.joined(separator: ", ")) at \(samplePeriodMs ?? 0) ms"))
        }
        return lines.joined(separator: "\n")
    }
}

/// The gestures and whether each is on (`wearable gestures`).
public struct WearableGesturesReport: Encodable, Sendable {
    public struct Gesture: Encodable, Sendable {
        public var gesture: String
        public var id: Int
        public var payloadLength: Int
        public var enabled: Bool
    }

    public var gestures: [Gesture]
    public var written: Bool

    /// The open session's gestures and configuration.
    public static func of(_ s: WearableDeviceSession, written: Bool) async throws -> WearableGesturesReport {
        guard let info = await s.gestureInformation, let configuration = await s.gestureConfiguration else {
            throw WearableSessionError(.notOpen, "the session closed", category: .connection)
        }
        return WearableGesturesReport(gestures: info.entries.map {
            Gesture(gesture: $0.gesture.description, id: Int($0.gesture.rawValue), payloadLength: Int($0.payloadLength),
                    enabled: configuration.isEnabled($0.gesture))
        }, written: written)
    }

    public var text: String {
        gestures.map { "\($0.gesture.padding(toLength: 10, withPad: " ", startingAt: 0)) \($0.enabled ? "on" : "off")" }.joined(separator: "\n")
    }
}

extension WearableDeviceSession {
    /// One write of the sensor configuration: every sensor off first (`disableAll`), then `disable`, then `enable` at
    /// `period` (default: the enabled sensors' period, else 40 ms; all enabled sensors share one); `period` alone
    /// moves the enabled sensors to it. `checked`: the library refuses what the device's information rules out.
    public func configureSensors(enable: [SensorType], disable: [SensorType], disableAll: Bool, period: SamplePeriod?,
                                 checked: Bool) async throws {
        _ = try await configureSensors(checked: checked) { c in
            if disableAll { c.disableAll() }
            for d in disable { c.disable(sensor: d) }
            let p = period ?? c.enabledSensorsSamplePeriod ?? ._40ms
            for e in enable { c.enable(sensor: e, at: p) }
            if enable.isEmpty, let period, c.enabledSensorsSamplePeriod != nil { c.setEnabledSensorsSamplePeriod(period) }
        }
    }

    /// One write of the gesture configuration: every gesture off first (`disableAll`), or every offered one on
    /// (`all`), then `disable`, then `enable`.
    public func configureGestures(enable: [GestureType], disable: [GestureType], all: Bool, disableAll: Bool, checked: Bool) async throws {
        let offered = gestureInformation?.availableGestures ?? []
        _ = try await configureGestures(checked: checked) { c in
            if disableAll { c.disableAll() }
            if all { for g in offered { c.set(gesture: g, enabled: true) } }
            for g in disable { c.set(gesture: g, enabled: false) }
            for g in enable { c.set(gesture: g, enabled: true) }
        }
    }
}

extension WearableSessionError {
    /// A refused configuration said with the rule it broke, for people: refused by the device (65) naming the rule
    /// or the ATT error, or refused before sending (64); other errors as they are.
    public static func explained(_ error: Error) -> Error {
        guard let e = error as? WearableSessionError else { return error }
        switch e.code {
        case .refused:
            let rule = e.rule.map { "rule: \($0)" } ?? "\(e.attError.map(\.description) ?? "refused")"
            let att = e.attError.map { String(format: " (ATT error 0x%02x)", $0.rawValue) } ?? ""
            var explained = e
            explained.message = "the device refused the configuration, \(rule)\(e.rule == nil ? "" : att): \(e.reason ?? e.message)"
            explained.category = .device
            return explained
        case .rejectedLocally:
            var explained = e
            explained.message = "refused before sending, \(e.rule.map { "rule: \($0): " } ?? "")\(e.message)"
            explained.category = .usage
            return explained
        default:
            return error
        }
    }
}
