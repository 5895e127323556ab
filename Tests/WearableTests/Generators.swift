import Wearable

/// Random valid values of every payload, from a seeded generator, for the property tests.
extension TestRandom {
    mutating func int16() -> Int16 { Int16.random(in: .min ... .max, using: &self) }
    mutating func bool() -> Bool { Bool.random(using: &self) }

    mutating func subset<T: Hashable>(_ all: [T]) -> Set<T> { Set(all.filter { _ in bool() }) }

    /// A random order of a random subset.
    mutating func someOf<T>(_ all: [T]) -> [T] { all.filter { _ in bool() }.shuffled(using: &self) }

    mutating func range() -> SensorRange {
        while true {
            let a = int16(), b = int16(), c = int16(), d = int16()
            if let r = try? SensorRange(minScaled: min(a, b), maxScaled: max(a, b), minRaw: min(c, d), maxRaw: max(c, d)) { return r }
        }
    }

    mutating func deviceInformation() -> DeviceInformation {
        DeviceInformation(
            majorVersion: .random(in: 0...255, using: &self), minorVersion: .random(in: 0...255, using: &self),
            productID: .random(in: 0...0xFFFF, using: &self), variant: .random(in: 0...255, using: &self),
            availableSensors: subset(SensorType.allCases), availableGestures: subset(GestureType.allCases),
            transmissionPeriod: .random(in: 0...255, using: &self), maxPayloadPerTransmissionPeriod: .random(in: 0...0xFFFF, using: &self),
            maxActiveSensors: .random(in: 0...255, using: &self),
            status: DeviceStatus(pairingEnabled: bool(), secureBLEPairingRequired: bool(), alreadyPaired: bool(), serviceSuspended: bool()))
    }

    mutating func sensorInformation() -> SensorInformation {
        try! SensorInformation(someOf(SensorType.allCases).map {
            SensorInformation.Entry(sensor: $0, range: range(), availablePeriods: subset(SamplePeriod.allCases))
        })
    }

    mutating func sensorConfiguration() -> SensorConfiguration {
        let period = SamplePeriod.allCases.randomElement(using: &self)!
        return try! SensorConfiguration(someOf(SensorType.allCases).map { .init(sensor: $0, period: bool() ? period : nil) })
    }

    mutating func vector() -> RawVector { RawVector(x: int16(), y: int16(), z: int16()) }
    mutating func quaternion() -> RawQuaternion { RawQuaternion(x: int16(), y: int16(), z: int16(), w: int16()) }
    mutating func accuracy() -> VectorAccuracy { VectorAccuracy.allCases.randomElement(using: &self)! }

    mutating func sample(of sensor: SensorType) -> SensorSample {
        switch sensor {
        case .accelerometer: return .accelerometer(vector(), accuracy: accuracy())
        case .gyroscope: return .gyroscope(vector(), accuracy: accuracy())
        case .rotation: return .rotation(quaternion(), accuracy: int16())
        case .gameRotation: return .gameRotation(quaternion())
        case .orientation: return .orientation(vector(), accuracy: accuracy())
        case .magnetometer: return .magnetometer(vector(), accuracy: accuracy())
        case .uncalibratedMagnetometer: return .uncalibratedMagnetometer(vector(), bias: vector())
        }
    }

    /// 1...20 records of the sensors `information` lists (which must list one).
    mutating func notification(of information: SensorInformation) -> SensorDataNotification {
        let sensors = information.sensors
        let records = (0..<Int.random(in: 1...20, using: &self)).map { _ in
            let sensor = sensors.randomElement(using: &self)!
            return SensorRecord(timestamp: .random(in: 0...0xFFFF, using: &self), sample: sample(of: sensor))
        }
        return try! SensorDataNotification(records: records)
    }

    mutating func gestureInformation() -> GestureInformation {
        try! GestureInformation(someOf(GestureType.allCases).map { .init(gesture: $0, payloadLength: .random(in: 0...0xFFFF, using: &self)) })
    }

    mutating func gestureConfiguration() -> GestureConfiguration {
        try! GestureConfiguration(someOf(GestureType.allCases).map { .init(gesture: $0, enabled: bool()) })
    }

    mutating func gestureData() -> GestureData {
        GestureData(gesture: GestureType.allCases.randomElement(using: &self)!, timestamp: .random(in: 0...0xFFFF, using: &self))
    }

    mutating func bytes(upTo n: Int) -> [UInt8] { (0..<Int.random(in: 0...n, using: &self)).map { _ in .random(in: 0...255, using: &self) } }
}
