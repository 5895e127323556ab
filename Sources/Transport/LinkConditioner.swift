import Glibc
import Logging
import Support
import Synchronization

/// Counters kept by a `ConditionedTransport`.
public struct LinkStatistics: Sendable, Hashable {
    /// Counters for one direction of the link.
    public struct Direction: Sendable, Hashable {
        /// Bytes put on the link (dropped ones included).
        public var bytes = 0
        /// Chunks put on the link (dropped ones included).
        public var chunks = 0
        /// Bytes that had one bit flipped.
        public var corruptedBytes = 0
        /// Chunks lost whole.
        public var droppedChunks = 0
        /// Bytes in the lost chunks.
        public var droppedBytes = 0
        /// Stalls that paused the link.
        public var stalls = 0
        /// Time the link sat idle between chunks because nothing was queued (the sender did not keep up); zero
        /// when traffic was back to back. Not counted before the first chunk.
        public var idleTime: Duration = .zero
        public init() {}
    }

    /// From the local side to the inner transport.
    public var outgoing = Direction()
    /// From the inner transport to the local side.
    public var incoming = Direction()
    /// Whether `disconnectAfterBytes` was reached.
    public var disconnected = false
    public init() {}
}

/// A `Transport` that carries another transport's traffic through a simulated link described by `LinkConditions`.
///
/// Model (applied independently in each direction — outgoing bytes before they reach the inner transport, incoming
/// bytes after the inner transport delivers them):
/// - Traffic moves in *chunks*: one `send` (split into pieces of at most `linkBufferBytes` for byte streams), or one
///   chunk returned by the inner transport (split likewise). With `.packets` framing a message is never split.
/// - A chunk of n bytes occupies the link for n·8/`bitsPerSecond` seconds and chunks queue behind each other:
///   `start = max(arrival, end of the previous chunk) (+ stallDuration if it stalls)`, `end = start + n·8/bps`,
///   `delivery = end + latency`. Latency therefore delays but does not reduce throughput.
/// - `send` returns as soon as its bytes are queued, but first waits while more than `linkBufferBytes` are queued
///   ahead of the wire, so a sender cannot outrun the bandwidth. Incoming data is pulled from the inner transport
///   under the same rule, which propagates backpressure to it.
/// - Faults come from seeded generators (one for chunk events and one for corruption per direction): with the same
///   seed and the same traffic the same bytes are corrupted, dropped and stalled. Corruption positions depend only
///   on the byte offset within the direction, not on chunk boundaries. A dropped chunk still occupies the link.
/// - `disconnectAfterBytes` counts bytes carried in both directions; the chunk that reaches the limit is truncated to
///   it, and when that chunk's delivery time comes the inner transport is closed (the peer sees `.closed`) and the
///   local `receive` throws `.closed`. `send` throws `.closed` as soon as the limit is reached.
/// - Without a bandwidth limit at most 1 MiB is in flight per direction.
/// - Timing uses `ContinuousClock` with absolute deadlines on the reactor's precise timers (`Timers`), so sleep
///   overshoot never accumulates.
/// - `close()` stops accepting data, lets already-queued outgoing chunks reach the inner transport (for at most one
///   second past their delivery time, like a tty draining on close), then closes the inner transport.
public final class ConditionedTransport: Transport {
    /// The wrapped transport (owned: closing this transport closes it).
    public let inner: any Transport
    /// The conditions in effect (rates clamped to 0…1, sizes to at least 1).
    public let conditions: LinkConditions
    /// The inner transport's peer.
    public var peerDescription: String { inner.peerDescription }
    /// The inner transport's framing.
    public var framing: LinkFraming { inner.framing }
    /// A snapshot of the counters.
    public var statistics: LinkStatistics { core.statistics }

    private let core: ConditionerCore
    private let delivery: Task<Void, Never>
    /// The reader loop's task (none when the core reads on the reactor's thread).
    private let reader: Task<Void, Never>?

    /// Wraps `inner` (taking ownership) and starts carrying its traffic through the simulated link.
    public init(wrapping inner: any Transport, conditions: LinkConditions, logger: Logger? = nil) {
        var c = conditions
        c.corruptionRate = Self.clamp(c.corruptionRate)
        c.dropRate = Self.clamp(c.dropRate)
        c.stallRate = Self.clamp(c.stallRate)
        c.linkBufferBytes = max(1, c.linkBufferBytes)
        if let bps = c.bitsPerSecond, bps <= 0 { c.bitsPerSecond = nil }
        if c.latency < .zero { c.latency = .zero }
        if c.stallDuration < .zero { c.stallDuration = .zero }
        self.inner = inner
        self.conditions = c
        let core = ConditionerCore(inner: inner, conditions: c, logger: logger)
        self.core = core
        delivery = Task { await core.runDelivery() }
        reader = core.isDirect ? nil : Task { await core.runReader() }
        if core.isDirect { core.startReadingDirectly() }
    }

    deinit {
        delivery.cancel()
        reader?.cancel()
        core.stopDirect()
    }

    private static func clamp(_ p: Double) -> Double {
        p.isNaN ? 0 : min(1, max(0, p))
    }

    /// When each direction's link finishes carrying what is queued so far (for diagnostics and tests).
    var linkFreeAt: (outgoing: ContinuousClock.Instant, incoming: ContinuousClock.Instant) { core.linkFreeAt }

    /// Whether a `receive()` is parked waiting for data (for tests and diagnostics).
    var hasPendingReceive: Bool { core.isParked(.receiver) }

    /// Whether a `send(_:)` is parked waiting for room on the link (for tests and diagnostics).
    var hasPendingSend: Bool { core.isParked(.sender) }

    /// Whether chunks move on the reactor's thread (an inner transport with immediate I/O; for tests).
    var hasDirectIO: Bool { core.isDirect }

    /// Batches the delivery task sent because the inner transport did not take them at once (direct mode; for tests).
    var handovers: Int { core.handovers }

    /// See `Transport.send(_:)` and the model above.
    public nonisolated(nonsending) func send(_ bytes: [UInt8]) async throws {
        try await core.send(bytes)
    }

    /// See `Transport.receive()` and the model above.
    public nonisolated(nonsending) func receive() async throws -> [UInt8] {
        try await core.receive()
    }

    /// See `Transport.close()` and the model above.
    public nonisolated(nonsending) func close() async {
        await core.close()
        delivery.cancel()
        reader?.cancel()
        core.stopDirect()
        await inner.close()
    }
}

/// The shell of a `ConditionedTransport` around its `LinkConditionerMachine`: the inner transport, the tasks parked on
/// the machine (a send, a receive, the close, the delivery and reader loops), the reactor's timers, the clock and the
/// logger. Internal.
final class ConditionerCore: Sendable {
    typealias Instant = ContinuousClock.Instant
    typealias Machine = LinkConditionerMachine

    enum Slot: Hashable, Sendable { case receiver, sender, delivery, reader, closer }

    /// What a parked loop should do next.
    private typealias Step = Parking<Slot>.Step

    private struct State: ParkingState {
        var machine: Machine
        var parking = Parking<Slot>()
        /// Direct mode: the timer the machine armed to deliver the outgoing head on the reactor's thread.
        var deliveryTimer: ReactorTimer?
    }

    let inner: any Transport
    let conditions: LinkConditions
    /// The inner transport when its chunks move on the reactor's thread (direct mode): delivery by a timer that writes
    /// without waiting, reading by a readiness handler, with the delivery task only for what does not fit at once.
    /// Per chunk, that is no task wake-up instead of one in each direction. Not with a byte limit
    /// (`disconnectAfterBytes`), whose take-down the loops handle.
    private let immediate: (any ImmediateTransport)?
    private let logger: Logger?
    private let clock = ContinuousClock()
    private let sendLock = AsyncLock()
    private let state: Mutex<State>
    private let packets: Bool

    init(inner: any Transport, conditions: LinkConditions, logger: Logger?) {
        self.inner = inner
        self.conditions = conditions
        let immediate = conditions.disconnectAfterBytes == nil ? inner as? any ImmediateTransport : nil
        self.immediate = immediate
        self.logger = logger
        packets = inner.framing == .packets
        let settings = Machine.Settings(conditions: conditions, packets: packets, direct: immediate != nil)
        state = Mutex(State(machine: Machine(settings: settings, now: ContinuousClock.now)))
    }

    /// Whether chunks move on the reactor's thread (see `immediate`).
    var isDirect: Bool { immediate != nil }

    /// Batches the inner transport did not take at once in direct mode (for tests).
    var handovers: Int { state.withLock { $0.machine.handovers } }

    var statistics: LinkStatistics { state.withLock { $0.machine.statistics } }

    private var peer: String { inner.peerDescription }

    /// When each direction's link finishes carrying what is queued (diagnostics and tests).
    var linkFreeAt: (outgoing: Instant, incoming: Instant) {
        state.withLock { ($0.machine.outgoing.linkFreeAt, $0.machine.incoming.linkFreeAt) }
    }

    /// Whether a call or loop is parked in `slot` (for tests and diagnostics).
    func isParked(_ slot: Slot) -> Bool {
        state.withLock { $0.parking.isParked(slot) }
    }

    private func linkDownError() -> TransportError {
        TransportError(.closed, "\(peer): the conditioned link disconnected after \(conditions.disconnectAfterBytes ?? 0) bytes")
    }

    private func closedError() -> TransportError {
        TransportError(.closed, "\(peer) is closed")
    }

    /// The error a refused call throws.
    private func refusalError(_ refusal: Machine.Refusal) -> TransportError {
        switch refusal {
        case .closed: closedError()
        case .linkDown: linkDownError()
        case .failed(let failure): failure
        case .receivePending: TransportError(.io, "\(peer): receive() called while another receive() is pending")
        }
    }

    private func step(_ next: Machine.Next) -> Step {
        switch next {
        case .proceed: .done
        case .wait: .wait
        case .waitUntil(let instant): .waitUntil(instant)
        }
    }

    /// Traces the faults a chunk met.
    private func report(_ faults: Machine.Faults) {
        guard let logger else { return }
        let direction = faults.direction == .outgoing ? "outgoing" : "incoming"
        logger.trace("\(peer) link fault (\(direction), \(faults.bytes) bytes): drop=\(faults.drop) stall=\(faults.stall) corrupted=\(faults.corrupted)")
    }

    // MARK: - Local side

    nonisolated(nonsending) func send(_ bytes: [UInt8]) async throws {
        try await sendLock.withLock {
            if bytes.isEmpty {
                if let refusal = state.withLock({ $0.machine.sendEmpty() }) { throw refusalError(refusal) }
                return
            }
            let buffer = conditions.linkBufferBytes
            var offset = 0
            while offset < bytes.count {
                let count = packets ? bytes.count : min(buffer, bytes.count - offset)
                var due: Instant?
                var reachedLimit = false
                var lostTail = false
                try await park(.sender) { s, now throws(TransportError) -> Step in
                    switch s.machine.send(bytes, offset: offset, count: count, now: now, faults: { report($0) }) {
                    case .refused(let refusal): throw refusalError(refusal)
                    case .wait: return .wait
                    case .waitUntil(let instant): return .waitUntil(instant)
                    case let .carried(deliverAt, limit, lost):
                        (due, reachedLimit, lostTail) = (deliverAt, limit, lost)
                        return .done
                    }
                }
                if let due, !reachedLimit {
                    if immediate != nil { armDelivery(at: due) } else { wake(.delivery, dueAt: due) }
                } else {
                    wake(.delivery)
                }
                offset += count
                if reachedLimit {
                    wake(.receiver)
                    // The byte limit was reached inside this send: the rest cannot be carried.
                    if lostTail { throw linkDownError() }
                    break
                }
            }
            if let logger {
                logger.trace("\(peer) queued \(bytes.count) bytes on the conditioned link: \(hexDump(bytes))")
            }
        }
    }

    nonisolated(nonsending) func receive() async throws -> [UInt8] {
        try state.withLock { s throws(TransportError) in
            if let refusal = s.machine.beginReceive() { throw refusalError(refusal) }
        }
        defer { state.withLock { $0.machine.endReceive() } }
        var result: [UInt8] = []
        try await park(.receiver) { s, now throws(TransportError) -> Step in
            switch s.machine.receiveStep(now: now) {
            case .refused(let refusal): throw refusalError(refusal)
            case .wait: return .wait
            case .waitUntil(let instant): return .waitUntil(instant)
            case .bytes(let bytes):
                result = bytes
                return .done
            }
        }
        if immediate != nil { resumeReading(from: .room) } else { wake(.reader) }
        if let logger {
            logger.trace("\(peer) received \(result.count) bytes from the conditioned link: \(hexDump(result))")
        }
        return result
    }

    nonisolated(nonsending) func close() async {
        guard state.withLock({ $0.machine.close(now: clock.now) }) != nil else { return }
        wake(.receiver)
        wake(.sender)
        wake(.reader)
        try? await park(.closer) { s, now throws(TransportError) -> Step in
            step(s.machine.closeStep(now: now))
        }
        wake(.delivery)
    }

    // MARK: - Background loops

    /// Moves due outgoing chunks to the inner transport, and takes the link down when the byte limit is reached.
    func runDelivery() async {
        while true {
            var answer = Machine.DeliveryAnswer.wait
            do {
                try await park(.delivery) { s, now throws(TransportError) -> Step in
                    answer = s.machine.deliveryStep(now: now)
                    switch answer {
                    case .send, .goDown, .stop: return .done
                    case .wait: return .wait
                    case .waitUntil(let instant): return .waitUntil(instant)
                    }
                }
            } catch {
                return
            }
            let batch: [UInt8]
            switch answer {
            case .send(let bytes):
                batch = bytes
            case .goDown:
                logger?.debug("\(peer): conditioned link disconnected after \(conditions.disconnectAfterBytes ?? 0) bytes")
                await inner.close()
                wake(.receiver)
                wake(.closer)
                return
            case .stop, .wait, .waitUntil:
                return
            }
            do {
                try await inner.send(batch)
                let head = state.withLock { $0.machine.delivered() }
                if immediate != nil, let head { armDelivery(at: head) }
            } catch {
                let failure = error is CancellationError ? nil : (error as? TransportError) ?? closedError()
                state.withLock { $0.machine.deliveryFailed(failure) }
                wake(.sender)
                wake(.closer)
                return
            }
            wake(.sender)
            wake(.closer)
        }
    }

    /// Pulls chunks from the inner transport and schedules them for local delivery.
    func runReader() async {
        while true {
            do {
                try await park(.reader) { s, now throws(TransportError) -> Step in
                    guard let next = s.machine.readerStep(now: now) else { throw TransportError(.closed, "stopped") }
                    return step(next)
                }
            } catch {
                return
            }
            let chunk: [UInt8]
            do {
                chunk = try await inner.receive()
            } catch {
                if error is CancellationError { return }
                let failure = (error as? TransportError) ?? TransportError(.io, "\(peer): \(error)")
                state.withLock { $0.machine.readingFailed(failure, now: clock.now) }
                wake(.receiver)
                return
            }
            let now = clock.now
            let answer = state.withLock { $0.machine.receivedChunk(chunk, now: now, faults: { report($0) }) }
            if let due = answer.due, !answer.stop { wake(.receiver, dueAt: due) } else { wake(.receiver) }
            if answer.stop {
                wake(.delivery)
                return
            }
        }
    }

    // MARK: - Direct mode (see `immediate`)

    /// Makes sure the delivery timer fires by `at` (the head's delivery time or earlier). Chunks are queued in
    /// delivery order, so a timer already set for an earlier time covers this chunk: it re-arms for the next head.
    private func armDelivery(at: Instant) {
        let replaced: ReactorTimer? = state.withLock { s in
            guard let token = s.machine.armDelivery(at: at) else { return nil }
            let old = s.deliveryTimer
            s.deliveryTimer = Timers.schedule(at: at) { [weak self] in self?.deliverDirectly(token) }
            return old
        }
        if let replaced { Timers.cancel(replaced) }
    }

    /// The delivery timer `token` fired (on the reactor's thread): writes what is due to the inner transport without
    /// waiting, and re-arms for the next head. What the inner transport does not take at once goes to the delivery
    /// task (`handover`), which re-arms the timer when it has sent it.
    private func deliverDirectly(_ token: UInt64) {
        guard let immediate else { return }
        while true {
            let answer = state.withLock { s in
                let answer = s.machine.deliveryTimerFired(token, now: clock.now)
                if s.machine.deliveryTimer == .unarmed { s.deliveryTimer = nil }
                return answer
            }
            let batch: [UInt8]
            switch answer {
            case .nothing:
                return
            case .rearm(let at):
                armDelivery(at: at)
                return
            case .send(let bytes):
                batch = bytes
            }
            switch immediate.sendNow(batch) {
            case .sent:
                _ = state.withLock { $0.machine.delivered() }
                wake(.sender)
                wake(.closer)
            case .partial(let written):
                state.withLock { $0.machine.handedOver(batch, written: written) }
                wake(.delivery)
                return
            case .failed(let error):
                state.withLock { $0.machine.deliveryFailed(error) }
                wake(.sender)
                wake(.closer)
                return
            }
        }
    }

    /// Starts the direct reader (once, at creation).
    func startReadingDirectly() {
        resumeReading(from: .start)
    }

    /// Runs the direct reader if it is where `from` says (so that it never runs twice at once).
    private func resumeReading(from: Machine.Resume) {
        if state.withLock({ $0.machine.resumeReading(from: from) }) { readDirectly() }
    }

    /// The direct reader: what `runReader` does, with reads that do not wait, on the thread that resumed it (the
    /// reactor's for readiness and bandwidth timers, the receiver's when it made room).
    private func readDirectly() {
        guard let immediate else { return }
        while true {
            switch state.withLock({ $0.machine.directReadStep(now: clock.now) }) {
            case .stop:
                return
            case .resumeAt(let at):
                _ = Timers.schedule(at: at) { [weak self] in self?.resumeReading(from: .time) }
                return
            case .read:
                break
            }
            let chunk: [UInt8]
            switch immediate.receiveNow() {
            case .bytes(let bytes):
                chunk = bytes
            case .wouldBlock:
                state.withLock { $0.machine.awaitingData() }
                do {
                    try immediate.whenReadable { [weak self] in self?.resumeReading(from: .data) }
                    return
                } catch {
                    failReading(error)
                    return
                }
            case .failed(let error):
                failReading(error)
                return
            }
            let now = clock.now
            // No byte limit in direct mode: the reader stops only when the transport is closed.
            let answer = state.withLock { $0.machine.receivedChunk(chunk, now: now, faults: { report($0) }) }
            if answer.stop { return }
            if let due = answer.due { wake(.receiver, dueAt: due) } else { wake(.receiver) }
        }
    }

    /// The inner transport failed (or ended): the receiver gets the error after what is still on the link.
    private func failReading(_ failure: TransportError) {
        state.withLock { $0.machine.readingFailed(failure, now: clock.now) }
        wake(.receiver)
    }

    /// Cancels the delivery timer (the transport is closed or gone).
    func stopDirect() {
        let timer: ReactorTimer? = state.withLock { s in
            _ = s.machine.disarm()
            return s.deliveryTimer.take()
        }
        if let timer { Timers.cancel(timer) }
    }

    // MARK: - Parking

    /// New data for the waiter in `slot`, due at `dueAt`: a waiter parked until later (or until woken) is woken at
    /// `dueAt` by a timer instead of now, when it would only park again until then; one parked until an earlier
    /// deadline (the chunk ahead of this one) is left alone. Saves a task switch per chunk in each direction.
    private func wake(_ slot: Slot, dueAt: Instant) {
        guard dueAt > clock.now else {
            wake(slot)
            return
        }
        let replaced = state.withLock { s in s.parking.wake(slot, at: dueAt) { [self] slot, id in self.wake(slot, id: id) } }
        if let replaced { Timers.cancel(replaced) }
    }

    /// Resumes the waiter in `slot` (only if it is `id`, when given).
    private func wake(_ slot: Slot, id: UInt64? = nil) {
        state.withLock { $0.parking.take(slot, id: id) }?.resume()
    }

    /// Runs `step` under the lock until it returns `.done`, parking in `slot` in between — until woken, or until the
    /// deadline of `.waitUntil` (an absolute `ContinuousClock` instant, on the reactor's timers: a parked loop waits
    /// for every chunk's delivery time). Cancellable.
    private nonisolated(nonsending) func park(_ slot: Slot, _ step: (inout State, Instant) throws(TransportError) -> Step) async throws {
        try await parkLoop(slot, in: state, now: { clock.now }, wake: { [self] slot, id in self.wake(slot, id: id) }, step)
    }
}
