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

/// The shared state and the two background loops of a `ConditionedTransport`. Internal.
final class ConditionerCore: Sendable {
    typealias Instant = ContinuousClock.Instant

    private struct Scheduled {
        var bytes: [UInt8]
        let deliverAt: Instant
    }

    /// One direction of the simulated link.
    private struct Lane {
        var linkFreeAt: Instant
        var lastDeliverAt: Instant
        var chunkRandom: SeededRandom
        var corruptRandom: SeededRandom
        var untilCorruption: Int?
        var queue: [Scheduled] = []
        var head = 0
        var queuedBytes = 0
        var stats = LinkStatistics.Direction()

        var isEmpty: Bool { head == queue.count }
        var first: Scheduled? { isEmpty ? nil : queue[head] }

        mutating func removeAll() {
            queue.removeAll()
            head = 0
            queuedBytes = 0
        }

        /// Takes the chunks due by `now` (one for packets; merged up to 64 KiB for byte streams).
        mutating func takeDue(now: Instant, limit: Instant?, packets: Bool) -> [UInt8] {
            var out: [UInt8] = []
            while let next = first, next.deliverAt <= now, limit.map({ next.deliverAt <= $0 }) ?? true {
                if !out.isEmpty && (packets || out.count + next.bytes.count > 64 * 1024) { break }
                if out.isEmpty { out = next.bytes } else { out.append(contentsOf: next.bytes) }
                queue[head].bytes = []
                head += 1
                queuedBytes -= next.bytes.count
                if packets { break }
            }
            if head > 64 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return out
        }

        /// Flips one random bit in each byte chosen with probability `rate` (geometric skipping, byte-indexed).
        mutating func corrupt(_ bytes: inout [UInt8], rate: Double) -> Int {
            guard rate > 0 else { return 0 }
            var index = untilCorruption ?? nextGap(rate)
            var count = 0
            while index < bytes.count {
                bytes[index] ^= UInt8(1) << UInt8(corruptRandom.next() & 7)
                count += 1
                index += 1 + nextGap(rate)
            }
            untilCorruption = index - bytes.count
            return count
        }

        private mutating func nextGap(_ rate: Double) -> Int {
            if rate >= 1 { return 0 }
            let u = Double((corruptRandom.next() >> 11) + 1) * 0x1.0p-53 // (0, 1]
            let gap = (log(u) / log1p(-rate)).rounded(.down)
            return gap >= Double(Int.max / 2) ? Int.max / 2 : Int(gap)
        }
    }

    private enum Lanes { case outgoing, incoming }

    enum Slot: Hashable, Sendable { case receiver, sender, delivery, reader, closer }

    /// What a parked loop should do next.
    private typealias Step = Parking<Slot>.Step

    private struct State: ParkingState {
        var outgoing: Lane
        var incoming: Lane
        var totalBytes = 0
        var disconnected = false
        var linkDownAt: Instant?
        var innerFailure: TransportError?
        var innerFailureAt: Instant?
        var deliveryFailure: TransportError?
        var deliveryBusy = false
        var closed = false
        var receiving = false
        var parking = Parking<Slot>()
        /// Direct mode: the timer that delivers the outgoing head on the reactor's thread, and its generation.
        var deliveryTimer: (timer: ReactorTimer, at: Instant, generation: UInt64)?
        var timerGeneration: UInt64 = 0
        /// Direct mode: the rest of a batch the inner transport did not take at once; the delivery task sends it.
        var handover: [UInt8]?
        var handovers = 0
        /// Direct mode: what the reader is doing.
        var directReader = DirectReader.idle
    }

    /// The reader in direct mode: reading, or waiting for the inner transport (a readiness handler), for room in the
    /// incoming lane (the receiver restarts it), or for the bandwidth to allow the next chunk (a timer).
    private enum DirectReader {
        case idle, reading, awaitingData, awaitingRoom, awaitingTime, stopped
    }

    private struct Carried {
        var deliverAt: Instant
        var final: Bool
        var truncated: Bool
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
    private let outgoingCap: Int
    private let incomingCap: Int

    init(inner: any Transport, conditions: LinkConditions, logger: Logger?) {
        self.inner = inner
        self.conditions = conditions
        self.immediate = conditions.disconnectAfterBytes == nil ? inner as? any ImmediateTransport : nil
        self.logger = logger
        self.packets = inner.framing == .packets
        var mix = conditions.seed
        let now = ContinuousClock.now
        func lane() -> Lane {
            Lane(linkFreeAt: now, lastDeliverAt: now,
                 chunkRandom: SeededRandom(seed: SeededRandom.splitMix64(&mix)),
                 corruptRandom: SeededRandom(seed: SeededRandom.splitMix64(&mix)))
        }
        let outgoing = lane()
        let incoming = lane()
        state = Mutex(State(outgoing: outgoing, incoming: incoming))
        let mebibyte = 1 << 20
        outgoingCap = mebibyte
        if let bps = conditions.bitsPerSecond {
            let latencySeconds = Double(conditions.latency.components.seconds) + Double(conditions.latency.components.attoseconds) * 1e-18
            let bandwidthDelay = Double(bps) / 8 * latencySeconds
            incomingCap = max(mebibyte, Int(min(bandwidthDelay * 2, 1e12)) + 2 * conditions.linkBufferBytes)
        } else {
            incomingCap = mebibyte
        }
    }

    /// Whether chunks move on the reactor's thread (see `immediate`).
    var isDirect: Bool { immediate != nil }

    /// Batches the inner transport did not take at once in direct mode (for tests).
    var handovers: Int { state.withLock { $0.handovers } }

    var statistics: LinkStatistics {
        state.withLock { s in
            var stats = LinkStatistics()
            stats.outgoing = s.outgoing.stats
            stats.incoming = s.incoming.stats
            stats.disconnected = s.disconnected
            return stats
        }
    }

    private var peer: String { inner.peerDescription }

    /// When each direction's link finishes carrying what is queued (diagnostics and tests).
    var linkFreeAt: (outgoing: Instant, incoming: Instant) {
        state.withLock { ($0.outgoing.linkFreeAt, $0.incoming.linkFreeAt) }
    }

    /// Whether a call or loop is parked in `slot` (for tests and diagnostics).
    func isParked(_ slot: Slot) -> Bool {
        state.withLock { $0.parking.isParked(slot) }
    }

    /// Serialisation time of `n` bytes.
    private func wireTime(_ n: Int) -> Duration {
        guard let bps = conditions.bitsPerSecond, n > 0 else { return .zero }
        return .nanoseconds(Int64((Double(n) * 8e9 / Double(bps)).rounded()))
    }

    private func linkDownError() -> TransportError {
        TransportError(.closed, "\(peer): the conditioned link disconnected after \(conditions.disconnectAfterBytes ?? 0) bytes")
    }

    private func closedError() -> TransportError {
        TransportError(.closed, "\(peer) is closed")
    }

    /// Puts `bytes` on one lane: faults, timing, disconnect accounting. Returns nil if the link is already down.
    private func carry(_ bytes: [UInt8], on which: Lanes, now: Instant, state s: inout State) -> Carried? {
        var piece = bytes
        var final = false
        var truncated = false
        if let limit = conditions.disconnectAfterBytes {
            let allowance = limit - s.totalBytes
            if allowance <= 0 { return nil }
            if piece.count >= allowance {
                truncated = piece.count > allowance
                piece = Array(piece.prefix(allowance))
                final = true
            }
        }
        s.totalBytes += piece.count
        var lane = which == .outgoing ? s.outgoing : s.incoming
        let drop = lane.chunkRandom.nextUnit() < conditions.dropRate
        let stall = lane.chunkRandom.nextUnit() < conditions.stallRate
        let corrupted = lane.corrupt(&piece, rate: conditions.corruptionRate)
        if lane.stats.chunks > 0, now > lane.linkFreeAt {
            lane.stats.idleTime += now - lane.linkFreeAt
        }
        var start = max(now, lane.linkFreeAt)
        if stall { start += conditions.stallDuration }
        let end = start + wireTime(piece.count)
        lane.linkFreeAt = end
        let deliverAt = end + conditions.latency
        lane.lastDeliverAt = deliverAt
        lane.stats.bytes += piece.count
        lane.stats.chunks += 1
        lane.stats.corruptedBytes += corrupted
        if stall { lane.stats.stalls += 1 }
        if drop {
            lane.stats.droppedChunks += 1
            lane.stats.droppedBytes += piece.count
        } else {
            lane.queue.append(Scheduled(bytes: piece, deliverAt: deliverAt))
            lane.queuedBytes += piece.count
        }
        if which == .outgoing { s.outgoing = lane } else { s.incoming = lane }
        if final {
            s.linkDownAt = deliverAt
            s.disconnected = true
        }
        if drop || stall || corrupted > 0, let logger {
            let direction = which == .outgoing ? "outgoing" : "incoming"
            logger.trace("\(peer) link fault (\(direction), \(piece.count) bytes): drop=\(drop) stall=\(stall) corrupted=\(corrupted)")
        }
        return Carried(deliverAt: deliverAt, final: final, truncated: truncated)
    }

    // MARK: - Local side

    nonisolated(nonsending) func send(_ bytes: [UInt8]) async throws {
        try await sendLock.withLock {
            if bytes.isEmpty {
                try state.withLock { s throws(TransportError) in
                    if s.closed { throw closedError() }
                }
                return
            }
            let buffer = conditions.linkBufferBytes
            var offset = 0
            while offset < bytes.count {
                let count = packets ? bytes.count : min(buffer, bytes.count - offset)
                var lostTail = false
                var reachedLimit = false
                var due: Instant?
                try await park(.sender) { s, now throws(TransportError) -> Step in
                    if s.closed { throw closedError() }
                    if s.disconnected { throw linkDownError() }
                    if let failure = s.deliveryFailure { throw failure }
                    if conditions.bitsPerSecond != nil {
                        let allowedAt = s.outgoing.linkFreeAt - wireTime(max(0, buffer - count))
                        if now < allowedAt { return .waitUntil(allowedAt) }
                    } else if s.outgoing.queuedBytes > 0 && s.outgoing.queuedBytes + count > outgoingCap {
                        return .wait
                    }
                    let piece = offset == 0 && count == bytes.count ? bytes : Array(bytes[offset..<offset + count])
                    guard let carried = carry(piece, on: .outgoing, now: now, state: &s) else { throw linkDownError() }
                    due = carried.deliverAt
                    if carried.final {
                        reachedLimit = true
                        lostTail = carried.truncated || offset + count < bytes.count
                    }
                    return .done
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
            if s.closed { throw closedError() }
            if s.receiving { throw TransportError(.io, "\(peer): receive() called while another receive() is pending") }
            s.receiving = true
        }
        defer { state.withLock { $0.receiving = false } }
        var result: [UInt8] = []
        try await park(.receiver) { s, now throws(TransportError) -> Step in
            if s.closed { throw closedError() }
            if let head = s.incoming.first {
                if let down = s.linkDownAt, head.deliverAt > down {
                    s.incoming.removeAll()
                } else if head.deliverAt <= now {
                    result = s.incoming.takeDue(now: now, limit: s.linkDownAt, packets: packets)
                    return .done
                } else {
                    return .waitUntil(head.deliverAt)
                }
            }
            if let down = s.linkDownAt {
                if now >= down { throw linkDownError() }
                return .waitUntil(down)
            }
            if let failure = s.innerFailure {
                if let at = s.innerFailureAt, now < at { return .waitUntil(at) }
                throw failure
            }
            return .wait
        }
        if immediate != nil { resumeReading(from: .awaitingRoom) } else { wake(.reader) }
        if let logger {
            logger.trace("\(peer) received \(result.count) bytes from the conditioned link: \(hexDump(result))")
        }
        return result
    }

    nonisolated(nonsending) func close() async {
        let first = state.withLock { s in
            defer { s.closed = true }
            return !s.closed
        }
        guard first else { return }
        wake(.receiver)
        wake(.sender)
        wake(.reader)
        let deadline = state.withLock { max(clock.now, $0.outgoing.lastDeliverAt) } + .seconds(1)
        try? await park(.closer) { s, now throws(TransportError) -> Step in
            let drained = s.outgoing.isEmpty && !s.deliveryBusy
            if drained || s.deliveryFailure != nil || s.linkDownAt != nil || now >= deadline { return .done }
            return .waitUntil(deadline)
        }
        wake(.delivery)
    }

    // MARK: - Background loops

    /// Moves due outgoing chunks to the inner transport, and takes the link down when the byte limit is reached.
    func runDelivery() async {
        while true {
            var batch: [UInt8] = []
            var goDown = false
            do {
                try await park(.delivery) { s, now throws(TransportError) -> Step in
                    if immediate != nil {
                        // Direct mode: the timer delivers; this loop sends only what it handed over.
                        if let rest = s.handover {
                            s.handover = nil
                            batch = rest
                            return .done
                        }
                        if s.closed { throw TransportError(.closed, "stopped") }
                        return .wait
                    }
                    if let head = s.outgoing.first {
                        if let down = s.linkDownAt, head.deliverAt > down {
                            s.outgoing.removeAll()
                        } else if head.deliverAt <= now {
                            batch = s.outgoing.takeDue(now: now, limit: s.linkDownAt, packets: packets)
                            s.deliveryBusy = true
                            return .done
                        } else {
                            return .waitUntil(head.deliverAt)
                        }
                    }
                    if let down = s.linkDownAt {
                        if now >= down {
                            goDown = true
                            return .done
                        }
                        return .waitUntil(down)
                    }
                    if s.closed { throw TransportError(.closed, "stopped") }
                    return .wait
                }
            } catch {
                return
            }
            if goDown {
                logger?.debug("\(peer): conditioned link disconnected after \(conditions.disconnectAfterBytes ?? 0) bytes")
                await inner.close()
                wake(.receiver)
                wake(.closer)
                return
            }
            do {
                try await inner.send(batch)
                let head: Instant? = state.withLock { s in
                    s.deliveryBusy = false
                    return s.outgoing.first?.deliverAt
                }
                if immediate != nil, let head { armDelivery(at: head) }
            } catch {
                let failure = (error as? TransportError) ?? closedError()
                state.withLock { s in
                    s.deliveryBusy = false
                    if !(error is CancellationError) { s.deliveryFailure = failure }
                }
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
        let buffer = conditions.linkBufferBytes
        while true {
            do {
                try await park(.reader) { s, now throws(TransportError) -> Step in
                    if s.closed || s.disconnected { throw TransportError(.closed, "stopped") }
                    if s.incoming.queuedBytes >= incomingCap { return .wait }
                    if conditions.bitsPerSecond != nil {
                        let allowedAt = s.incoming.linkFreeAt - wireTime(buffer)
                        if now < allowedAt { return .waitUntil(allowedAt) }
                    }
                    return .done
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
                state.withLock { s in
                    s.innerFailure = failure
                    s.innerFailureAt = max(clock.now + conditions.latency, s.incoming.lastDeliverAt)
                }
                wake(.receiver)
                return
            }
            let now = clock.now
            var due: Instant?
            let stop: Bool = state.withLock { s in
                if s.closed || s.disconnected { return true }
                var offset = 0
                while offset < chunk.count {
                    let count = packets ? chunk.count : min(buffer, chunk.count - offset)
                    let piece = offset == 0 && count == chunk.count ? chunk : Array(chunk[offset..<offset + count])
                    guard let carried = carry(piece, on: .incoming, now: now, state: &s) else { return true }
                    if due == nil { due = carried.deliverAt }
                    if carried.final { return true }
                    offset += count
                }
                return false
            }
            if let due, !stop { wake(.receiver, dueAt: due) } else { wake(.receiver) }
            if stop {
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
            if let current = s.deliveryTimer, current.at <= at { return nil }
            let old = s.deliveryTimer?.timer
            s.timerGeneration &+= 1
            let generation = s.timerGeneration
            let timer = Timers.schedule(at: at) { [weak self] in self?.deliverDirectly(generation) }
            s.deliveryTimer = (timer, at, generation)
            return old
        }
        if let replaced { Timers.cancel(replaced) }
    }

    /// The delivery timer fired (on the reactor's thread): writes what is due to the inner transport without
    /// waiting, and re-arms for the next head. What the inner transport does not take at once goes to the delivery
    /// task (`handover`), which re-arms the timer when it has sent it.
    private func deliverDirectly(_ generation: UInt64) {
        guard let immediate else { return }
        while true {
            var batch: [UInt8] = []
            var next: Instant?
            let send: Bool = state.withLock { s in
                if s.deliveryTimer?.generation == generation { s.deliveryTimer = nil }
                guard !s.deliveryBusy, s.deliveryFailure == nil, let head = s.outgoing.first else { return false }
                let now = clock.now
                guard head.deliverAt <= now else {
                    next = head.deliverAt
                    return false
                }
                batch = s.outgoing.takeDue(now: now, limit: nil, packets: packets)
                s.deliveryBusy = true
                return true
            }
            guard send else {
                if let next { armDelivery(at: next) }
                return
            }
            switch immediate.sendNow(batch) {
            case .sent:
                state.withLock { $0.deliveryBusy = false }
                wake(.sender)
                wake(.closer)
            case .partial(let written):
                state.withLock { s in
                    s.handover = written == 0 ? batch : Array(batch[written...])
                    s.handovers += 1
                }
                wake(.delivery)
                return
            case .failed(let error):
                state.withLock { s in
                    s.deliveryBusy = false
                    s.deliveryFailure = error
                }
                wake(.sender)
                wake(.closer)
                return
            }
        }
    }

    /// Starts the direct reader (once, at creation).
    func startReadingDirectly() {
        resumeReading(from: .idle)
    }

    /// Runs the direct reader if it is in `expected` (so that it never runs twice at once).
    private func resumeReading(from expected: DirectReader) {
        let resume: Bool = state.withLock { s in
            guard s.directReader == expected else { return false }
            s.directReader = .reading
            return true
        }
        if resume { readDirectly() }
    }

    /// The direct reader: what `runReader` does, with reads that do not wait, on the thread that resumed it (the
    /// reactor's for readiness and bandwidth timers, the receiver's when it made room).
    private func readDirectly() {
        guard let immediate else { return }
        let buffer = conditions.linkBufferBytes
        while true {
            var wakeAt: Instant?
            let proceed: Bool = state.withLock { s in
                if s.closed {
                    s.directReader = .stopped
                    return false
                }
                if s.incoming.queuedBytes >= incomingCap {
                    s.directReader = .awaitingRoom
                    return false
                }
                if conditions.bitsPerSecond != nil {
                    let allowedAt = s.incoming.linkFreeAt - wireTime(buffer)
                    if clock.now < allowedAt {
                        s.directReader = .awaitingTime
                        wakeAt = allowedAt
                        return false
                    }
                }
                return true
            }
            guard proceed else {
                if let wakeAt {
                    _ = Timers.schedule(at: wakeAt) { [weak self] in self?.resumeReading(from: .awaitingTime) }
                }
                return
            }
            let chunk: [UInt8]
            switch immediate.receiveNow() {
            case .bytes(let bytes):
                chunk = bytes
            case .wouldBlock:
                state.withLock { $0.directReader = .awaitingData }
                do {
                    try immediate.whenReadable { [weak self] in self?.resumeReading(from: .awaitingData) }
                    return
                } catch {
                    state.withLock { $0.directReader = .reading }
                    failReading(error)
                    return
                }
            case .failed(let error):
                failReading(error)
                return
            }
            let now = clock.now
            var due: Instant?
            let stop: Bool = state.withLock { s in
                if s.closed {
                    s.directReader = .stopped
                    return true
                }
                var offset = 0
                while offset < chunk.count {
                    let count = packets ? chunk.count : min(buffer, chunk.count - offset)
                    let piece = offset == 0 && count == chunk.count ? chunk : Array(chunk[offset..<offset + count])
                    // No byte limit in direct mode: carrying always succeeds.
                    guard let carried = carry(piece, on: .incoming, now: now, state: &s) else { break }
                    if due == nil { due = carried.deliverAt }
                    offset += count
                }
                return false
            }
            if stop { return }
            if let due { wake(.receiver, dueAt: due) } else { wake(.receiver) }
        }
    }

    /// The inner transport failed (or ended): the receiver gets the error after what is still on the link.
    private func failReading(_ failure: TransportError) {
        state.withLock { s in
            s.directReader = .stopped
            s.innerFailure = failure
            s.innerFailureAt = max(clock.now + conditions.latency, s.incoming.lastDeliverAt)
        }
        wake(.receiver)
    }

    /// Cancels the delivery timer (the transport is closed or gone).
    func stopDirect() {
        let timer: ReactorTimer? = state.withLock { s in
            defer { s.deliveryTimer = nil }
            return s.deliveryTimer?.timer
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
