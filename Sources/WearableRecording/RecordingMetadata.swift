import Wearable

/// A recording's first line (`{"type":"metadata","metadata":{...}}`, docs/wearable.md §10): what was recorded from
/// which device, by which tool, and the wall-clock time of device time zero, so every sample has an absolute time.
public struct RecordingMetadata: Codable, Sendable, Hashable {
    /// "tuneup-wearable-recording".
    public var format: String
    /// 1.
    public var formatVersion: Int
    /// The tool that recorded, with its version ("tuneup 0.9.0").
    public var tool: String
    /// The device's address as given (`sim:wearable`, `tcp:…`, `ble:…`).
    public var device: String
    /// When the recording's first sample or gesture arrived, ISO 8601 UTC with milliseconds.
    public var startedUTC: String?
    /// The wall-clock time (ms since 1970 UTC) at which the device's unwrapped clock read 0: the first sample's (or
    /// gesture's) arrival minus its `deviceTime`, so late by that notification's link latency (at most about one
    /// transmission period). `epochMs` of every line = this + `deviceTime`. Nil in a recording with no samples.
    public var epochMsAtDeviceTimeZero: Int64?
    public var deviceInformation: Device
    /// The enabled sensors with their period and their scaling (SensorInformation).
    public var sensors: [Sensor]
    /// The enabled gestures.
    public var gestures: [String]
    /// The device's sensors and gestures as SensorInformation and GestureInformation list them (every one, enabled
    /// or not), so a replay can be the same device.
    public var availableSensors: [Sensor]
    public var availableGestures: [String]

    public static let formatName = "tuneup-wearable-recording"

    public struct Device: Codable, Sendable, Hashable {
        public var majorVersion: Int, minorVersion: Int, productID: Int, variant: Int
        public var availableSensors: [String], availableGestures: [String]
        public var transmissionPeriodMs: Int, maxPayloadPerTransmissionPeriod: Int, maxActiveSensors: Int
    }

    /// A sensor: its period (nil in `availableSensors`), unit and range (§4).
    public struct Sensor: Codable, Sendable, Hashable {
        public var sensor: String
        public var id: Int
        public var periodMs: Int?
        public var availablePeriodsMs: [Int]?
        public var unit: String
        public var minScaled: Int, maxScaled: Int, minRaw: Int, maxRaw: Int
    }

    /// The metadata of a session about to record: the device's information and the configuration it took.
    public init(tool: String, device: String, information: DeviceInformation, sensorInformation: SensorInformation,
                gestureInformation: GestureInformation?, sensors: SensorConfiguration, gestures: GestureConfiguration) {
        format = Self.formatName
        formatVersion = 1
        self.tool = tool
        self.device = device
        deviceInformation = Device(
            majorVersion: Int(information.majorVersion), minorVersion: Int(information.minorVersion), productID: Int(information.productID),
            variant: Int(information.variant), availableSensors: information.availableSensors.sorted { $0.rawValue < $1.rawValue }.map(\.description),
            availableGestures: information.availableGestures.sorted { $0.rawValue < $1.rawValue }.map(\.description),
            transmissionPeriodMs: Int(information.transmissionPeriod), maxPayloadPerTransmissionPeriod: Int(information.maxPayloadPerTransmissionPeriod),
            maxActiveSensors: Int(information.maxActiveSensors))
        func sensor(_ e: SensorInformation.Entry, period: SamplePeriod?, available: Bool) -> Sensor {
            Sensor(sensor: e.sensor.description, id: Int(e.sensor.rawValue), periodMs: period.map { Int($0.milliseconds) },
                   availablePeriodsMs: available ? e.availablePeriods.map { Int($0.milliseconds) }.sorted(by: >) : nil,
                   unit: Self.unit(e.sensor), minScaled: Int(e.range.minScaled), maxScaled: Int(e.range.maxScaled),
                   minRaw: Int(e.range.minRaw), maxRaw: Int(e.range.maxRaw))
        }
        self.sensors = sensors.entries.compactMap { c in
            guard let p = c.period, let e = sensorInformation[c.sensor] else { return nil }
            return sensor(e, period: p, available: false)
        }
        self.gestures = gestures.enabledGestures.map(\.description)
        availableSensors = sensorInformation.entries.map { sensor($0, period: nil, available: true) }
        availableGestures = (gestureInformation?.availableGestures ?? []).map(\.description)
    }

    /// The physical unit of a sensor's values (docs/wearable.md §4).
    public static func unit(_ sensor: SensorType) -> String {
        switch sensor {
        case .accelerometer: return "g"
        case .gyroscope: return "deg/s"
        case .rotation, .gameRotation: return ""  // unitless
        case .orientation: return "deg"
        case .magnetometer, .uncalibratedMagnetometer: return "uT"
        }
    }

    /// The device information of the metadata (nil: a field out of range, or a name the codec does not know).
    public var decodedDeviceInformation: DeviceInformation? {
        guard let major = UInt8(exactly: deviceInformation.majorVersion), let minor = UInt8(exactly: deviceInformation.minorVersion),
              let product = UInt16(exactly: deviceInformation.productID), let variant = UInt8(exactly: deviceInformation.variant),
              let tp = UInt8(exactly: deviceInformation.transmissionPeriodMs),
              let payload = UInt16(exactly: deviceInformation.maxPayloadPerTransmissionPeriod),
              let maxActive = UInt8(exactly: deviceInformation.maxActiveSensors) else { return nil }
        let sensors = deviceInformation.availableSensors.compactMap(SensorType.init(name:))
        let gestures = deviceInformation.availableGestures.compactMap(GestureType.init(name:))
        guard sensors.count == deviceInformation.availableSensors.count, gestures.count == deviceInformation.availableGestures.count else { return nil }
        return DeviceInformation(majorVersion: major, minorVersion: minor, productID: product, variant: variant, availableSensors: Set(sensors),
                                 availableGestures: Set(gestures), transmissionPeriod: tp, maxPayloadPerTransmissionPeriod: payload,
                                 maxActiveSensors: maxActive, status: DeviceStatus(pairingEnabled: true))
    }

    /// The SensorInformation of `availableSensors` (nil: a range or name the codec refuses).
    public var decodedSensorInformation: SensorInformation? {
        var entries: [SensorInformation.Entry] = []
        for s in availableSensors {
            guard let sensor = SensorType(name: s.sensor),
                  let minS = Int16(exactly: s.minScaled), let maxS = Int16(exactly: s.maxScaled),
                  let minR = Int16(exactly: s.minRaw), let maxR = Int16(exactly: s.maxRaw),
                  let range = try? SensorRange(minScaled: minS, maxScaled: maxS, minRaw: minR, maxRaw: maxR) else { return nil }
            let periods = (s.availablePeriodsMs ?? []).compactMap { ms in SamplePeriod.allCases.first { Int($0.milliseconds) == ms } }
            entries.append(.init(sensor: sensor, range: range, availablePeriods: Set(periods)))
        }
        return try? SensorInformation(entries)
    }
}

extension SensorType {
    /// The sensor of a name as `description` gives it ("gameRotation").
    public init?(name: String) {
        guard let s = SensorType.allCases.first(where: { $0.description == name }) else { return nil }
        self = s
    }
}

extension GestureType {
    /// The gesture of a name as `description` gives it ("headNod").
    public init?(name: String) {
        guard let g = GestureType.allCases.first(where: { $0.description == name }) else { return nil }
        self = g
    }
}
