import Logging
import Simulator
import Synchronization
import Transport
import Wearable
import WearableLink

/// A simulated Bose Wearable device: the 0xFDD2 service on any link a `SimulatedDeviceServer` hands it, in the GATT
/// framing (`GATTFraming`) on byte streams and as real ATT PDUs on packet links (an L2CAP LE channel: the device is
/// then a BLE peripheral; `GATTServerConnection` answers ATT discovery from the same layout).
///
/// - Reads of DeviceInformation, SensorInformation, GestureInformation and both configurations; writes of the
///   configurations and of the notification descriptors; MTU exchange and discovery (`GATTServiceLayout.wearable`).
/// - The device's rules, each refused with an ATT error and a reason: a sensor it lacks (0x83), a period the sensor
///   does not offer (0x81... see `ATTError`), more than maxActiveSensors (0x81), more sensor data per transmission
///   period than maxPayloadPerTransmissionPeriod (0x82), a gesture it lacks (0x84), undecodable values (0x13, 0x0D).
///   One shared period is a property of the payload itself (a write with two periods is refused, 0x85).
/// - Every link starts with everything disabled and its configuration dies with it.
/// - Every transmission period (on the injected clock) the enabled sensors' samples of that period go out, from
///   the `HeadMotion` model, packed into notifications of at most MTU - 3 bytes; gestures when the motion makes them
///   (or `tap`).
/// - Faults: dropped notifications (`dropSensorNotifications`), a stalled sensor (`stall`), a link drop
///   (`dropLinks`), raw notifications (`sendRawSensorData`).
public final class SimulatedWearable: SimulatedDevice {
    /// What the device did, for tests.
    public struct Statistics: Sendable, Hashable {
        /// Sensor data notifications sent, and dropped by the fault.
        public var sensorNotificationsSent = 0, sensorNotificationsDropped = 0
        /// Records sent and dropped, per sensor.
        public var recordsSent: [SensorType: Int] = [:], recordsDropped: [SensorType: Int] = [:]
        /// Gesture notifications sent.
        public var gesturesSent: [GestureType: Int] = [:]
        /// Configuration writes accepted and refused (by ATT error).
        public var writesAccepted = 0
        public var refusals: [UInt8: Int] = [:]
        /// Links served so far, and now.
        public var linksServed = 0, linksOpen = 0
    }

    public let deviceDescription: String
    public let profile: WearableProfile

    private struct Link {
        let transport: any Transport
        let wire: GATTWire
        var mtu: UInt16 = 23
        var notifying: Set<UInt16> = []
        var sensors: SensorConfiguration
        var gestures: GestureConfiguration
        /// Sample times (ms since boot) up to this one have been produced.
        var producedThrough: Int64
        var sensorNotificationIndex = 0
        /// A replay: the device time (ms since boot) at which this link's sensor configuration started it.
        var replayStart: Int64?
    }

    private struct State {
        var links: [UInt64: Link] = [:]
        var nextID: UInt64 = 0
        var statistics = Statistics()
        var dropIndices: Set<Int> = []
        var stalled: Set<SensorType> = []
        var taps: [GestureType] = []
        var stopped = false
    }

    private let state: Mutex<State>
    private let now: @Sendable () -> Duration
    private let sleepUntil: @Sendable (Duration) async throws -> Void
    private let layout = GATTServiceLayout.wearable
    private let logger: Logger?

    /// A device with `profile`, timed by `clock` (tests pass a `ManualClock`).
    public init(profile: WearableProfile = WearableProfile(), name: String = "wearable 0",
                clock: any Clock<Duration> = ContinuousClock(), logger: Logger? = nil) {
        self.profile = profile
        self.deviceDescription = name
        self.logger = logger
        self.state = Mutex(State())
        (now, sleepUntil) = Self.timing(clock)
    }

    private static func timing<C: Clock<Duration>>(_ clock: C)
        -> (@Sendable () -> Duration, @Sendable (Duration) async throws -> Void) {
        let origin = clock.now
        return ({ origin.duration(to: clock.now) }, { try await clock.sleep(until: origin.advanced(by: $0), tolerance: nil) })
    }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    // MARK: Faults and controls

    /// Drops the sensor data notifications with these indices (0 = the first of a link) on every link.
    public func dropSensorNotifications(_ indices: Set<Int>) { state.withLock { $0.dropIndices.formUnion(indices) } }

    /// Stops (or resumes) one sensor's samples while it stays enabled.
    public func stall(_ sensor: SensorType, _ stalled: Bool = true) {
        state.withLock { s in if stalled { s.stalled.insert(sensor) } else { s.stalled.remove(sensor) } }
    }

    /// A tap on the device: a singleTap (or doubleTap) gesture at the next transmission.
    public func tap(double: Bool = false) { state.withLock { $0.taps.append(double ? .doubleTap : .singleTap) } }

    /// Drops every link now (the peer sees its link closed).
    public func dropLinks() async {
        let transports = state.withLock { s in
            defer {
                s.links = [:]  // their configurations die with them: everything disabled
                s.statistics.linksOpen = 0
            }
            return s.links.values.map(\.transport)
        }
        for t in transports { await t.close() }
    }

    /// Sends `bytes` as a sensor data notification on every link with notifications on (for malformed input).
    public func sendRawSensorData(_ bytes: [UInt8]) async {
        let handle = layout[.sensorData]!.valueHandle
        let targets = state.withLock { s in
            s.links.values.filter { $0.notifying.contains(layout[.sensorData]!.configurationHandle) }.map { ($0.transport, $0.wire) }
        }
        for (t, wire) in targets { try? await t.send(GATTServerConnection.encodeNotification(handle: handle, value: bytes, wire: wire)) }
    }

    /// Sends `bytes` as a gesture data notification on every link with gesture notifications on (for malformed input).
    public func sendRawGestureData(_ bytes: [UInt8]) async {
        let entry = layout[.gestureData]!
        let targets = state.withLock { s in s.links.values.filter { $0.notifying.contains(entry.configurationHandle) }.map(\.transport) }
        for t in targets { try? await t.send(GATTFraming.encode(.notification(handle: entry.valueHandle, value: bytes))) }
    }

    /// The configuration of the only (or first) link open, for tests.
    public var linkConfigurations: [SensorConfiguration] { state.withLock { s in s.links.keys.sorted().map { s.links[$0]!.sensors } } }

    // MARK: Serving

    public func serve(_ link: any Transport) async {
        guard let id = register(link) else {
            await link.close()
            return
        }
        let streamer = Task { await self.stream(id) }
        var connection = GATTServerConnection(wire: Self.wire(of: link), layout: layout)
        receiving: while !Task.isCancelled {
            let chunk: [UInt8]
            do { chunk = try await link.receive() } catch { break }
            connection.append(chunk)
            while let item = connection.next() {
                let reply: [UInt8]?
                switch item {
                case let .request(pdu): reply = handle(pdu, on: id).flatMap { connection.encode(response: $0) }
                case let .reply(bytes): reply = bytes
                case let .rejected(reason):
                    logger?.debug("\(deviceDescription): undecodable input: \(reason)")
                    reply = nil
                }
                if let reply {
                    do { try await link.send(reply) } catch { break receiving }
                }
            }
        }
        streamer.cancel()
        await streamer.value
        state.withLock { s in
            s.links[id] = nil  // its configuration dies with it: everything disabled
            s.statistics.linksOpen = s.links.count
        }
        await link.close()
    }

    /// GATT travels as real ATT on packet links, in Tuneup's framing on byte streams.
    static func wire(of link: any Transport) -> GATTWire { link.framing == .packets ? .att : .framed }

    public func shutdown() async {
        state.withLock { $0.stopped = true }
        await dropLinks()
    }

    private func register(_ link: any Transport) -> UInt64? {
        let sensors = try! SensorConfiguration(disabled: profile.sensorInformation.sensors)
        let gestures = try! GestureConfiguration(profile.gestureInformation.availableGestures.map { .init(gesture: $0, enabled: false) })
        let through = Int64(now() / .milliseconds(1))
        return state.withLock { s in
            guard !s.stopped else { return nil }
            s.nextID += 1
            s.links[s.nextID] = Link(transport: link, wire: Self.wire(of: link), sensors: sensors, gestures: gestures, producedThrough: through)
            s.statistics.linksServed += 1
            s.statistics.linksOpen = s.links.count
            return s.nextID
        }
    }

    // MARK: Requests

    private func handle(_ pdu: GATTPDU, on id: UInt64) -> GATTPDU? {
        func error(_ op: UInt8, _ handle: UInt16, _ e: ATTError, _ reason: String) -> GATTPDU {
            state.withLock { $0.statistics.refusals[e.rawValue, default: 0] += 1 }
            return .errorResponse(requestOpcode: op, handle: handle, error: e, reason: reason)
        }
        switch pdu {
        case let .exchangeMTURequest(mtu):
            state.withLock { $0.links[id]?.mtu = max(23, min(mtu, 247)) }
            return .exchangeMTUResponse(mtu: 247)
        case .discoverRequest:
            return .discoverResponse(layout)
        case let .readRequest(handle):
            guard let c = characteristic(valueHandle: handle) else {
                if let c = characteristic(configurationHandle: handle) {
                    let on = state.withLock { $0.links[id]?.notifying.contains(handle) ?? false }
                    _ = c
                    return .readResponse(handle: handle, value: on ? [1, 0] : [0, 0])
                }
                return error(GATTPDU.Opcode.readRequest, handle, .invalidHandle, "no attribute has handle 0x\(String(handle, radix: 16))")
            }
            switch c {
            case .deviceInformation: return .readResponse(handle: handle, value: profile.deviceInformation.encoded())
            case .sensorInformation: return .readResponse(handle: handle, value: profile.sensorInformation.encoded())
            case .gestureInformation: return .readResponse(handle: handle, value: profile.gestureInformation.encoded())
            case .sensorConfiguration:
                return .readResponse(handle: handle, value: state.withLock { $0.links[id]?.sensors.encoded() ?? [] })
            case .gestureConfiguration:
                return .readResponse(handle: handle, value: state.withLock { $0.links[id]?.gestures.encoded() ?? [] })
            case .sensorData, .gestureData:
                return error(GATTPDU.Opcode.readRequest, handle, .readNotPermitted, "\(c) can only be notified")
            }
        case let .writeRequest(handle, value):
            let op = GATTPDU.Opcode.writeRequest
            if characteristic(configurationHandle: handle) != nil {
                guard value.count == 2 else { return error(op, handle, .invalidAttributeValueLength, "a CCCD value is 2 bytes") }
                guard value[1] == 0, value[0] <= 1 else { return error(op, handle, .valueNotAllowed, "only notifications (01 00) or nothing (00 00)") }
                state.withLock { s in
                    if value[0] == 1 { s.links[id]?.notifying.insert(handle) } else { s.links[id]?.notifying.remove(handle) }
                }
                return .writeResponse(handle: handle)
            }
            guard let c = characteristic(valueHandle: handle) else {
                return error(op, handle, .invalidHandle, "no attribute has handle 0x\(String(handle, radix: 16))")
            }
            switch c {
            case .sensorConfiguration:
                switch checkSensors(value) {
                case let .failure(refusal): return error(op, handle, refusal.error, refusal.reason)
                case let .success(configuration):
                    let through = Int64(now() / .milliseconds(1))
                    state.withLock { s in
                        s.links[id]?.sensors = configuration
                        s.links[id]?.producedThrough = through
                        if s.links[id]?.replayStart == nil { s.links[id]?.replayStart = through }
                        s.statistics.writesAccepted += 1
                    }
                    return .writeResponse(handle: handle)
                }
            case .gestureConfiguration:
                switch checkGestures(value) {
                case let .failure(refusal): return error(op, handle, refusal.error, refusal.reason)
                case let .success(configuration):
                    state.withLock { s in
                        s.links[id]?.gestures = configuration
                        s.statistics.writesAccepted += 1
                    }
                    return .writeResponse(handle: handle)
                }
            default:
                return error(op, handle, .writeNotPermitted, "\(c) cannot be written")
            }
        case .errorResponse, .exchangeMTUResponse, .readResponse, .discoverResponse, .writeResponse, .notification:
            return nil  // not for a server
        }
    }

    /// The device's rules for a sensor configuration write; the accepted configuration lists every sensor it has.
    private func checkSensors(_ value: [UInt8]) -> Result<SensorConfiguration, RefusalPair> {
        let written: SensorConfiguration
        do throws(WearableError) {
            written = try SensorConfiguration(decoding: value)
        } catch {
            if error.code == .mixedPeriods { return .failure(RefusalPair(.mixedPeriods, error.message)) }
            if error.code == .truncated { return .failure(RefusalPair(.invalidAttributeValueLength, error.message)) }
            return .failure(RefusalPair(.valueNotAllowed, error.message))
        }
        let device = profile.deviceInformation, info = profile.sensorInformation
        for e in written.entries {
            guard let p = e.period else { continue }
            guard device.availableSensors.contains(e.sensor), let entry = info[e.sensor] else {
                return .failure(RefusalPair(.sensorNotAvailable, "the device has no \(e.sensor)"))
            }
            guard entry.availablePeriods.contains(p) else {
                let offered = entry.availablePeriods.sorted().map(\.description).joined(separator: ", ")
                return .failure(RefusalPair(.periodNotAvailable, "\(e.sensor) does not offer \(p) (it offers \(offered))"))
            }
        }
        let enabled = written.enabledSensors.count
        if enabled > Int(device.maxActiveSensors) {
            return .failure(RefusalPair(.tooManySensors, "\(enabled) sensors enabled, at most \(device.maxActiveSensors) at once"))
        }
        var accepted = try! SensorConfiguration(disabled: info.sensors)
        if let p = written.enabledSensorsSamplePeriod {
            for s in written.enabledSensors { accepted.enable(sensor: s, at: p) }
        }
        let bytes = profile.payloadPerTransmissionPeriod(accepted)
        if bytes > Int(device.maxPayloadPerTransmissionPeriod) {
            return .failure(RefusalPair(.payloadBudgetExceeded, "\(bytes) bytes of sensor data per \(device.transmissionPeriod) ms "
                + "transmission period, the device sends at most \(device.maxPayloadPerTransmissionPeriod)"))
        }
        return .success(accepted)
    }

    private func checkGestures(_ value: [UInt8]) -> Result<GestureConfiguration, RefusalPair> {
        let written: GestureConfiguration
        do throws(WearableError) {
            written = try GestureConfiguration(decoding: value)
        } catch {
            return .failure(RefusalPair(error.code == .truncated ? .invalidAttributeValueLength : .valueNotAllowed, error.message))
        }
        let offered = profile.gestureInformation.availableGestures
        for e in written.entries where e.enabled && !(offered.contains(e.gesture) && profile.deviceInformation.availableGestures.contains(e.gesture)) {
            return .failure(RefusalPair(.gestureNotAvailable, "the device does not recognise \(e.gesture)"))
        }
        var accepted = try! GestureConfiguration(offered.map { .init(gesture: $0, enabled: false) })
        for g in written.enabledGestures { accepted.set(gesture: g, enabled: true) }
        return .success(accepted)
    }

    private func characteristic(valueHandle: UInt16) -> WearableCharacteristic? {
        WearableCharacteristic.allCases.first { layout[$0]?.valueHandle == valueHandle }
    }

    private func characteristic(configurationHandle: UInt16) -> WearableCharacteristic? {
        guard configurationHandle != 0 else { return nil }
        return WearableCharacteristic.allCases.first { layout[$0]?.configurationHandle == configurationHandle }
    }

    // MARK: Streaming

    /// Every transmission period: the samples and gestures of that period, until the link ends.
    private func stream(_ id: UInt64) async {
        let tp = Int64(max(1, profile.deviceInformation.transmissionPeriod == 0 ? 20 : Int(profile.deviceInformation.transmissionPeriod)))
        var lastGestureCheck = Double(now() / .milliseconds(1)) / 1000
        while !Task.isCancelled {
            let nowMs = Int64(now() / .milliseconds(1))
            let next = (nowMs / tp + 1) * tp
            do { try await sleepUntil(.milliseconds(next)) } catch { return }
            let (frames, transport) = produce(id, through: next, gesturesAfter: lastGestureCheck)
            lastGestureCheck = Double(next) / 1000
            guard let transport else { return }
            for frame in frames {
                do { try await transport.send(frame) } catch { return }
            }
        }
    }

    /// The notifications of one transmission: sensor samples at times in (producedThrough, through] ms and the
    /// gestures made after `gesturesAfter` seconds.
    private func produce(_ id: UInt64, through: Int64, gesturesAfter: Double) -> ([[UInt8]], (any Transport)?) {
        let motion = profile.motion
        let info = profile.sensorInformation
        let boot = Int64(profile.bootTimestamp)
        let dataHandles = layout[.sensorData]!, gestureHandles = layout[.gestureData]!
        return state.withLock { s -> ([[UInt8]], (any Transport)?) in
            guard var link = s.links[id] else { return ([], nil) }
            var frames: [[UInt8]] = []
            if let period = link.sensors.enabledSensorsSamplePeriod, link.notifying.contains(dataHandles.configurationHandle) {
                let p = Int64(period.milliseconds)
                var records: [SensorRecord] = []
                var t = (link.producedThrough / p + 1) * p
                if let replay = profile.replay {
                    // The recording's samples whose replay time falls in (producedThrough, through], with their own
                    // timestamps; none from the motion.
                    t = through + 1
                    let start = (link.replayStart ?? link.producedThrough) + 1 - replay.origin
                    var i = replay.firstSample(after: link.producedThrough - start)
                    while i < replay.samples.count, replay.samples[i].deviceTime + start <= through {
                        let r = replay.samples[i]
                        i += 1
                        guard link.sensors.isEnabled(r.sensor), replay.keeps(r, at: period), !s.stalled.contains(r.sensor), let range = info[r.sensor]?.range,
                              let sample = try? SensorSample(sensor: r.sensor, value: r.value, in: range) else { continue }
                        records.append(SensorRecord(timestamp: UInt16(truncatingIfNeeded: r.deviceTime), sample: sample))
                    }
                }
                while t <= through {
                    for sensor in link.sensors.enabledSensors where !s.stalled.contains(sensor) {
                        guard let range = info[sensor]?.range,
                              let sample = try? SensorSample(sensor: sensor, value: motion.sample(sensor, at: Double(t) / 1000), in: range)
                        else { continue }
                        records.append(SensorRecord(timestamp: UInt16(truncatingIfNeeded: boot + t), sample: sample))
                    }
                    t += p
                }
                // Pack whole records into notifications of at most MTU - 3 bytes.
                let limit = Int(link.mtu) - 3
                var batch: [SensorRecord] = []
                var size = 0
                func flush() {
                    guard !batch.isEmpty else { return }
                    let index = link.sensorNotificationIndex
                    link.sensorNotificationIndex += 1
                    if s.dropIndices.contains(index) {
                        s.statistics.sensorNotificationsDropped += 1
                        for r in batch { s.statistics.recordsDropped[r.sensor, default: 0] += 1 }
                    } else {
                        let value = (try? SensorDataNotification(records: batch).encoded()) ?? []
                        frames.append(GATTServerConnection.encodeNotification(handle: dataHandles.valueHandle, value: value, wire: link.wire))
                        s.statistics.sensorNotificationsSent += 1
                        for r in batch { s.statistics.recordsSent[r.sensor, default: 0] += 1 }
                    }
                    batch = []
                    size = 0
                }
                for r in records {
                    if size + r.length > limit { flush() }
                    batch.append(r)
                    size += r.length
                }
                flush()
            }
            let producedBefore = link.producedThrough
            link.producedThrough = max(link.producedThrough, through)
            var made: [(GestureType, Int64)]
            var replayed: [GestureType: [UInt16]] = [:]
            if let replay = profile.replay {
                // The recording's gestures in this transmission, at their recorded timestamps.
                made = []
                if let replayStart = link.replayStart {
                    let start = replayStart + 1 - replay.origin
                    for g in replay.gestures where g.deviceTime + start > producedBefore && g.deviceTime + start <= through {
                        made.append((g.gesture, through))
                        replayed[g.gesture, default: []].append(UInt16(truncatingIfNeeded: g.deviceTime))
                    }
                }
            } else {
                made = motion.gestures(after: gesturesAfter, through: Double(through) / 1000).map { ($0.gesture, Int64(($0.time * 1000).rounded())) }
            }
            made += s.taps.map { ($0, through) }
            s.taps = []
            if link.notifying.contains(gestureHandles.configurationHandle) {
                for (g, time) in made where link.gestures.isEnabled(g) {
                    let stamp = replayed[g]?.isEmpty == false ? replayed[g]!.removeFirst() : UInt16(truncatingIfNeeded: boot + time)
                    let value = GestureData(gesture: g, timestamp: stamp).encoded()
                    frames.append(GATTServerConnection.encodeNotification(handle: gestureHandles.valueHandle, value: value, wire: link.wire))
                    s.statistics.gesturesSent[g, default: 0] += 1
                }
            }
            s.links[id] = link
            return (frames, link.transport)
        }
    }
}

struct RefusalPair: Error {
    let error: ATTError
    let reason: String
    init(_ error: ATTError, _ reason: String) {
        self.error = error
        self.reason = reason
    }
}
