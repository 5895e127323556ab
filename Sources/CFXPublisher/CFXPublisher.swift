import CFX
import Foundation
import Records
import Station
import Synchronization

/// Where and how a station publishes its CFX messages.
public struct CFXOptions: Sendable {
    public var broker: AMQPAddress
    /// The spool directory (created when missing).
    public var spool: String
    /// The station's CFX handle (`Source`).
    public var handle: String
    /// How long to wait before connecting again after the broker was unreachable.
    public var reconnectDelay: Duration

    public init(broker: AMQPAddress, spool: String, handle: String, reconnectDelay: Duration = .seconds(1)) {
        (self.broker, self.spool, self.handle, self.reconnectDelay) = (broker, spool, handle, reconnectDelay)
    }
}

/// What the publisher has done so far.
public struct CFXPublisherStatus: Sendable, Hashable {
    /// Messages written to the spool by this publisher (not those found there at start).
    public var spooled = 0
    /// Messages found in the spool at start (a previous run left them).
    public var resent = 0
    /// Messages the broker accepted.
    public var accepted = 0
    /// Messages in the spool, not accepted yet.
    public var waiting = 0
    /// Whether the link to the broker is open.
    public var connected = false
    /// Units whose messages could not be made (their records could not be read).
    public var failedUnits = 0
}

/// What happened to a unit's run, for its messages: the work started (WorkStarted), the identity was written
/// (UnitsPersonalized), the run ended (the messages not made yet: UnitsTested, WorkCompleted).
enum CFXRunEvent: Sendable {
    case started(Int64)
    case personalized(Int64)
    case ended(Int64)

    var run: Int64 {
        switch self {
        case let .started(run), let .personalized(run), let .ended(run): run
        }
    }
}

/// Publishes each unit's CFX messages as their events happen (docs/cfx.md): `handle(_:)` takes the station's events
/// and returns at once; a task of its own, taking the events in order, reads the unit's run from the records as far
/// as it is recorded, maps it (`CFXMapper`), writes the message to the spool (fsync'd, off the cooperative pool)
/// and hands it to the AMQP sender; a message leaves the spool when the broker accepted it. WorkStarted when the
/// run is recorded (`runStarted`), UnitsPersonalized when the identity step ends, UnitsTested and WorkCompleted
/// when the unit is finished (or, for a run a killed station left open, when the station recovers it). The station
/// never waits for the broker.
public final class CFXPublisher: Sendable {
    public let options: CFXOptions
    public let spool: CFXSpool
    private let store: any RecordStore
    private let mapper: CFXMapper
    private let notice: @Sendable (String) -> Void
    private let state = Mutex(State())
    private let units: AsyncStream<CFXRunEvent>.Continuation
    private let worker: Mutex<Task<Void, Never>?> = Mutex(nil)
    private let senderBox = Mutex<AMQPSender?>(nil)

    private struct State {
        var status = CFXPublisherStatus()
        /// UniqueID → spool file name of what waits for the broker.
        var waiting: [String: String] = [:]
        /// Run events handed over and not spooled yet.
        var inProgress = 0
        /// The run each slot's unit is in (from `runStarted` to `finished`).
        var slotRuns: [String: Int64] = [:]
        /// The kinds made already of the runs under way (the rest are made when the run ends).
        var made: [Int64: Set<CFXMessageKind>] = [:]
        var idleWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        var wasConnected = false
        var outage = false

        var idle: Bool { waiting.isEmpty && inProgress == 0 }
    }

    /// Opens the spool (its messages are offered first) and starts the sender. `notice` gets one line when the
    /// broker cannot be reached (once per outage) and when it answers again. Throws `spool` or `thread`.
    public static func start(
        _ options: CFXOptions, store: any RecordStore, notice: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws(CFXError) -> CFXPublisher {
        let (spool, waiting) = try await CFXSpool.open(directory: options.spool)
        let publisher = CFXPublisher(options: options, spool: spool, store: store, notice: notice)
        try publisher.begin(resending: waiting)
        return publisher
    }

    private init(options: CFXOptions, spool: CFXSpool, store: any RecordStore, notice: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.spool = spool
        self.store = store
        self.notice = notice
        mapper = CFXMapper(source: options.handle)
        let (stream, continuation) = AsyncStream<CFXRunEvent>.makeStream()
        units = continuation
        let task = Task { [weak self] in
            for await event in stream {
                await self?.publish(event)
            }
        }
        worker.withLock { $0 = task }
    }

    private func begin(resending waiting: [SpooledMessage]) throws(CFXError) {
        let millis = options.reconnectDelay.components.seconds * 1000 + options.reconnectDelay.components.attoseconds / 1_000_000_000_000_000
        let sender = try AMQPSender(
            target: options.broker, reconnectDelayMilliseconds: UInt32(max(10, millis)),
            onAccepted: { [weak self] id in self?.accepted(id) },
            onEvent: { [weak self] event in self?.linkEvent(event) })
        senderBox.withLock { $0 = sender }
        state.withLock { s in
            s.status.resent = waiting.count
            for message in waiting { s.waiting[message.uniqueID] = message.name }
            s.status.waiting = s.waiting.count
        }
        for message in waiting { sender.send(.init(id: message.uniqueID, body: message.body)) }
    }

    public var status: CFXPublisherStatus { state.withLock { $0.status } }

    /// Takes a station event (from any task; returns at once): a run recorded (WorkStarted), its identity step
    /// passed or skipped (UnitsPersonalized), the unit finished with a recorded run (the rest of its messages), runs
    /// a killed station left open and the station closed at start (all of their messages: those the killed station
    /// had spooled are not spooled twice, and one it had sent already is sent again with its UniqueID).
    public func handle(_ event: StationEvent) {
        let events: [CFXRunEvent] = state.withLock { s in
            switch event {
            case let .runStarted(slot, _, run):
                s.slotRuns[slot] = run
                return [.started(run)]
            case let .stepEnded(slot, _, step, outcome, _) where step == StepName.identity && (outcome == "pass" || outcome == "skipped"):
                return s.slotRuns[slot].map { [.personalized($0)] } ?? []
            case let .finished(result):
                guard let run = result.run else { return [] }
                if s.slotRuns[result.slot] == run { s.slotRuns[result.slot] = nil }
                return [.ended(run)]
            case let .recovered(runs):
                return runs.map(CFXRunEvent.ended)
            default:
                return []
            }
        }
        guard !events.isEmpty else { return }
        state.withLock { $0.inProgress += events.count }
        for event in events { units.yield(event) }
    }

    /// Publishes the messages of one recorded run (what `handle` does for a finished unit and for a run a killed
    /// station left open), and returns when they are in the spool.
    public func publish(run id: Int64) async {
        state.withLock { $0.inProgress += 1 }
        await publish(.ended(id))
    }

    /// Makes and spools the messages an event of a run calls for (each kind once per run).
    private func publish(_ event: CFXRunEvent) async {
        defer { settle { $0.inProgress -= 1 } }
        let id = event.run
        do {
            guard let run = try await store.run(RunID(id)) else { throw RecordsError(.notFound, "run \(id) is not in the records") }
            let identities: [Identity]
            if case .started = event { identities = [] } else { identities = try await store.identities(of: run.start.hardwareID) }
            let unit = CFXUnitRun(run: run, identities: identities)
            let made = state.withLock { $0.made[id] ?? [] }
            var messages: [CFXEnvelope]
            switch event {
            case .started: messages = [mapper.workStarted(unit)]
            case .personalized: messages = mapper.unitsPersonalized(unit).map { [$0] } ?? []
            case .ended: messages = mapper.messages(for: unit)
            }
            messages.removeAll { made.contains($0.kind) }
            try await spoolAndSend(messages)
            state.withLock { s in
                if case .ended = event { s.made[id] = nil } else { s.made[id, default: []].formUnion(messages.map(\.kind)) }
            }
        } catch {
            state.withLock { $0.status.failedUnits += 1 }
            notice("cfx: run \(id)'s messages were not made: \(String(describing: error))")
        }
    }

    /// Maps a unit's run to its messages, spools them and offers them to the broker.
    public func publish(_ unit: CFXUnitRun) async throws(CFXError) {
        try await spoolAndSend(mapper.messages(for: unit))
    }

    private func spoolAndSend(_ envelopes: [CFXEnvelope]) async throws(CFXError) {
        guard !envelopes.isEmpty else { return }
        let messages = envelopes.map { (uniqueID: $0.uniqueID, body: Array($0.text().utf8)) }
        let written = try await spool.write(messages)
        state.withLock { s in
            s.status.spooled += written.count
            for message in written { s.waiting[message.uniqueID] = message.name }
            s.status.waiting = s.waiting.count
        }
        let sender = senderBox.withLock { $0 }
        for message in written { sender?.send(.init(id: message.uniqueID, body: message.body)) }
    }

    /// Waits until every unit handed over is spooled and the broker accepted every spooled message, or `timeout`
    /// passed. Returns how many messages still wait in the spool.
    @discardableResult
    public func drained(within timeout: Duration) async -> Int {
        let id = UUID()
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.wake(id)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.idle || Task.isCancelled { return true }
                    s.idleWaiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            wake(id)
        }
        timer.cancel()
        return state.withLock { $0.waiting.count }
    }

    /// Stops: waits until the units handed over are spooled, then closes the connection. What the broker has not
    /// accepted stays in the spool for the next start.
    public func close() async {
        units.finish()
        let task = worker.withLock { $0 }
        await task?.value
        await senderBox.withLock { $0 }?.stop()
        await spool.flush()
    }

    // MARK: From the sender's thread

    private func accepted(_ id: String) {
        let name = settle { s -> String? in
            guard let name = s.waiting.removeValue(forKey: id) else { return nil }
            s.status.accepted += 1
            s.status.waiting = s.waiting.count
            return name
        }
        if let name { spool.remove(name) }
    }

    private func linkEvent(_ event: AMQPLinkEvent) {
        switch event {
        case .connected:
            let (recovered, waiting) = state.withLock { s -> (Bool, Int) in
                s.status.connected = true
                defer { s.outage = false; s.wasConnected = true }
                return (s.outage, s.waiting.count)
            }
            if recovered {
                notice("cfx: the broker at \(options.broker) answers again; \(waiting) message\(waiting == 1 ? "" : "s") waiting in the spool are being sent")
            }
        case let .disconnected(reason):
            let first = state.withLock { s -> Bool in
                s.status.connected = false
                defer { s.outage = true }
                return !s.outage
            }
            if first {
                notice("cfx: the broker at \(options.broker) cannot be reached (\(reason)); messages wait in \(options.spool) and are sent when it answers")
            }
        case let .rejected(id, reason):
            notice("cfx: the broker refused message \(id) (\(reason)); it stays in \(options.spool)")
        }
    }

    /// Changes the state and wakes the idle waiters when nothing is left to do.
    private func settle<T>(_ change: (inout State) -> T) -> T {
        let (value, waiters) = state.withLock { s -> (T, [CheckedContinuation<Void, Never>]) in
            let value = change(&s)
            guard s.idle else { return (value, []) }
            defer { s.idleWaiters = [:] }
            return (value, Array(s.idleWaiters.values))
        }
        waiters.forEach { $0.resume() }
        return value
    }

    private func wake(_ id: UUID) {
        state.withLock { $0.idleWaiters.removeValue(forKey: id) }?.resume()
    }
}
