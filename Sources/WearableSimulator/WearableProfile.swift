import Wearable

/// What a simulated wearable says about itself and how it moves.
public struct WearableProfile: Sendable {
    public var deviceInformation: DeviceInformation
    public var sensorInformation: SensorInformation
    public var gestureInformation: GestureInformation
    /// The device clock's millisecond count at boot (its u16 timestamps start here; 65000 shows the wrap soon).
    public var bootTimestamp: UInt16
    /// The head's motion.
    public var motion: HeadMotion
    /// A recording to play back instead of the motion (samples and gestures), nil for the motion.
    public var replay: WearableReplay?

    public init(deviceInformation: DeviceInformation = WearableProfile.standardDevice,
                sensorInformation: SensorInformation = WearableProfile.standardSensors,
                gestureInformation: GestureInformation = WearableProfile.standardGestures,
                bootTimestamp: UInt16 = 0, motion: HeadMotion = HeadMotion(seed: 1), replay: WearableReplay? = nil) {
        self.replay = replay
        self.deviceInformation = deviceInformation
        self.sensorInformation = sensorInformation
        self.gestureInformation = gestureInformation
        self.bootTimestamp = bootTimestamp
        self.motion = motion
    }

    /// This device playing `replay` back: it offers only the sensors the recording holds (the others are not
    /// available: a configuration that enables one is refused as the device refuses a sensor it lacks, ATT 0x83), each
    /// at its recorded period or longer (a shorter one is refused, ATT 0x80; a longer one gets every n-th sample).
    public func replaying(_ replay: WearableReplay) -> WearableProfile {
        var profile = self
        profile.replay = replay
        profile.deviceInformation.availableSensors = deviceInformation.availableSensors.intersection(replay.periods.keys)
        let entries = sensorInformation.entries.map { e -> SensorInformation.Entry in
            guard let recorded = replay.periods[e.sensor] else { return e }
            var entry = e
            entry.availablePeriods = e.availablePeriods.filter { $0.milliseconds >= recorded.milliseconds }
            return entry
        }
        if let information = try? SensorInformation(entries) { profile.sensorInformation = information }
        return profile
    }

    /// A plausible device (protocol 1.2, product 0x4020, like a pair of Bose Frames): accelerometer, gyroscope,
    /// rotation and game rotation; the four gestures; a 40 ms transmission period carrying at most 60 bytes of
    /// sensor data; 3 sensors at once; pairing enabled.
    public static let standardDevice = DeviceInformation(
        majorVersion: 1, minorVersion: 2, productID: 0x4020, variant: 1,
        availableSensors: [.accelerometer, .gyroscope, .rotation, .gameRotation],
        availableGestures: Set(GestureType.allCases), transmissionPeriod: 40, maxPayloadPerTransmissionPeriod: 60,
        maxActiveSensors: 3, status: DeviceStatus(pairingEnabled: true))

    /// Accelerometer ±16 g at every period, gyroscope ±2000 °/s at 80, 40 and 20 ms, rotation and game rotation ±1 on
    /// ±16384 at 40 and 20 ms (the example of docs/wearable.md §3.2).
    public static let standardSensors: SensorInformation = {
        // These literals are valid ranges; `try!` cannot fail here.
        let accel = try! SensorRange(minScaled: -16, maxScaled: 16, minRaw: -32768, maxRaw: 32767)
        let gyro = try! SensorRange(minScaled: -2000, maxScaled: 2000, minRaw: -32768, maxRaw: 32767)
        let quat = try! SensorRange(minScaled: -1, maxScaled: 1, minRaw: -16384, maxRaw: 16384)
        return try! SensorInformation([
            .init(sensor: .accelerometer, range: accel, availablePeriods: Set(SamplePeriod.allCases)),
            .init(sensor: .gyroscope, range: gyro, availablePeriods: [._80ms, ._40ms, ._20ms]),
            .init(sensor: .rotation, range: quat, availablePeriods: [._40ms, ._20ms]),
            .init(sensor: .gameRotation, range: quat, availablePeriods: [._40ms, ._20ms]),
        ])
    }()

    /// The four gestures, payload length 0.
    public static let standardGestures = try! GestureInformation(GestureType.allCases.map { .init(gesture: $0, payloadLength: 0) })

    /// The sensor-data bytes a configuration makes per transmission period: per enabled sensor, its record
    /// (3 + sample length) times the samples it takes in one transmission period (at least one).
    public func payloadPerTransmissionPeriod(_ configuration: SensorConfiguration) -> Int {
        guard let period = configuration.enabledSensorsSamplePeriod else { return 0 }
        let tp = max(Int(deviceInformation.transmissionPeriod), Int(period.milliseconds))
        let samples = (tp + Int(period.milliseconds) - 1) / Int(period.milliseconds)
        return configuration.enabledSensors.reduce(0) { $0 + (SensorRecord.headerLength + $1.sampleLength) * samples }
    }
}
