import Foundation
import Simulator
import Support
import Synchronization
import Transport
import Wearable
import WearableSession
import WearableSimulator

/// The Wearable session's goals: four sensors at 20 ms and gestures for `minutes` of device time with `listeners`
/// listeners, over the in-process link and over TCP: nothing lost or duplicated, every injected gap detected and
/// nothing else flagged, the latency from a notification's arrival to its delivery to the last listener; and the
/// decode throughput of sensor-data notifications against a byte-sum pass over the same bytes.
///
/// The simulated wearable runs on a `ManualClock`: the benchmark advances it one transmission period (40 ms) at a
/// time, as soon as the previous transmission has reached every listener, so ten minutes of device time pass in far
/// less wall time while each notification meets listeners exactly as it would at real time (the session itself runs
/// on the real clock: its arrival times and the latencies are wall time).
struct WearableBenchmark {
    var minutes: Double
    var listeners: Int
    var rounds: Int

    struct LinkResult {
        var link: String
        var wallSeconds: Double
        var transmissions: Int
        /// Per sensor: samples the device sent, dropped (injected), and what every listener got.
        var sent: [SensorType: Int]
        var dropped: [SensorType: Int]
        var droppedNotifications: Int
        var gesturesSent: Int
        /// Failures of the goals "nothing lost or duplicated, every gap detected, nothing else flagged" (empty: met).
        var problems: [String]
        /// Arrival of a notification to its delivery to the last of the listeners, in seconds.
        var p50: Double, p99: Double, max: Double
        var readings: Int
    }

    struct DecodeResult {
        var notifications: Int, bytes: Int, records: Int
        /// Best times of the byte sum, of the checked views (`parseViews`) and of the records as values (`parse`).
        var sumSeconds: Double, viewSeconds: Double, recordSeconds: Double
        var ratio: Double { sumSeconds / viewSeconds }
        var recordRatio: Double { sumSeconds / recordSeconds }
    }

    static let period: Int64 = 40

    /// A device with room for the four sensors at 20 ms (the standard one allows three and 60 bytes).
    static func profile(seconds: Double) -> WearableProfile {
        var device = WearableProfile.standardDevice
        device.maxActiveSensors = 4
        device.maxPayloadPerTransmissionPeriod = 200
        return WearableProfile(deviceInformation: device, motion: HeadMotion(seed: 1, seconds: seconds + 60))
    }

    static let sensors: [SensorType] = [.accelerometer, .gyroscope, .rotation, .gameRotation]

    /// Sensor-data notifications dropped by the device: isolated ones, about one every 40 s of device time.
    static func dropIndices(transmissions: Int) -> Set<Int> {
        Set(stride(from: 487, to: max(488, transmissions - 10), by: 997))
    }

    func runLink(tcp: Bool) async throws -> LinkResult {
        let seconds = minutes * 60
        let transmissions = Int(seconds * 1000) / Int(Self.period)
        let clock = ManualClock()
        let device = SimulatedWearable(profile: Self.profile(seconds: seconds), clock: clock)
        device.dropSensorNotifications(Self.dropIndices(transmissions: transmissions))
        let server = try WearableSimulatorServer(devices: [device])
        let session: WearableDeviceSession
        if tcp {
            let listener = try await TCPListener.bind()
            try server.attach(listener, toDevice: 0)
            session = WearableDeviceSession(address: listener.boundAddress, connector: TransportConnector())
        } else {
            let inProcess = InProcessListener(name: "wearable")
            try server.attach(inProcess, toDevice: 0)
            session = WearableDeviceSession(peer: "memory:wearable") { try inProcess.connect() }
        }
        try await session.open()

        // Every listener tallies what it got; their deliveries pace the clock.
        let progress = WearableProgress()
        var tasks: [Task<Tally, Never>] = []
        for _ in 0..<listeners {
            let readings = await session.sensorReadings(), gestures = await session.gestureReadings()
            tasks.append(Task {
                async let gestureCount: Int = {
                    var n = 0
                    for await _ in gestures {
                        n += 1
                        progress.gestureDelivered()
                    }
                    return n
                }()
                var tally = Tally()
                tally.latencies.reserveCapacity(transmissions * 8 + 64)
                for await r in readings {
                    tally.latencies.append(Int64(((session.elapsedTime - r.hostTime) / .nanoseconds(1)).rounded()))
                    tally.take(r)
                    progress.sampleDelivered()
                }
                tally.gestures = await gestureCount
                return tally
            })
        }
        try await session.configureSensors { c in
            for s in Self.sensors { c.enable(sensor: s, at: ._20ms) }
        }
        try await session.configureGestures { c in
            for g in GestureType.allCases { c.set(gesture: g, enabled: true) }
        }

        let wallStart = ContinuousClock.now
        for _ in 0..<transmissions {
            while clock.pendingSleeps == 0 { await Task.yield() }
            clock.advance(by: .milliseconds(Self.period))
            // The device has sent the transmission once it waits for the next one (a short spin); then the benchmark
            // waits, suspended (not spinning against the listeners), until every listener has every sample and
            // gesture sent so far.
            while clock.pendingSleeps == 0 { await Task.yield() }
            let s = device.statistics
            await progress.wait(samples: s.recordsSent.values.reduce(0, +) * listeners, gestures: s.gesturesSent.values.reduce(0, +) * listeners)
        }
        let wall = (ContinuousClock.now - wallStart).seconds
        let statistics = await session.statistics
        await session.close()
        var tallies: [Tally] = []
        for t in tasks { tallies.append(await t.value) }
        await server.shutdown()

        let d = device.statistics
        var problems: [String] = []
        let gesturesSent = d.gesturesSent.values.reduce(0, +)
        for (k, t) in tallies.enumerated() {
            for s in Self.sensors {
                let c = t.counts[s] ?? SensorTally()
                if c.samples != d.recordsSent[s, default: 0] { problems.append("listener \(k): \(s) \(c.samples) samples of \(d.recordsSent[s, default: 0]) sent") }
                if c.notAfter > 0 { problems.append("listener \(k): \(s) \(c.notAfter) samples duplicated or out of order") }
                if c.gaps != d.sensorNotificationsDropped { problems.append("listener \(k): \(s) \(c.gaps) gaps flagged, \(d.sensorNotificationsDropped) injected") }
                if c.missing != d.recordsDropped[s, default: 0] { problems.append("listener \(k): \(s) \(c.missing) samples counted missing, \(d.recordsDropped[s, default: 0]) dropped") }
            }
            if t.gestures != gesturesSent { problems.append("listener \(k): \(t.gestures) gestures of \(gesturesSent)") }
            if problems.count > 20 { break }
        }
        for s in Self.sensors {
            let c = statistics[s]
            if c.gaps != d.sensorNotificationsDropped || c.missingSamples != d.recordsDropped[s, default: 0] || c.outOfOrder != 0 {
                problems.append("session statistics of \(s): \(c.gaps) gaps, \(c.missingSamples) missing, \(c.outOfOrder) out of order")
            }
        }
        if statistics.malformedNotifications != 0 { problems.append("\(statistics.malformedNotifications) malformed notifications") }
        if d.sensorNotificationsDropped == 0 { problems.append("no gap was injected") }

        // Per reading, the delivery to the last of the listeners: the largest latency over the listeners.
        let count = tallies.map(\.latencies.count).min() ?? 0
        var last = [Int64](repeating: 0, count: count)
        for t in tallies {
            t.latencies.withUnsafeBufferPointer { p in
                for i in 0..<count where p[i] > last[i] { last[i] = p[i] }
            }
        }
        last.sort()
        func quantile(_ q: Double) -> Double { Percentile.of(sorted: last, q * 100).map { Double($0) / 1e9 } ?? .nan }
        return LinkResult(link: tcp ? "tcp" : "in-process", wallSeconds: wall, transmissions: transmissions, sent: d.recordsSent,
                          dropped: d.recordsDropped, droppedNotifications: d.sensorNotificationsDropped, gesturesSent: gesturesSent,
                          problems: problems, p50: quantile(0.5), p99: quantile(0.99), max: last.last.map { Double($0) / 1e9 } ?? .nan,
                          readings: count)
    }

    /// The notifications the device sends for the run (four sensors at 20 ms, two samples each per transmission),
    /// decoded by the session's parser against a wrapping byte sum over each notification's bytes; best of `rounds`.
    func runDecode() -> DecodeResult {
        let profile = Self.profile(seconds: minutes * 60)
        let info = profile.sensorInformation
        var notifications: [[UInt8]] = []
        let transmissions = Int(minutes * 60 * 1000) / Int(Self.period)
        notifications.reserveCapacity(transmissions)
        for k in 0..<transmissions {
            var records: [SensorRecord] = []
            for t in [Int64(k) * Self.period + 20, Int64(k) * Self.period + 40] {
                for s in Self.sensors {
                    guard let range = info[s]?.range,
                          let sample = try? SensorSample(sensor: s, value: profile.motion.sample(s, at: Double(t) / 1000), in: range) else { continue }
                    records.append(SensorRecord(timestamp: UInt16(truncatingIfNeeded: t), sample: sample))
                }
            }
            notifications.append((try? SensorDataNotification(records: records).encoded()) ?? [])
        }
        let bytes = notifications.reduce(0) { $0 + $1.count }
        var best = (sum: Double.infinity, view: Double.infinity, record: Double.infinity)
        var sink = 0
        var records = 0, viewed = 0
        let clock = ContinuousClock()
        for _ in 0..<rounds {
            var t = clock.now
            for n in notifications {
                var sum: UInt8 = 0
                n.withUnsafeBufferPointer { p in for b in p { sum &+= b } }
                sink &+= Int(sum)
            }
            best.sum = min(best.sum, (clock.now - t).seconds)

            // Checked in place, each record handed out as a view (its sensor and timestamp used).
            var parser = SensorDataParser(information: info)
            viewed = 0
            var stamps = 0
            t = clock.now
            for n in notifications {
                _ = parser.parseViews(n) { view in
                    viewed &+= 1
                    stamps &+= Int(view.timestamp) &+ Int(view.sensor.rawValue)
                }
            }
            best.view = min(best.view, (clock.now - t).seconds)
            sink &+= stamps

            parser = SensorDataParser(information: info)
            records = 0
            t = clock.now
            for n in notifications {
                if case let .success(r) = parser.parse(n) { records += r.count }
            }
            best.record = min(best.record, (clock.now - t).seconds)
        }
        if sink == 42 || viewed != records { print("views \(viewed), records \(records)") }
        return DecodeResult(notifications: notifications.count, bytes: bytes, records: records, sumSeconds: best.sum, viewSeconds: best.view,
                            recordSeconds: best.record)
    }
}

/// What one listener counted of one sensor.
struct SensorTally {
    var samples = 0, gaps = 0, missing = 0, notAfter = 0
    var lastTime: Int64?
}

struct Tally: Sendable {
    var counts: [SensorType: SensorTally] = [:]
    var latencies: [Int64] = []
    var gestures = 0

    mutating func take(_ r: SensorReading) {
        var c = counts[r.sensor] ?? SensorTally()
        c.samples += 1
        if let last = c.lastTime, r.deviceTime <= last { c.notAfter += 1 }
        c.lastTime = max(c.lastTime ?? r.deviceTime, r.deviceTime)
        if r.missingBefore > 0 {
            c.gaps += 1
            c.missing += r.missingBefore
        }
        counts[r.sensor] = c
    }
}

/// What the listeners have received in all, and the benchmark waiting for it (the pacing).
final class WearableProgress: Sendable {
    private struct State {
        var samples = 0, gestures = 0
        var target: (samples: Int, gestures: Int)?
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func sampleDelivered() { state.withLock { $0.samples += 1; return Self.release(&$0) }?.resume() }
    func gestureDelivered() { state.withLock { $0.gestures += 1; return Self.release(&$0) }?.resume() }

    private static func release(_ s: inout State) -> CheckedContinuation<Void, Never>? {
        guard let t = s.target, s.samples >= t.samples, s.gestures >= t.gestures else { return nil }
        s.target = nil
        return s.waiter.take()
    }

    /// Returns once the listeners have `samples` samples and `gestures` gestures in all.
    func wait(samples: Int, gestures: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.samples >= samples, s.gestures >= gestures { return true }
                s.target = (samples, gestures)
                s.waiter = c
                return false
            }
            if ready { c.resume() }
        }
    }
}
