import Wearable

/// One link of a session (one `connect`). A link's events name it, so that the events of an earlier link (a late
/// notification, a disconnect seen after a reconnect began) change nothing.
public struct WearableLinkID: Sendable, Hashable, CustomStringConvertible {
    public let number: Int
    public init(_ number: Int) { self.number = number }
    public var description: String { "link \(number)" }
}

/// The rules of a `WearableDeviceSession` as a value (docs/architecture.md, "State machines as values"): opening,
/// open, reconnecting after a lost link with backoff, closed; the configurations the device accepted (written again
/// after a reconnect); what the device reported; and the readings' bookkeeping (timestamps unwrapped, gaps marked,
/// statistics). One mutating function per event; times are given (the session's clock, as `Duration` since its
/// origin), never read. Each answers what the I/O shell does next, in order; an event that does not apply in the
/// current state (a stale link's, a timer after `close`) changes nothing and asks for nothing; nothing traps.
public struct WearableSessionMachine: Sendable {
    /// A link of the session with what holds on it: the device starts every link with everything disabled, so its
    /// configurations belong to the link.
    public struct Link: Sendable, Hashable {
        public let id: WearableLinkID
        /// The device's configurations as last read or notified on this link (nil until read).
        public var sensorConfiguration: SensorConfiguration?
        public var gestureConfiguration: GestureConfiguration?
        /// A sensor configuration being written: until it is read back, gaps are judged by the longer of both
        /// periods, so a device that streams at the new period before answering is never taken for losing samples.
        public var pendingSensorConfiguration: SensorConfiguration?

        public init(id: WearableLinkID, sensorConfiguration: SensorConfiguration? = nil, gestureConfiguration: GestureConfiguration? = nil,
                    pendingSensorConfiguration: SensorConfiguration? = nil) {
            (self.id, self.sensorConfiguration, self.gestureConfiguration, self.pendingSensorConfiguration) =
                (id, sensorConfiguration, gestureConfiguration, pendingSensorConfiguration)
        }
    }

    /// The configurations the device accepted since `open()`: written again after a reconnect.
    public struct Accepted: Sendable, Hashable {
        public var sensors: SensorConfiguration?
        public var gestures: GestureConfiguration?
        public init(sensors: SensorConfiguration? = nil, gestures: GestureConfiguration? = nil) { (self.sensors, self.gestures) = (sensors, gestures) }

        /// What a reconnect writes: the accepted configurations that enable something (a device starts a link with
        /// everything disabled).
        var toWrite: Accepted {
            Accepted(sensors: sensors.flatMap { $0.enabledSensors.isEmpty ? nil : $0 }, gestures: gestures.flatMap { $0.enabledGestures.isEmpty ? nil : $0 })
        }
    }

    public enum State: Sendable, Hashable {
        /// Never opened, closed by the caller, failed to open, or a link lost for good.
        case closed
        /// `open()` under way on `link`.
        case opening(Link)
        /// Open on `link`.
        case open(Link, accepted: Accepted)
        /// The link was lost (with a reconnect policy): the session reopens the device.
        case reconnecting(Reconnecting)
    }

    /// Between a lost link and its reconnect.
    public struct Reconnecting: Sendable, Hashable {
        /// The loss, and when it was.
        public var lost: WearableSessionError
        public var lostAt: Duration
        public var accepted: Accepted
        public var attempt: Attempt
    }

    public enum Attempt: Sendable, Hashable {
        /// The `number`th attempt since the loss is opening `link`.
        case connecting(number: Int, link: Link)
        /// Waiting until `retryAt` after `failed` failed attempts.
        case waiting(failed: Int, retryAt: Duration)
    }

    /// What the shell does.
    public enum Action: Sendable, Hashable {
        /// Open the device on a new link (connect, MTU, discovery, information, notifications on), write `rewrite`
        /// again (a reconnect; `linkConfiguration…` events), then `linkEstablished` or `linkFailed`.
        case connect(WearableLinkID, rewrite: Accepted)
        /// Wake at this time on the session's clock: `retryTimerFired`.
        case startTimer(at: Duration)
        /// Stop the reconnect attempt under way and the timer.
        case stopReconnecting
        /// Forget the current link (its tasks end); `close`: also close it (a lost link is gone already).
        case dropLink(close: Bool)
        /// End every listener of readings and gestures (later subscribers belong to the next open).
        case endListeners
        case publish(WearableEvent)
    }

    /// The answer to `open()`.
    public enum OpenDecision: Sendable, Hashable {
        case alreadyOpen
        /// Open the device on this link (as `Action.connect` without a rewrite), then `linkEstablished` or `linkFailed`.
        case connect(WearableLinkID)
    }

    /// What a notification gave.
    public enum Notified: Sendable, Hashable {
        case nothing
        /// A sensor data notification's readings (never empty).
        case readings([SensorReading])
        case gesture(GestureReading)
        /// A configuration notified, or a notification that did not decode (`didReceiveMalformedNotification`).
        case event(WearableEvent)
    }

    /// What the device said of itself on a new link (the reads of `open`).
    public struct LinkInformation: Sendable, Hashable {
        public var mtu: UInt16
        public var device: DeviceInformation
        public var sensors: SensorInformation
        public var gestures: GestureInformation
        public var sensorConfiguration: SensorConfiguration
        public var gestureConfiguration: GestureConfiguration

        public init(mtu: UInt16, device: DeviceInformation, sensors: SensorInformation, gestures: GestureInformation,
                    sensorConfiguration: SensorConfiguration, gestureConfiguration: GestureConfiguration) {
            (self.mtu, self.device, self.sensors, self.gestures, self.sensorConfiguration, self.gestureConfiguration) =
                (mtu, device, sensors, gestures, sensorConfiguration, gestureConfiguration)
        }
    }

    /// Where the session connects (for messages).
    public let peer: String
    /// Reconnect after a lost link (nil: a lost link closes the session).
    public let reconnect: ReconnectPolicy?
    public private(set) var state: State = .closed

    /// What the device reported, as last read (kept after the session closes).
    public private(set) var deviceInformation: DeviceInformation?
    public private(set) var sensorInformation: SensorInformation?
    public private(set) var gestureInformation: GestureInformation?
    /// The link's MTU (the smaller of both sides').
    public private(set) var mtu: UInt16 = 23
    /// What arrived since the last `open()`.
    public private(set) var statistics = WearableStatistics()

    /// The readings' bookkeeping: timestamps on one line from `open()` on (the device clock goes on across a
    /// reconnect), gaps per sensor from each link's first sample on.
    private var unwrapper = TimestampUnwrapper()
    private var gapDetectors: [SensorType: GapDetector] = [:]
    /// The sensor data layout of the device's SensorInformation (from the first link's reads on).
    private var parser: SensorDataParser?
    private var links = 0

    public init(peer: String, reconnect: ReconnectPolicy? = nil) {
        self.peer = peer
        self.reconnect = reconnect
    }

    // MARK: Queries

    /// The link whose events count now: the one opening, open, or of a reconnect attempt under way.
    public var currentLink: Link? {
        switch state {
        case let .opening(link), let .open(link, _): link
        case let .reconnecting(r): if case let .connecting(_, link) = r.attempt { link } else { nil }
        case .closed: nil
        }
    }

    public func isCurrent(_ id: WearableLinkID) -> Bool { currentLink?.id == id }

    public var isOpen: Bool { if case .open = state { true } else { false } }

    public var isReconnecting: Bool { if case .reconnecting = state { true } else { false } }

    /// The device's configurations on the current link (nil without one).
    public var sensorConfiguration: SensorConfiguration? { currentLink?.sensorConfiguration }
    public var gestureConfiguration: GestureConfiguration? { currentLink?.gestureConfiguration }

    private mutating func newLink() -> Link {
        links += 1
        return Link(id: WearableLinkID(links))
    }

    /// Changes the current link (if it is `id`'s); false when `id` is not current.
    private mutating func updateLink(_ id: WearableLinkID, _ change: (inout Link) -> Void) -> Bool {
        switch state {
        case var .opening(link) where link.id == id:
            change(&link)
            state = .opening(link)
        case .open(var link, let accepted) where link.id == id:
            change(&link)
            state = .open(link, accepted: accepted)
        case var .reconnecting(r):
            guard case .connecting(let number, var link) = r.attempt, link.id == id else { return false }
            change(&link)
            r.attempt = .connecting(number: number, link: link)
            state = .reconnecting(r)
        default:
            return false
        }
        return true
    }

    // MARK: Open and close

    /// `open()`: starts a new opening from closed (statistics and device times start afresh).
    /// - Throws: `.notOpen` (usage) while opening or reconnecting.
    public mutating func open() throws(WearableSessionError) -> OpenDecision {
        switch state {
        case .open: return .alreadyOpen
        case .opening, .reconnecting:
            throw WearableSessionError(.notOpen, "the session with \(peer) is already \(isReconnecting ? "reconnecting" : "opening")", category: .usage)
        case .closed:
            statistics = WearableStatistics()
            unwrapper = TimestampUnwrapper()
            let link = newLink()
            state = .opening(link)
            return .connect(link.id)
        }
    }

    /// The reads of a new link came (before notifications are on): what the device reported is known, and each
    /// sensor's first sample on the link starts afresh (a reconnect's gap is not samples the device lost,
    /// docs/wearable.md §7.1).
    public mutating func linkInformation(_ information: LinkInformation, link id: WearableLinkID) {
        guard updateLink(id, { link in
            link.sensorConfiguration = information.sensorConfiguration
            link.gestureConfiguration = information.gestureConfiguration
        }) else { return }
        mtu = information.mtu
        deviceInformation = information.device
        sensorInformation = information.sensors
        gestureInformation = information.gestures
        parser = SensorDataParser(information: information.sensors)
        gapDetectors = [:]
    }

    /// The link `id` is open (with the configurations written again on a reconnect) at `now`.
    public mutating func linkEstablished(_ id: WearableLinkID, at now: Duration) -> [Action] {
        switch state {
        case let .opening(link) where link.id == id:
            state = .open(link, accepted: Accepted())
            return [.publish(.didOpen)]
        case let .reconnecting(r):
            guard case let .connecting(number, link) = r.attempt, link.id == id else { return [] }
            state = .open(link, accepted: r.accepted)
            let gap = now - r.lostAt
            statistics.reconnects += 1
            statistics.linkDownTime += gap
            return [.publish(.didReconnect(gap: gap, attempts: number))]
        default:
            return []
        }
    }

    /// Opening link `id` failed at `now` (the shell closed what it had opened of it). A failed `open()` closes the
    /// session; a failed reconnect attempt waits for the next (the policy's backoff) or gives up: at its limit, or
    /// at once when no retry will change it (the device refused a configuration it took before, or it is not a
    /// wearable).
    public mutating func linkFailed(_ id: WearableLinkID, _ error: WearableSessionError, at now: Duration) -> [Action] {
        switch state {
        case let .opening(link) where link.id == id:
            state = .closed
            return [.endListeners, .publish(.didFailToOpen(error))]
        case let .reconnecting(r):
            guard case let .connecting(number, link) = r.attempt, link.id == id else { return [] }
            return attemptFailed(r, number: number, error, at: now)
        default:
            return []
        }
    }

    private mutating func attemptFailed(_ r: Reconnecting, number: Int, _ error: WearableSessionError, at now: Duration) -> [Action] {
        let policy = reconnect ?? ReconnectPolicy()
        var retryAt = now + policy.delay(afterFailedAttempts: number)
        if let limit = policy.giveUpAfter {
            // The last attempt is made at the limit itself; one failing at or after it gives up.
            if now - r.lostAt >= limit { return giveUp(r, last: error) }
            retryAt = min(retryAt, r.lostAt + limit)
        }
        if error.code == .refused || error.code == .notAWearable { return giveUp(r, last: error) }
        var waiting = r
        waiting.attempt = .waiting(failed: number, retryAt: retryAt)
        state = .reconnecting(waiting)
        return [.startTimer(at: retryAt)]
    }

    private mutating func giveUp(_ r: Reconnecting, last: WearableSessionError) -> [Action] {
        state = .closed
        let limit = reconnect?.giveUpAfter.map { " within \($0)" } ?? ""
        let error = WearableSessionError(.disconnected, "\(r.lost.message); not back\(limit) (last attempt: \(last.message))", category: .connection)
        return [.endListeners, .publish(.didClose(error))]
    }

    /// The retry timer fired at `now`: the next attempt (a timer that fires early waits on).
    public mutating func retryTimerFired(at now: Duration) -> [Action] {
        guard case var .reconnecting(r) = state, case let .waiting(failed, retryAt) = r.attempt else { return [] }
        guard now >= retryAt else { return [.startTimer(at: retryAt)] }
        let link = newLink()
        r.attempt = .connecting(number: failed + 1, link: link)
        state = .reconnecting(r)
        return [.connect(link.id, rewrite: r.accepted.toWrite)]
    }

    /// Link `id` was lost at `now`. Open: with a reconnect policy the first attempt at once (listeners go on),
    /// without one the session closes with the error. Opening: the open fails. A reconnect attempt's link: that
    /// attempt failed.
    public mutating func linkLost(_ id: WearableLinkID, _ error: WearableSessionError, at now: Duration) -> [Action] {
        switch state {
        case let .open(link, accepted) where link.id == id:
            guard reconnect != nil else {
                state = .closed
                return [.dropLink(close: false), .endListeners, .publish(.didClose(error))]
            }
            let next = newLink()
            state = .reconnecting(Reconnecting(lost: error, lostAt: now, accepted: accepted, attempt: .connecting(number: 1, link: next)))
            return [.dropLink(close: false), .publish(.didLoseLink(error)), .connect(next.id, rewrite: accepted.toWrite)]
        case let .opening(link) where link.id == id:
            state = .closed
            return [.dropLink(close: false), .endListeners, .publish(.didFailToOpen(error))]
        case let .reconnecting(r):
            guard case let .connecting(number, link) = r.attempt, link.id == id else { return [] }
            return [.dropLink(close: false)] + attemptFailed(r, number: number, error, at: now)
        default:
            return []
        }
    }

    /// `close()`: the caller's close (`didClose(nil)`), from any state but closed; a reconnect stops at once.
    public mutating func close() -> [Action] {
        switch state {
        case .closed:
            return []
        case .opening, .open:
            state = .closed
            return [.dropLink(close: true), .endListeners, .publish(.didClose(nil))]
        case .reconnecting:
            state = .closed
            return [.stopReconnecting, .dropLink(close: true), .endListeners, .publish(.didClose(nil))]
        }
    }

    // MARK: Reads

    /// What the caller read again (`readDeviceInformation`, …): known from now on.
    public enum InformationRead: Sendable, Hashable {
        case device(DeviceInformation), sensors(SensorInformation), gestures(GestureInformation)
    }

    public mutating func informationRead(_ value: InformationRead) {
        switch value {
        case let .device(d): deviceInformation = d
        case let .sensors(s):
            sensorInformation = s
            parser?.information = s
        case let .gestures(g): gestureInformation = g
        }
    }

    /// The device's sensor configuration, read (after a write, a reconnect's write, or the caller's read) or
    /// notified on link `id`: the sensors whose period changed start their gap detection afresh; `accepted`: the
    /// read back of the caller's write, written again after a reconnect.
    public mutating func sensorConfigurationRead(_ value: SensorConfiguration, link id: WearableLinkID, accepted: Bool = false) -> [Action] {
        let before = currentLink?.sensorConfiguration
        guard updateLink(id, { $0.sensorConfiguration = value }) else { return [] }
        if value != before {
            for sensor in SensorType.allCases where value.period(of: sensor) != before?.period(of: sensor) {
                gapDetectors[sensor]?.reset()
            }
        }
        if accepted, case .open(let link, var a) = state {
            a.sensors = value
            state = .open(link, accepted: a)
        }
        return [.publish(.didUpdateSensorConfiguration(value))]
    }

    /// The device's gesture configuration read back after a write or notified on link `id` (reported); `accepted` as
    /// for sensors.
    public mutating func gestureConfigurationUpdated(_ value: GestureConfiguration, link id: WearableLinkID, accepted: Bool = false) -> [Action] {
        guard updateLink(id, { $0.gestureConfiguration = value }) else { return [] }
        if accepted, case .open(let link, var a) = state {
            a.gestures = value
            state = .open(link, accepted: a)
        }
        return [.publish(.didUpdateGestureConfiguration(value))]
    }

    /// The caller read the gesture configuration on link `id` (known, not reported).
    public mutating func gestureConfigurationRead(_ value: GestureConfiguration, link id: WearableLinkID) {
        _ = updateLink(id) { $0.gestureConfiguration = value }
    }

    // MARK: Configuration writes

    /// The open link and its sensor configuration, for the caller to change (`configureSensors`).
    /// - Throws: `.notOpen` when the session is not open.
    public func sensorConfigurationToChange() throws(WearableSessionError) -> (WearableLinkID, SensorConfiguration) {
        guard case let .open(link, _) = state, let configuration = link.sensorConfiguration else { throw notOpen }
        return (link.id, configuration)
    }

    /// The open link and its gesture configuration, for the caller to change (`configureGestures`).
    public func gestureConfigurationToChange() throws(WearableSessionError) -> (WearableLinkID, GestureConfiguration) {
        guard case let .open(link, _) = state, let configuration = link.gestureConfiguration else { throw notOpen }
        return (link.id, configuration)
    }

    /// The caller asks to write `configuration` on link `id`: `checked`, the library's checks first; then it is
    /// pending until `sensorWriteEnded`.
    /// - Throws: `.rejectedLocally` with the rule the configuration breaks.
    public mutating func sensorWriteStarted(_ configuration: SensorConfiguration, link id: WearableLinkID, checked: Bool) throws(WearableSessionError) {
        if checked { try check(configuration) }
        _ = updateLink(id) { $0.pendingSensorConfiguration = configuration }
    }

    /// The caller's sensor write on link `id` ended (read back, or failed).
    public mutating func sensorWriteEnded(link id: WearableLinkID) {
        _ = updateLink(id) { $0.pendingSensorConfiguration = nil }
    }

    /// The caller asks to write `configuration`: `checked`, every gesture enabled must be one the device offers.
    public func gestureWriteStarted(_ configuration: GestureConfiguration, checked: Bool) throws(WearableSessionError) {
        guard checked, let offered = gestureInformation?.availableGestures else { return }
        for e in configuration.entries where e.enabled && !offered.contains(e.gesture) {
            throw .local("gesture configuration: the device does not offer \(e.gesture) (it offers \(offered.map(\.description).joined(separator: ", ")))",
                         rule: .gestureNotAvailable)
        }
    }

    /// The device accepted a configuration write (the caller's or a reconnect's): reported before its read back.
    public func writeAccepted(sensors: Bool) -> [Action] {
        [.publish(sensors ? .didWriteSensorConfiguration : .didWriteGestureConfiguration)]
    }

    /// The caller's write failed (refused by the checks or the device, or the link): reported.
    public func writeFailed(sensors: Bool, _ error: WearableSessionError) -> [Action] {
        [.publish(sensors ? .didFailToWriteSensorConfiguration(error) : .didFailToWriteGestureConfiguration(error))]
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

    private var notOpen: WearableSessionError {
        WearableSessionError(.notOpen, "the session with \(peer) is not open", category: .usage)
    }

    // MARK: Notifications

    /// A notification of characteristic `c` (nil: a handle the session does not know) arrived on link `id` at
    /// `hostTime`: decoded, timestamps unwrapped, gaps marked, counted.
    public mutating func notification(_ c: WearableCharacteristic?, _ value: [UInt8], link id: WearableLinkID, at hostTime: Duration) -> Notified {
        guard let link = currentLink, link.id == id else { return .nothing }
        guard let c else {
            statistics.unknownNotifications += 1
            return .nothing
        }
        switch c {
        case .sensorData:
            guard let result = parser?.parse(value) else { return .nothing }
            switch result {
            case let .failure(error): return malformed(.sensorData, error)
            case let .success(records):
                statistics.sensorNotifications += 1
                var batch: [SensorReading] = []
                batch.reserveCapacity(records.count)
                for record in records {
                    if let reading = reading(record, on: link, hostTime: hostTime) { batch.append(reading) }
                }
                return batch.isEmpty ? .nothing : .readings(batch)
            }
        case .gestureData:
            do throws(WearableError) {
                let g = try GestureData(decoding: value)
                statistics.gestures += 1
                return .gesture(GestureReading(gesture: g.gesture, timestamp: g.timestamp, deviceTime: unwrapper.unwrap(g.timestamp), hostTime: hostTime))
            } catch {
                return malformed(.gestureData, error)
            }
        case .sensorConfiguration:
            do throws(WearableError) {
                return Self.reported(sensorConfigurationRead(try SensorConfiguration(decoding: value), link: id))
            } catch { return malformed(c, error) }
        case .gestureConfiguration:
            do throws(WearableError) {
                return Self.reported(gestureConfigurationUpdated(try GestureConfiguration(decoding: value), link: id))
            } catch { return malformed(c, error) }
        default:
            statistics.unknownNotifications += 1
            return .nothing
        }
    }

    /// A notified configuration's answer as a notification's: the event it publishes.
    private static func reported(_ actions: [Action]) -> Notified {
        guard case let .publish(event)? = actions.first else { return .nothing }
        return .event(event)
    }

    /// The reading of one record, counted in the statistics (nil for a sensor the information does not list).
    private mutating func reading(_ record: SensorRecord, on link: Link, hostTime: Duration) -> SensorReading? {
        guard let entry = sensorInformation?[record.sensor] else { return nil }
        let time = unwrapper.unwrap(record.timestamp)
        let period = Int64(max(link.sensorConfiguration?.period(of: record.sensor)?.milliseconds ?? 0,
                               link.pendingSensorConfiguration?.period(of: record.sensor)?.milliseconds ?? 0))
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

    private mutating func malformed(_ c: WearableCharacteristic, _ error: WearableError) -> Notified {
        statistics.malformedNotifications += 1
        statistics.malformedByCode[error.code.rawValue, default: 0] += 1
        return .event(.didReceiveMalformedNotification(c, error))
    }
}
