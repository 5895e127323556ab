import Testing
import Wearable

/// decode(encode(v)) == v for random valid values, encode(decode(x)) == x for bytes the decoders accept, with a seeded
/// generator (a failure names its seed and iteration, so it reproduces).
@Suite struct RoundTripTests {
    static let iterations = 2000

    @Test(arguments: [1, 2, 3] as [UInt64]) func valuesSurviveEncoding(seed: UInt64) async throws {
        var rng = TestRandom(seed: seed)
        for i in 0..<Self.iterations {
            if i % 100 == 0 { await Task.yield() }  // seconds of work in a debug build: let the pool's other tasks run
            let device = rng.deviceInformation()
            #expect(try DeviceInformation(decoding: device.encoded()) == device, "seed \(seed) #\(i)")
            #expect(device.encoded().count == DeviceInformation.length)
            let info = rng.sensorInformation()
            #expect(try SensorInformation(decoding: info.encoded()) == info, "seed \(seed) #\(i)")
            #expect(info.encoded().count == info.entries.count * 12)
            let config = rng.sensorConfiguration()
            #expect(try SensorConfiguration(decoding: config.encoded()) == config, "seed \(seed) #\(i)")
            let gestures = rng.gestureInformation()
            #expect(try GestureInformation(decoding: gestures.encoded()) == gestures, "seed \(seed) #\(i)")
            let gestureConfig = rng.gestureConfiguration()
            #expect(try GestureConfiguration(decoding: gestureConfig.encoded()) == gestureConfig, "seed \(seed) #\(i)")
            let gesture = rng.gestureData()
            #expect(try GestureData(decoding: gesture.encoded()) == gesture, "seed \(seed) #\(i)")
            if !info.entries.isEmpty {
                let notification = rng.notification(of: info)
                let wire = notification.encoded()
                #expect(try SensorDataNotification(decoding: wire, using: info) == notification, "seed \(seed) #\(i)")
                #expect(wire.count == notification.records.reduce(0) { $0 + 3 + $1.sensor.sampleLength })
            }
        }
    }

    /// Random bytes: whatever a decoder accepts re-encodes to exactly those bytes. Payloads are built with valid
    /// lengths and ids often enough that acceptance happens (counted, so the test fails if it never does).
    @Test func acceptedBytesSurviveDecoding() async throws {
        var rng = TestRandom(seed: 0xB05E)
        var accepted = [String: Int]()
        for n in 0..<20_000 {
            if n % 500 == 0 { await Task.yield() }  // seconds of work in a debug build: let the pool's other tasks run
            // Start from a valid encoding and flip one byte, or take raw noise.
            let base: [UInt8] = [rng.deviceInformation().encoded(), rng.sensorInformation().encoded(), rng.sensorConfiguration().encoded(),
                                 rng.gestureInformation().encoded(), rng.gestureConfiguration().encoded(), rng.gestureData().encoded(),
                                 rng.bytes(upTo: 40)].randomElement(using: &rng)!
            var wire = base
            if !wire.isEmpty, rng.bool() { wire[Int.random(in: 0..<wire.count, using: &rng)] = .random(in: 0...255, using: &rng) }
            if let v = try? DeviceInformation(decoding: wire) { #expect(v.encoded() == wire); accepted["device", default: 0] += 1 }
            if let v = try? SensorInformation(decoding: wire) { #expect(v.encoded() == wire); accepted["sensorInfo", default: 0] += 1 }
            if let v = try? SensorConfiguration(decoding: wire) { #expect(v.encoded() == wire); accepted["sensorConfig", default: 0] += 1 }
            if let v = try? GestureInformation(decoding: wire) { #expect(v.encoded() == wire); accepted["gestureInfo", default: 0] += 1 }
            if let v = try? GestureConfiguration(decoding: wire) { #expect(v.encoded() == wire); accepted["gestureConfig", default: 0] += 1 }
            if let v = try? GestureData(decoding: wire) { #expect(v.encoded() == wire); accepted["gestureData", default: 0] += 1 }
            if let v = try? SensorDataNotification(decoding: wire, using: replaySensorInformation) {
                #expect(v.encoded() == wire)
                accepted["sensorData", default: 0] += 1
            }
        }
        for what in ["device", "sensorInfo", "sensorConfig", "gestureInfo", "gestureConfig", "gestureData", "sensorData"] {
            #expect(accepted[what, default: 0] > 50, "\(what) accepted only \(accepted[what, default: 0]) times")
        }
    }

    /// Sensor data made of valid records with one byte changed: accepted ones re-encode unchanged, refused ones are
    /// refused with a code (and the replay checks hold either way).
    @Test func mutatedSensorDataKeepsTheReplayInvariants() async throws {
        var rng = TestRandom(seed: 77)
        var outcomes = [String: Int]()
        for i in 0..<3000 {
            if i % 100 == 0 { await Task.yield() }
            var wire = rng.notification(of: replaySensorInformation).encoded()
            let k = Int.random(in: 0..<wire.count, using: &rng)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: wire[k] = .random(in: 0...255, using: &rng)
            case 1: wire.removeSubrange(k...)
            default: break
            }
            let replay = replayThroughWearableDecoders([ReplayTarget.sensorData.selector, 0] + wire)
            #expect(replay.problems.isEmpty, "#\(i): \(replay.problems)")
            outcomes[replay.errorCode ?? "accepted", default: 0] += 1
        }
        for outcome in ["accepted", "truncated", "unknown-sensor", "malformed"] {
            #expect(outcomes[outcome, default: 0] > 0, "no \(outcome) among \(outcomes)")
        }
    }

    /// The configuration's mutating methods keep the one-period rule, so every value they make encodes and decodes.
    @Test func configurationEditsStayValid() async throws {
        var rng = TestRandom(seed: 9)
        var config = try SensorConfiguration(disabled: [])
        for i in 0..<5000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            let sensor = SensorType.allCases.randomElement(using: &rng)!
            let period = SamplePeriod.allCases.randomElement(using: &rng)!
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: config.enable(sensor: sensor, at: period)
            case 1: config.disable(sensor: sensor)
            case 2: config.setEnabledSensorsSamplePeriod(period)
            default: if rng.bool() { config.disableAll() }
            }
            let periods = Set(config.entries.compactMap(\.period))
            #expect(periods.count <= 1, "#\(i)")
            #expect(try SensorConfiguration(decoding: config.encoded()) == config, "#\(i)")
        }
        config.disableAll()
        config.enable(sensor: .accelerometer, at: ._40ms)
        config.enable(sensor: .gyroscope, at: ._20ms)
        #expect(config.period(of: .accelerometer) == ._20ms, "enabling at a period moves the enabled sensors to it")
        #expect(config.enabledSensorsSamplePeriod == ._20ms)
    }
}
