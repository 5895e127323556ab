import Logging
import Session
import Support
import Transport
import Wearable
import WearableLink

/// A session with one Bose Wearable device over any Tuneup link: the GATT framing (`GATTFraming`) on byte streams,
/// real ATT on packet links (BLE: `ATTClient`); the library side of the seed's `WearableDeviceSession` and
/// `WearableDevice`.
///
/// - `open()` connects, exchanges the MTU, discovers the 0xFDD2 service, reads DeviceInformation, SensorInformation,
///   GestureInformation and both configurations, and turns the notifications on. `close()` ends it; `open()` again
///   reopens on a new link. `events()` reports `didOpen`, `didFailToOpen(error)`, `didClose(error or nil)`.
/// - `configureSensors` / `configureGestures` write one configuration: the library's checks refuse what is surely
///   wrong before anything is sent; the device accepts (`didWrite…` then `didUpdate…` with the configuration read
///   back) or refuses (`didFailToWrite…` with its ATT error and reason, and the call throws). Never silent.
/// - `sensorReadings()` / `gestureReadings()`: any number of listeners, each receiving every sample in order with
///   its unwrapped device time, host time and gap mark. A lost link closes the session with an error and ends
///   every listener. Malformed notifications are counted (`statistics`) and reported as events; the stream goes on.
public actor WearableDeviceSession {
    /// Opens a new link for each `open()`.
    public typealias Connect = @Sendable () async throws -> any Transport

    /// Options of a session.
    public struct Options: Sendable {
        /// Request timing (timeout, retransmissions).
        public var requests: RequestOptions
        /// The receive MTU the session offers.
        public var mtu: UInt16
        /// How many notifications' worth of undelivered readings a listener keeps before the oldest are dropped (nil:
        /// all).
        public var listenerBuffer: Int?
        /// Reconnect after a lost link (nil: a lost link closes the session). With a policy the session reopens the
        /// device, writes the last accepted sensor and gesture configurations again and goes on: listeners keep
        /// their streams, `didLoseLink` and `didReconnect` mark the gap, `statistics.reconnects` counts them.
        public var reconnect: ReconnectPolicy?

        public init(requests: RequestOptions = RequestOptions(timeout: .seconds(2), retransmissions: 1),
                    mtu: UInt16 = 247, listenerBuffer: Int? = nil, reconnect: ReconnectPolicy? = nil) {
            self.requests = requests
            self.mtu = mtu
            self.listenerBuffer = listenerBuffer
            self.reconnect = reconnect
        }
    }

    /// Where the session connects (for messages).
    public nonisolated let peer: String
    public nonisolated let options: Options

    /// What the device reported, as last read (kept after the session closes).
    public var deviceInformation: DeviceInformation? { machine.deviceInformation }
    public var sensorInformation: SensorInformation? { machine.sensorInformation }
    public var gestureInformation: GestureInformation? { machine.gestureInformation }
    /// The device's sensor configuration as last read (all disabled at open; nil without a link).
    public var sensorConfiguration: SensorConfiguration? { machine.sensorConfiguration }
    public var gestureConfiguration: GestureConfiguration? { machine.gestureConfiguration }
    /// The link's MTU (the smaller of both sides').
    public var mtu: UInt16 { machine.mtu }
    /// What arrived since the last `open()`.
    public var statistics: WearableStatistics { machine.statistics }

    private let connect: Connect
    private let clock: any Clock<Duration>
    private let elapsed: @Sendable () -> Duration
    /// The clock of the reconnect waits (the session's `clock`, as time since the session was made).
    private let sessionClock: SessionClock
    private let logger: Logger
    /// The session's state and decisions (`WearableSessionMachine`); this actor is its I/O shell: links, requests,
    /// tasks, timers and the listeners.
    private var machine: WearableSessionMachine
    /// A link the shell holds: its client, its service layout (the handles), and the tasks that read its
    /// notifications and its end.
    private struct Wire {
        let id: WearableLinkID
        let client: any GATTClient
        let layout: GATTServiceLayout
        var tasks: [Task<Void, Never>] = []
    }
    /// The machine's current link, once discovered.
    private var wire: Wire?
    /// A reconnect attempt under way and the wait for the next.
    private var attemptTask: Task<Void, Never>?
    private var timerTask: Task<Void, Never>?
    private let eventBroadcast = Broadcast<WearableEvent>()
    /// The readings of one notification at a time: each listener is handed a notification's readings at once (one
    /// wake-up per notification, not one per reading) and takes them one by one (`ReadingFanout`).
    private var readingFanout = ReadingFanout()
    private var gestureBroadcast = Broadcast<GestureReading>()

    /// A session that opens its links with `connect`.
    public init(peer: String, options: Options = Options(), clock: any Clock<Duration> = ContinuousClock(),
                logger: Logger = Logger(label: "tuneup.wearable"), connect: @escaping Connect) {
        self.peer = peer
        self.options = options
        self.connect = connect
        self.clock = clock
        self.elapsed = Self.elapsedTime(clock)
        self.sessionClock = SessionClock(clock)
        self.logger = logger
        self.machine = WearableSessionMachine(peer: peer, reconnect: options.reconnect)
    }

    /// A session with the device at `address`, opened through `connector`.
    public init(address: DeviceAddress, connector: TransportConnector, options: Options = Options(),
                clock: any Clock<Duration> = ContinuousClock(), logger: Logger = Logger(label: "tuneup.wearable")) {
        self.init(peer: address.description, options: options, clock: clock, logger: logger) {
            try await connector.open(address)
        }
    }

    /// Now on the session's clock, on the line of the readings' `hostTime` (time since the session was made): a
    /// listener's `elapsedTime - reading.hostTime` is how long the reading took from its notification's arrival.
    public nonisolated var elapsedTime: Duration { elapsed() }

    private static func elapsedTime<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        if let continuous = clock as? ContinuousClock {
            // The usual clock, specialized: a listener may read it for every reading.
            let origin = continuous.now
            return { origin.duration(to: ContinuousClock.now) }
        }
        let origin = clock.now
        return { origin.duration(to: clock.now) }
    }

    // MARK: Listeners

    /// Session and device events from now on (the stream lasts across reopens).
    public func events() -> AsyncStream<WearableEvent> { eventBroadcast.subscribe() }

    /// Every sensor sample from now on, in order, until the session closes (subscribing while closed: the next open).
    public func sensorReadings() -> SensorReadings {
        readingFanout.subscribe(limit: options.listenerBuffer)
    }

    /// Every gesture from now on, until the session closes.
    public func gestureReadings() -> AsyncStream<GestureReading> {
        gestureBroadcast.subscribe(bufferingPolicy: options.listenerBuffer.map { .bufferingNewest($0) } ?? .unbounded)
    }

    /// Whether the session is open.
    public var isOpen: Bool { machine.isOpen }

    /// Whether the session lost its link and is reconnecting (`options.reconnect`).
    public var isReconnecting: Bool { machine.isReconnecting }

    // MARK: The machine's actions

    /// Does what the machine answered, in order.
    private func perform(_ actions: [WearableSessionMachine.Action]) async {
        for action in actions {
            switch action {
            case let .connect(id, rewrite):
                attemptTask?.cancel()
                attemptTask = Task { [weak self] in await self?.attempt(id, rewrite: rewrite) }
            case let .startTimer(at):
                timerTask?.cancel()
                timerTask = Task { [weak self, sessionClock] in
                    do { try await sessionClock.sleep(at) } catch { return }
                    await self?.retryTimerFired()
                }
            case .stopReconnecting:
                attemptTask?.cancel()
                timerTask?.cancel()
                (attemptTask, timerTask) = (nil, nil)
            case let .dropLink(close):
                let dropped = wire
                wire = nil
                dropped?.tasks.forEach { $0.cancel() }
                if close { await dropped?.client.close() }
            case .endListeners:
                readingFanout.finish()
                gestureBroadcast.finish()
                readingFanout = ReadingFanout()
                gestureBroadcast = Broadcast()
            case let .publish(event):
                publish(event)
            }
        }
    }

    private func publish(_ event: WearableEvent) {
        switch event {
        case let .didLoseLink(error): logger.info("wearable session with \(peer): link lost (\(error.message)); reconnecting")
        case let .didReconnect(gap, attempts): logger.info("wearable session with \(peer): reconnected after \(gap) (\(attempts) attempts)")
        case let .didClose(error?): logger.info("wearable session with \(peer) closed: \(error.message)")
        case let .didReceiveMalformedNotification(c, error): logger.debug("malformed \(c) notification from \(peer): \(error.message)")
        default: break
        }
        eventBroadcast.yield(event)
    }

    // MARK: Open and close

    /// Opens the session (nothing happens when it is open). Reports `didOpen` or `didFailToOpen` and throws the
    /// latter's error: `.connectionFailed`, `.notAWearable`, `.timeout`, `.refused`, `.malformedReply`, ...
    public func open() async throws {
        guard case let .connect(id) = try machine.open() else { return }
        do {
            await perform(try await establish(id, rewrite: nil))
        } catch {
            await perform(machine.linkFailed(id, Self.openFailure(error, peer: peer), at: sessionClock.now()))
            throw error
        }
    }

    /// A reconnect attempt (`Action.connect`): opens link `id` and tells the machine how it went.
    private func attempt(_ id: WearableLinkID, rewrite: WearableSessionMachine.Accepted) async {
        logger.debug("wearable session with \(peer): reconnecting on \(id)")
        do {
            await perform(try await establish(id, rewrite: rewrite))
        } catch {
            await perform(machine.linkFailed(id, Self.openFailure(error, peer: peer), at: sessionClock.now()))
        }
    }

    private func retryTimerFired() async {
        timerTask = nil
        await perform(machine.retryTimerFired(at: sessionClock.now()))
    }

    private static func openFailure(_ error: any Error, peer: String) -> WearableSessionError {
        error as? WearableSessionError
            ?? (error is CancellationError ? WearableSessionError(.notOpen, "opening \(peer) was cancelled", category: .connection)
                : WearableSessionError(.connectionFailed, "cannot open \(peer): \(error)", category: .connection))
    }

    /// Opens link `id`: connects, exchanges the MTU, discovers, reads the information and turns the notifications
    /// on; a reconnect then writes `rewrite` again before the link counts as open. Answers the machine's
    /// `linkEstablished`. On failure the link is closed and forgotten (the caller tells the machine).
    private func establish(_ id: WearableLinkID, rewrite: WearableSessionMachine.Accepted?) async throws -> [WearableSessionMachine.Action] {
        var client: (any GATTClient)?
        do {
            let transport: any Transport
            do {
                transport = try await connect()
            } catch let error as CancellationError {
                throw error
            } catch let error as TransportError {
                throw WearableSessionError(.connectionFailed, "cannot open \(peer): \(error.message)", category: error.category)
            } catch {
                throw WearableSessionError(.connectionFailed, "cannot open \(peer): \(error)", category: .connection)
            }
            let s = await GATTClients.client(on: transport, options: options.requests, clock: clock, logger: logger)
            client = s
            let pushes = await s.pushes()
            let linkEvents = await s.events()

            let mtu: UInt16
            switch try await s.perform(.exchangeMTURequest(mtu: options.mtu)) {
            case let .exchangeMTUResponse(theirs): mtu = max(23, min(options.mtu, theirs))
            case let .errorResponse(_, _, e, _) where e == .requestNotSupported: mtu = 23
            case let other: throw unexpected(other, "MTU exchange")
            }
            let found: GATTServiceLayout
            switch try await s.perform(.discoverRequest) {
            case let .discoverResponse(l): found = l
            case let .errorResponse(_, _, e, r): throw WearableSessionError(.notAWearable, "\(peer) is not a Bose Wearable device: service discovery failed with \(e)" + (r.isEmpty ? "" : ": \(r)"), category: .device)
            case let other: throw unexpected(other, "service discovery")
            }
            guard found.serviceUUID16 == WearableService.uuid16 else {
                throw WearableSessionError(.notAWearable, "\(peer) is not a Bose Wearable device: its service is 0x\(String(found.serviceUUID16, radix: 16)), not 0xfdd2", category: .device)
            }
            for c in WearableCharacteristic.allCases where found[c] == nil {
                throw WearableSessionError(.notAWearable, "\(peer) is not a Bose Wearable device: it lacks the \(c) characteristic", category: .device)
            }
            guard machine.isCurrent(id) else {
                throw WearableSessionError(.notOpen, "opening \(peer) was abandoned", category: .connection)
            }
            let w = Wire(id: id, client: s, layout: found)
            wire = w
            let information = WearableSessionMachine.LinkInformation(
                mtu: mtu,
                device: try decode(await read(.deviceInformation, on: w), "device information") { b throws(WearableError) in try DeviceInformation(decoding: b) },
                sensors: try decode(await read(.sensorInformation, on: w), "sensor information") { b throws(WearableError) in try SensorInformation(decoding: b) },
                gestures: try decode(await read(.gestureInformation, on: w), "gesture information") { b throws(WearableError) in try GestureInformation(decoding: b) },
                sensorConfiguration: try decode(await read(.sensorConfiguration, on: w), "sensor configuration") { b throws(WearableError) in try SensorConfiguration(decoding: b) },
                gestureConfiguration: try decode(await read(.gestureConfiguration, on: w), "gesture configuration") { b throws(WearableError) in try GestureConfiguration(decoding: b) })
            guard wire?.id == id else { throw lostWhileOpening }
            machine.linkInformation(information, link: id)
            wire?.tasks = [
                Task { [weak self] in
                    for await pdu in pushes { await self?.handlePush(pdu, link: id) }
                },
                Task { [weak self] in
                    for await case let .disconnected(error) in linkEvents { await self?.linkLost(error, link: id) }
                },
            ]
            for c in [WearableCharacteristic.sensorData, .gestureData, .sensorConfiguration, .gestureConfiguration] {
                try await setNotifications(c, on: true, wire: w)
            }
            if let rewrite { try await writeAgain(rewrite, on: w) }
            guard wire?.id == id, machine.isCurrent(id) else { throw lostWhileOpening }
            return machine.linkEstablished(id, at: sessionClock.now())
        } catch {
            if let w = wire, w.id == id {
                wire = nil
                w.tasks.forEach { $0.cancel() }
            }
            await client?.close()
            throw error
        }
    }

    private var lostWhileOpening: WearableSessionError {
        WearableSessionError(.disconnected, "the link to \(peer) was lost while opening", category: .connection)
    }

    /// After a reconnect: the sensor and gesture configurations the device accepted before, written again (the
    /// device starts every link with everything disabled) and read back.
    private func writeAgain(_ accepted: WearableSessionMachine.Accepted, on w: Wire) async throws {
        if let wanted = accepted.sensors {
            try await write(.sensorConfiguration, wanted.encoded(), on: w)
            await perform(machine.writeAccepted(sensors: true))
            let value = try decode(await read(.sensorConfiguration, on: w), "sensor configuration") { b throws(WearableError) in try SensorConfiguration(decoding: b) }
            await perform(machine.sensorConfigurationRead(value, link: w.id))
        }
        if let wanted = accepted.gestures {
            try await write(.gestureConfiguration, wanted.encoded(), on: w)
            await perform(machine.writeAccepted(sensors: false))
            let value = try decode(await read(.gestureConfiguration, on: w), "gesture configuration") { b throws(WearableError) in try GestureConfiguration(decoding: b) }
            await perform(machine.gestureConfigurationUpdated(value, link: w.id))
        }
    }

    /// Closes the session at the caller's request (`didClose(nil)`); listeners end. Nothing happens when closed.
    /// While reconnecting it stops the attempts at once (an attempt under way is abandoned).
    public func close() async {
        await perform(machine.close())
    }

    private func linkLost(_ error: WearableSessionError, link id: WearableLinkID) async {
        await perform(machine.linkLost(id, error, at: sessionClock.now()))
    }

    // MARK: Reads

    /// Reads DeviceInformation again.
    public func readDeviceInformation() async throws -> DeviceInformation {
        let w = try openWire()
        let value = try decode(await read(.deviceInformation, on: w), "device information") { b throws(WearableError) in try DeviceInformation(decoding: b) }
        machine.informationRead(.device(value))
        return value
    }

    /// Reads SensorInformation again.
    public func readSensorInformation() async throws -> SensorInformation {
        let w = try openWire()
        let value = try decode(await read(.sensorInformation, on: w), "sensor information") { b throws(WearableError) in try SensorInformation(decoding: b) }
        machine.informationRead(.sensors(value))
        return value
    }

    /// Reads GestureInformation again.
    public func readGestureInformation() async throws -> GestureInformation {
        let w = try openWire()
        let value = try decode(await read(.gestureInformation, on: w), "gesture information") { b throws(WearableError) in try GestureInformation(decoding: b) }
        machine.informationRead(.gestures(value))
        return value
    }

    /// Reads the sensor configuration.
    public func readSensorConfiguration() async throws -> SensorConfiguration {
        let w = try openWire()
        let value = try decode(await read(.sensorConfiguration, on: w), "sensor configuration") { b throws(WearableError) in try SensorConfiguration(decoding: b) }
        await perform(machine.sensorConfigurationRead(value, link: w.id))
        return value
    }

    /// Reads the gesture configuration.
    public func readGestureConfiguration() async throws -> GestureConfiguration {
        let w = try openWire()
        let value = try decode(await read(.gestureConfiguration, on: w), "gesture configuration") { b throws(WearableError) in try GestureConfiguration(decoding: b) }
        machine.gestureConfigurationRead(value, link: w.id)
        return value
    }

    // MARK: Configuration

    /// Changes the sensor configuration in one write: `change` edits the current one (`enable(sensor:at:)`,
    /// `disable(sensor:)`, `disableAll()`, `setEnabledSensorsSamplePeriod(_:)`). Returns the configuration the
    /// device reports afterwards.
    ///
    /// - Parameter checked: check against the device's information first (sensors it lists, periods they offer,
    ///   maxActiveSensors) and refuse with `.rejectedLocally` before sending; false leaves every rule to the device.
    /// - Throws: `.rejectedLocally`, `.refused` (the device's ATT error and reason), link errors. Every failure is
    ///   also reported as `didFailToWriteSensorConfiguration`.
    @discardableResult
    public func configureSensors(checked: Bool = true, _ change: (inout SensorConfiguration) -> Void) async throws -> SensorConfiguration {
        do {
            var (id, configuration) = try machine.sensorConfigurationToChange()
            let w = try wire(id)
            change(&configuration)
            try machine.sensorWriteStarted(configuration, link: id, checked: checked)
            defer { machine.sensorWriteEnded(link: id) }
            try await write(.sensorConfiguration, configuration.encoded(), on: w)
            await perform(machine.writeAccepted(sensors: true))
            let value = try decode(await read(.sensorConfiguration, on: w), "sensor configuration") { b throws(WearableError) in try SensorConfiguration(decoding: b) }
            await perform(machine.sensorConfigurationRead(value, link: id, accepted: true))
            return value
        } catch {
            await perform(machine.writeFailed(sensors: true, Self.sessionError(error)))
            throw error
        }
    }

    /// Changes the gesture configuration in one write (`set(gesture:enabled:)`, `disableAll()`); as
    /// `configureSensors` (checked: every gesture listed must be one the device offers).
    @discardableResult
    public func configureGestures(checked: Bool = true, _ change: (inout GestureConfiguration) -> Void) async throws -> GestureConfiguration {
        do {
            var (id, configuration) = try machine.gestureConfigurationToChange()
            let w = try wire(id)
            change(&configuration)
            try machine.gestureWriteStarted(configuration, checked: checked)
            try await write(.gestureConfiguration, configuration.encoded(), on: w)
            await perform(machine.writeAccepted(sensors: false))
            let value = try decode(await read(.gestureConfiguration, on: w), "gesture configuration") { b throws(WearableError) in try GestureConfiguration(decoding: b) }
            await perform(machine.gestureConfigurationUpdated(value, link: id, accepted: true))
            return value
        } catch {
            await perform(machine.writeFailed(sensors: false, Self.sessionError(error)))
            throw error
        }
    }

    // MARK: Notifications

    private func handlePush(_ pdu: GATTPDU, link id: WearableLinkID) {
        guard case let .notification(handle, value) = pdu, let layout = wire?.layout, wire?.id == id else { return }
        let hostTime = elapsed()
        let c = layout.characteristics.first(where: { $0.valueHandle == handle })?.wearableCharacteristic
        switch machine.notification(c, value, link: id, at: hostTime) {
        case .nothing: break
        case let .readings(batch): readingFanout.publish(batch)
        case let .gesture(g): gestureBroadcast.yield(g)
        case let .event(e): publish(e)
        }
    }

    // MARK: GATT operations

    /// The open session's link.
    private func openWire() throws(WearableSessionError) -> Wire {
        guard machine.isOpen, let wire else { throw notOpenError() }
        return wire
    }

    /// Link `id` if the shell still holds it.
    private func wire(_ id: WearableLinkID) throws(WearableSessionError) -> Wire {
        guard let wire, wire.id == id else { throw notOpenError() }
        return wire
    }

    private func notOpenError() -> WearableSessionError {
        WearableSessionError(.notOpen, "the session with \(peer) is not open", category: .usage)
    }

    private func handle(_ c: WearableCharacteristic, on w: Wire) throws(WearableSessionError) -> GATTCharacteristicEntry {
        guard let entry = w.layout[c] else { throw notOpenError() }
        return entry
    }

    private func read(_ c: WearableCharacteristic, on w: Wire) async throws -> [UInt8] {
        let entry = try handle(c, on: w)
        switch try await w.client.perform(.readRequest(handle: entry.valueHandle)) {
        case let .readResponse(_, value): return value
        case let .errorResponse(op, h, e, reason): throw WearableSessionError.refusal(GATTKey(requestOpcode: op, handle: h), e, reason)
        case let other: throw unexpected(other, "read of the \(c)")
        }
    }

    private func write(_ c: WearableCharacteristic, _ value: [UInt8], on w: Wire) async throws {
        let entry = try handle(c, on: w)
        try await write(handle: entry.valueHandle, value, what: "\(c)", on: w.client)
    }

    private func write(handle: UInt16, _ value: [UInt8], what: String, on s: any GATTClient) async throws {
        switch try await s.perform(.writeRequest(handle: handle, value: value)) {
        case .writeResponse: return
        case let .errorResponse(_, _, e, reason):
            throw WearableSessionError(.refused, "the device refused the \(what) write: \(e)" + (reason.isEmpty ? "" : ": \(reason)"),
                                       category: .device, attError: e, reason: reason)
        case let other: throw unexpected(other, "write of the \(what)")
        }
    }

    private func setNotifications(_ c: WearableCharacteristic, on: Bool, wire w: Wire) async throws {
        let entry = try handle(c, on: w)
        guard entry.configurationHandle != 0 else { throw WearableSessionError(.notAWearable, "\(peer): \(c) has no notification descriptor", category: .device) }
        try await write(handle: entry.configurationHandle, on ? [0x01, 0x00] : [0x00, 0x00], what: "\(c) notification descriptor", on: w.client)
    }

    private func unexpected(_ pdu: GATTPDU, _ what: String) -> WearableSessionError {
        .malformed("\(peer) answered the \(what) with opcode 0x\(String(pdu.opcode, radix: 16))")
    }

    private func decode<T>(_ bytes: [UInt8], _ what: String, _ body: ([UInt8]) throws(WearableError) -> T) throws(WearableSessionError) -> T {
        do throws(WearableError) {
            return try body(bytes)
        } catch {
            throw .malformed("\(peer) sent a \(what) that does not decode: \(error.message)")
        }
    }

    private static func sessionError(_ error: any Error) -> WearableSessionError {
        if let e = error as? WearableSessionError { return e }
        if error is CancellationError { return WearableSessionError(.notOpen, "cancelled", category: .connection) }
        return WearableSessionError(.malformedReply, "\(error)", category: .device)
    }
}
