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

    public private(set) var deviceInformation: DeviceInformation?
    public private(set) var sensorInformation: SensorInformation?
    public private(set) var gestureInformation: GestureInformation?
    /// The device's sensor configuration as last read (all disabled at open).
    public private(set) var sensorConfiguration: SensorConfiguration?
    public private(set) var gestureConfiguration: GestureConfiguration?
    /// The link's MTU (the smaller of both sides').
    public private(set) var mtu: UInt16 = 23
    /// What arrived since the last `open()`.
    public private(set) var statistics = WearableStatistics()

    private let connect: Connect
    private let clock: any Clock<Duration>
    private let elapsed: @Sendable () -> Duration
    /// The clock of the reconnect waits (the session's `clock`, as time since the session was made).
    private let sessionClock: SessionClock
    private let logger: Logger
    private var link: (any GATTClient)?
    private var layout: GATTServiceLayout?
    private var parser: SensorDataParser?
    private var unwrapper = TimestampUnwrapper()
    private var gapDetectors: [SensorType: GapDetector] = [:]
    /// A sensor configuration being written.
    private var pendingSensorConfiguration: SensorConfiguration?
    /// The configurations last accepted by the device since `open()`: written again after a reconnect.
    private var acceptedSensorConfiguration: SensorConfiguration?
    private var acceptedGestureConfiguration: GestureConfiguration?
    /// Reconnecting (with `options.reconnect`): the state value, and the task that drives it.
    private var reconnector: ReconnectMachine?
    private var reconnectTask: Task<Void, Never>?
    private var generation = 0
    private var opening = false
    private var tasks: [Task<Void, Never>] = []
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
    public var isOpen: Bool { link != nil }

    /// Whether the session lost its link and is reconnecting (`options.reconnect`).
    public var isReconnecting: Bool { reconnector?.isReconnecting ?? false }

    // MARK: Open and close

    /// Opens the session (nothing happens when it is open). Reports `didOpen` or `didFailToOpen` and throws the
    /// latter's error: `.connectionFailed`, `.notAWearable`, `.timeout`, `.refused`, `.malformedReply`, ...
    public func open() async throws {
        guard link == nil else { return }
        guard !opening, !isReconnecting else {
            throw WearableSessionError(.notOpen, "the session with \(peer) is already \(opening ? "opening" : "reconnecting")", category: .usage)
        }
        opening = true
        defer { opening = false }
        statistics = WearableStatistics()
        unwrapper = TimestampUnwrapper()
        acceptedSensorConfiguration = nil
        acceptedGestureConfiguration = nil
        reconnector = options.reconnect.map(ReconnectMachine.init(policy:))
        do {
            try await establish()
            eventBroadcast.yield(.didOpen)
        } catch {
            tearDown()
            eventBroadcast.yield(.didFailToOpen(Self.openFailure(error, peer: peer)))
            throw error
        }
    }

    private static func openFailure(_ error: any Error, peer: String) -> WearableSessionError {
        error as? WearableSessionError
            ?? (error is CancellationError ? WearableSessionError(.notOpen, "opening \(peer) was cancelled", category: .connection)
                : WearableSessionError(.connectionFailed, "cannot open \(peer): \(error)", category: .connection))
    }

    /// Opens a link (a new generation): connects, exchanges the MTU, discovers, reads the information and turns the
    /// notifications on; `again`: a reconnect, which writes the accepted configurations again before the link
    /// counts as open. On failure the link is closed and forgotten (listeners stay: `open()` ends them).
    private func establish(again: Bool = false) async throws {
        generation += 1
        let current = generation
        var session: (any GATTClient)?
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
            session = s
            let pushes = await s.pushes()
            let linkEvents = await s.events()
            // After a reconnect the first sample of each sensor starts afresh: the link's gap is the reconnect's,
            // not samples the device lost (docs/wearable.md §7.1). The unwrapper goes on (the device clock does).
            gapDetectors = [:]

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
            guard generation == current else {
                throw WearableSessionError(.notOpen, "opening \(peer) was abandoned", category: .connection)
            }
            layout = found
            link = s
            deviceInformation = try decode(await read(.deviceInformation, on: s), "device information") { b throws(WearableError) in try DeviceInformation(decoding: b) }
            let sensors = try decode(await read(.sensorInformation, on: s), "sensor information") { b throws(WearableError) in try SensorInformation(decoding: b) }
            sensorInformation = sensors
            parser = SensorDataParser(information: sensors)
            gestureInformation = try decode(await read(.gestureInformation, on: s), "gesture information") { b throws(WearableError) in try GestureInformation(decoding: b) }
            sensorConfiguration = try decode(await read(.sensorConfiguration, on: s), "sensor configuration") { b throws(WearableError) in try SensorConfiguration(decoding: b) }
            gestureConfiguration = try decode(await read(.gestureConfiguration, on: s), "gesture configuration") { b throws(WearableError) in try GestureConfiguration(decoding: b) }
            tasks = [
                Task { [weak self] in
                    for await pdu in pushes { await self?.handlePush(pdu, generation: current) }
                },
                Task { [weak self] in
                    for await case let .disconnected(error) in linkEvents { await self?.linkEnded(error, generation: current) }
                },
            ]
            for c in [WearableCharacteristic.sensorData, .gestureData, .sensorConfiguration, .gestureConfiguration] {
                try await setNotifications(c, on: true, link: s)
            }
            if again { try await writeAcceptedConfigurations(on: s) }
            guard generation == current, link != nil else {
                throw WearableSessionError(.disconnected, "the link to \(peer) was lost while opening", category: .connection)
            }
        } catch {
            if generation == current {
                generation += 1
                detachLink()
            }
            await session?.close()
            throw error
        }
    }

    /// After a reconnect: the sensor and gesture configurations the device accepted before, written again (the
    /// device starts every link with everything disabled) and read back.
    private func writeAcceptedConfigurations(on s: any GATTClient) async throws {
        if let wanted = acceptedSensorConfiguration, !wanted.enabledSensors.isEmpty {
            try await write(.sensorConfiguration, wanted.encoded(), on: s)
            eventBroadcast.yield(.didWriteSensorConfiguration)
            updateSensorConfiguration(try decode(await read(.sensorConfiguration, on: s), "sensor configuration") { b throws(WearableError) in try SensorConfiguration(decoding: b) })
        }
        if let wanted = acceptedGestureConfiguration, !wanted.enabledGestures.isEmpty {
            try await write(.gestureConfiguration, wanted.encoded(), on: s)
            eventBroadcast.yield(.didWriteGestureConfiguration)
            let value = try decode(await read(.gestureConfiguration, on: s), "gesture configuration") { b throws(WearableError) in try GestureConfiguration(decoding: b) }
            gestureConfiguration = value
            eventBroadcast.yield(.didUpdateGestureConfiguration(value))
        }
    }

    /// Closes the session at the caller's request (`didClose(nil)`); listeners end. Nothing happens when closed.
    /// While reconnecting it stops the attempts at once (an attempt under way is abandoned).
    public func close() async {
        if isReconnecting {
            reconnector?.stop()
            reconnectTask?.cancel()
            reconnectTask = nil
            generation += 1
            let s = link
            tearDown()
            await s?.close()
            eventBroadcast.yield(.didClose(nil))
            return
        }
        guard let s = link else { return }
        reconnector?.stop()
        generation += 1
        tearDown()
        await s.close()
        eventBroadcast.yield(.didClose(nil))
    }

    private func linkEnded(_ error: WearableSessionError, generation ended: Int) {
        guard ended == generation, link != nil else { return }
        generation += 1
        if isReconnecting {
            // The link of an attempt under way died: that attempt fails on its own (its requests, or the final check).
            detachLink()
            return
        }
        if var machine = reconnector {
            let action = machine.linkLost(error, at: sessionClock.now())
            reconnector = machine
            logger.info("wearable session with \(peer): link lost (\(error.message)); reconnecting")
            detachLink()
            eventBroadcast.yield(.didLoseLink(error))
            reconnectTask = Task { [weak self] in await self?.reconnect(action, lost: error) }
            return
        }
        logger.info("wearable session with \(peer) closed: \(error.message)")
        tearDown()
        eventBroadcast.yield(.didClose(error))
    }

    /// The I/O shell of `ReconnectMachine`: does what it answers (open, wait on the session's clock) and tells it
    /// what happened, until it reconnected, gave up, or `close()` stopped it.
    private func reconnect(_ first: ReconnectMachine.Action, lost: WearableSessionError) async {
        var action = first
        while reconnector != nil {
            switch action {
            case let .connect(attempt):
                logger.debug("wearable session with \(peer): reconnect attempt \(attempt)")
                do {
                    try await establish(again: true)
                    guard !Task.isCancelled, isReconnecting else { return }
                    action = reconnector!.attemptSucceeded(at: sessionClock.now())
                } catch {
                    guard !Task.isCancelled, isReconnecting else { return }
                    let failure = Self.openFailure(error, peer: peer)
                    let permanent = failure.code == .refused || failure.code == .notAWearable
                    action = reconnector!.attemptFailed(failure, at: sessionClock.now(), permanent: permanent)
                }
            case let .retry(at: until):
                do { try await sessionClock.sleep(until) } catch { return }
                guard !Task.isCancelled, isReconnecting else { return }
                action = reconnector!.timerFired(at: sessionClock.now())
            case let .reconnected(gap, attempts):
                statistics.reconnects += 1
                statistics.linkDownTime += gap
                reconnectTask = nil
                logger.info("wearable session with \(peer): reconnected after \(gap) (\(attempts) attempts)")
                eventBroadcast.yield(.didReconnect(gap: gap, attempts: attempts))
                return
            case let .giveUp(last):
                reconnectTask = nil
                let limit = options.reconnect?.giveUpAfter.map { " within \($0)" } ?? ""
                let error = WearableSessionError(.disconnected, "\(lost.message); not back\(limit) (last attempt: \(last.message))", category: .connection)
                generation += 1
                tearDown()
                eventBroadcast.yield(.didClose(error))
                return
            case .none:
                return
            }
        }
    }

    /// Forgets the link and what the device had configured (it disables everything on disconnect); the listeners
    /// go on (a reconnect feeds them again).
    private func detachLink() {
        link = nil
        tasks.forEach { $0.cancel() }
        tasks = []
        sensorConfiguration = nil
        gestureConfiguration = nil
    }

    /// Forgets the link as `detachLink` does and ends the listeners (later subscribers belong to the next open).
    private func tearDown() {
        detachLink()
        readingFanout.finish()
        gestureBroadcast.finish()
        readingFanout = ReadingFanout()
        gestureBroadcast = Broadcast()
    }

    // MARK: Reads

    /// Reads DeviceInformation again.
    public func readDeviceInformation() async throws -> DeviceInformation {
        let s = try openLink()
        let value = try decode(await read(.deviceInformation, on: s), "device information") { b throws(WearableError) in try DeviceInformation(decoding: b) }
        deviceInformation = value
        return value
    }

    /// Reads SensorInformation again.
    public func readSensorInformation() async throws -> SensorInformation {
        let s = try openLink()
        let value = try decode(await read(.sensorInformation, on: s), "sensor information") { b throws(WearableError) in try SensorInformation(decoding: b) }
        sensorInformation = value
        parser?.information = value
        return value
    }

    /// Reads GestureInformation again.
    public func readGestureInformation() async throws -> GestureInformation {
        let s = try openLink()
        let value = try decode(await read(.gestureInformation, on: s), "gesture information") { b throws(WearableError) in try GestureInformation(decoding: b) }
        gestureInformation = value
        return value
    }

    /// Reads the sensor configuration.
    public func readSensorConfiguration() async throws -> SensorConfiguration {
        let s = try openLink()
        let value = try decode(await read(.sensorConfiguration, on: s), "sensor configuration") { b throws(WearableError) in try SensorConfiguration(decoding: b) }
        updateSensorConfiguration(value)
        return value
    }

    /// Reads the gesture configuration.
    public func readGestureConfiguration() async throws -> GestureConfiguration {
        let s = try openLink()
        let value = try decode(await read(.gestureConfiguration, on: s), "gesture configuration") { b throws(WearableError) in try GestureConfiguration(decoding: b) }
        gestureConfiguration = value
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
            let s = try openLink()
            guard var configuration = sensorConfiguration else { throw notOpenError() }
            change(&configuration)
            if checked { try check(configuration) }
            // The device may stream at the new period before its answer arrives: until the configuration is read
            // back, gaps are judged by the longer of both periods, so the change is never taken for lost samples.
            pendingSensorConfiguration = configuration
            defer { pendingSensorConfiguration = nil }
            try await write(.sensorConfiguration, configuration.encoded(), on: s)
            eventBroadcast.yield(.didWriteSensorConfiguration)
            let value = try decode(await read(.sensorConfiguration, on: s), "sensor configuration") { b throws(WearableError) in try SensorConfiguration(decoding: b) }
            updateSensorConfiguration(value)
            acceptedSensorConfiguration = value
            return value
        } catch {
            eventBroadcast.yield(.didFailToWriteSensorConfiguration(Self.sessionError(error)))
            throw error
        }
    }

    /// Changes the gesture configuration in one write (`set(gesture:enabled:)`, `disableAll()`); as
    /// `configureSensors` (checked: every gesture listed must be one the device offers).
    @discardableResult
    public func configureGestures(checked: Bool = true, _ change: (inout GestureConfiguration) -> Void) async throws -> GestureConfiguration {
        do {
            let s = try openLink()
            guard var configuration = gestureConfiguration else { throw notOpenError() }
            change(&configuration)
            if checked, let offered = gestureInformation?.availableGestures {
                for e in configuration.entries where e.enabled && !offered.contains(e.gesture) {
                    throw WearableSessionError.local("gesture configuration: the device does not offer \(e.gesture) (it offers \(offered.map(\.description).joined(separator: ", ")))", rule: .gestureNotAvailable)
                }
            }
            try await write(.gestureConfiguration, configuration.encoded(), on: s)
            eventBroadcast.yield(.didWriteGestureConfiguration)
            let value = try decode(await read(.gestureConfiguration, on: s), "gesture configuration") { b throws(WearableError) in try GestureConfiguration(decoding: b) }
            gestureConfiguration = value
            acceptedGestureConfiguration = value
            eventBroadcast.yield(.didUpdateGestureConfiguration(value))
            return value
        } catch {
            eventBroadcast.yield(.didFailToWriteGestureConfiguration(Self.sessionError(error)))
            throw error
        }
    }

    /// The library's checks: what the device's own information says cannot work.
    private func check(_ configuration: SensorConfiguration) throws(WearableSessionError) {
        guard let info = sensorInformation, let device = deviceInformation else { return }
        for e in configuration.entries where e.period != nil {
            guard let entry = info[e.sensor], device.availableSensors.contains(e.sensor) else {
                throw .local("sensor configuration: the device has no \(e.sensor) (it lists \(info.sensors.map(\.description).joined(separator: ", ")))", rule: .sensorNotAvailable)
            }
            if let p = e.period, !entry.availablePeriods.contains(p) {
                throw .local("sensor configuration: \(e.sensor) does not offer \(p) (it offers \(entry.availablePeriods.sorted().map(\.description).joined(separator: ", ")))", rule: .periodNotOffered)
            }
        }
        let enabled = configuration.enabledSensors.count
        if enabled > Int(device.maxActiveSensors) {
            throw .local("sensor configuration: \(enabled) sensors enabled, the device allows \(device.maxActiveSensors) at once", rule: .tooManySensors)
        }
    }

    private func updateSensorConfiguration(_ value: SensorConfiguration) {
        if value != sensorConfiguration {
            for sensor in SensorType.allCases where value.period(of: sensor) != sensorConfiguration?.period(of: sensor) {
                gapDetectors[sensor]?.reset()
            }
        }
        sensorConfiguration = value
        eventBroadcast.yield(.didUpdateSensorConfiguration(value))
    }

    // MARK: Notifications

    private func handlePush(_ pdu: GATTPDU, generation current: Int) {
        guard current == generation, case let .notification(handle, value) = pdu, let layout else { return }
        let hostTime = elapsed()
        guard let c = layout.characteristics.first(where: { $0.valueHandle == handle })?.wearableCharacteristic else {
            statistics.unknownNotifications += 1
            return
        }
        switch c {
        case .sensorData:
            guard var parser else { return }
            let result = parser.parse(value)
            self.parser = parser
            switch result {
            case let .failure(error): malformed(.sensorData, error)
            case let .success(records):
                statistics.sensorNotifications += 1
                var batch: [SensorReading] = []
                batch.reserveCapacity(records.count)
                for record in records {
                    if let reading = reading(record, hostTime: hostTime) { batch.append(reading) }
                }
                if !batch.isEmpty { readingFanout.publish(batch) }
            }
        case .gestureData:
            do throws(WearableError) {
                let g = try GestureData(decoding: value)
                statistics.gestures += 1
                gestureBroadcast.yield(GestureReading(gesture: g.gesture, timestamp: g.timestamp,
                                                      deviceTime: unwrapper.unwrap(g.timestamp), hostTime: hostTime))
            } catch {
                malformed(.gestureData, error)
            }
        case .sensorConfiguration:
            do throws(WearableError) { updateSensorConfiguration(try SensorConfiguration(decoding: value)) } catch { malformed(c, error) }
        case .gestureConfiguration:
            do throws(WearableError) {
                let g = try GestureConfiguration(decoding: value)
                gestureConfiguration = g
                eventBroadcast.yield(.didUpdateGestureConfiguration(g))
            } catch { malformed(c, error) }
        default:
            statistics.unknownNotifications += 1
        }
    }

    /// The reading of one record, counted in the statistics (nil for a sensor the information does not list).
    private func reading(_ record: SensorRecord, hostTime: Duration) -> SensorReading? {
        guard let entry = sensorInformation?[record.sensor] else { return nil }
        let time = unwrapper.unwrap(record.timestamp)
        let period = Int64(max(sensorConfiguration?.period(of: record.sensor)?.milliseconds ?? 0,
                               pendingSensorConfiguration?.period(of: record.sensor)?.milliseconds ?? 0))
        let missing = gapDetectors[record.sensor, default: GapDetector()].missing(before: time, period: period)
        var counts = statistics[record.sensor]
        counts.samples += 1
        if missing < 0 {
            counts.outOfOrder += 1
        } else if missing > 0 {
            counts.gaps += 1
            counts.missingSamples += missing
        }
        statistics.sensors[record.sensor] = counts
        return SensorReading(sensor: record.sensor, timestamp: record.timestamp, deviceTime: time, hostTime: hostTime,
                             sample: record.sample, value: record.sample.scaled(by: entry.range), missingBefore: max(0, missing))
    }

    private func malformed(_ c: WearableCharacteristic, _ error: WearableError) {
        statistics.malformedNotifications += 1
        statistics.malformedByCode[error.code.rawValue, default: 0] += 1
        logger.debug("malformed \(c) notification from \(peer): \(error.message)")
        eventBroadcast.yield(.didReceiveMalformedNotification(c, error))
    }

    // MARK: GATT operations

    private func openLink() throws(WearableSessionError) -> any GATTClient {
        guard let link else { throw notOpenError() }
        return link
    }

    private func notOpenError() -> WearableSessionError {
        WearableSessionError(.notOpen, "the session with \(peer) is not open", category: .usage)
    }

    private func handle(_ c: WearableCharacteristic) throws(WearableSessionError) -> GATTCharacteristicEntry {
        guard let entry = layout?[c] else { throw notOpenError() }
        return entry
    }

    private func read(_ c: WearableCharacteristic, on s: any GATTClient) async throws -> [UInt8] {
        let entry = try handle(c)
        switch try await s.perform(.readRequest(handle: entry.valueHandle)) {
        case let .readResponse(_, value): return value
        case let .errorResponse(op, h, e, reason): throw WearableSessionError.refusal(GATTKey(requestOpcode: op, handle: h), e, reason)
        case let other: throw unexpected(other, "read of the \(c)")
        }
    }

    private func write(_ c: WearableCharacteristic, _ value: [UInt8], on s: any GATTClient) async throws {
        let entry = try handle(c)
        try await write(handle: entry.valueHandle, value, what: "\(c)", on: s)
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

    private func setNotifications(_ c: WearableCharacteristic, on: Bool, link s: any GATTClient) async throws {
        let entry = try handle(c)
        guard entry.configurationHandle != 0 else { throw WearableSessionError(.notAWearable, "\(peer): \(c) has no notification descriptor", category: .device) }
        try await write(handle: entry.configurationHandle, on ? [0x01, 0x00] : [0x00, 0x00], what: "\(c) notification descriptor", on: s)
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
