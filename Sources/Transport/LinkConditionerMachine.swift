import Glibc
import Support

/// The rules of a `ConditionedTransport` as a value (docs/architecture.md, "State machines as values"): the two lanes
/// of the simulated link with their queues, faults and timing, whether the link is up or going down at its byte limit,
/// open or closed (draining until a deadline), where the delivery of outgoing chunks is (idle, sending, a direct
/// write's rest handed over, failed), where the reader of the inner transport is (and the failure it ended with), the
/// one receive allowed at a time, and the direct mode's delivery timer. One mutating function per event, the time given
/// as an argument, each answering what the shell does (carry on, wait, wait until, send these bytes, stop); the shell
/// (`ConditionerCore`) keeps the inner transport, the parked tasks, the reactor's timers, the clock and the logger.
/// Nothing here blocks, reads a clock, allocates per chunk beyond the chunk itself, or traps.
struct LinkConditionerMachine: Sendable, Hashable {
    typealias Instant = ContinuousClock.Instant

    /// What is fixed at creation: the (clamped) conditions, the framing, the caps and the mode.
    struct Settings: Sendable, Hashable {
        let conditions: LinkConditions
        /// Packets are never split or merged.
        let packets: Bool
        /// Direct mode: the shell moves chunks on the reactor's thread (a timer delivers, a readiness handler reads).
        let direct: Bool
        /// Without a bandwidth limit, the most queued outgoing (a single chunk may exceed it).
        let outgoingCap: Int
        /// The most queued incoming before the reader stops pulling from the inner transport.
        let incomingCap: Int

        init(conditions: LinkConditions, packets: Bool, direct: Bool) {
            (self.conditions, self.packets, self.direct) = (conditions, packets, direct)
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

        /// Serialisation time of `n` bytes.
        func wireTime(_ n: Int) -> Duration {
            guard let bps = conditions.bitsPerSecond, n > 0 else { return .zero }
            return .nanoseconds(Int64((Double(n) * 8e9 / Double(bps)).rounded()))
        }
    }

    struct Scheduled: Sendable, Hashable {
        var bytes: [UInt8]
        let deliverAt: Instant
    }

    /// One direction of the simulated link.
    struct Lane: Sendable, Hashable {
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

    enum Direction: Sendable, Hashable { case outgoing, incoming }

    /// Whether the link is up, or going down at its byte limit (`disconnectAfterBytes`).
    enum Link: Sendable, Hashable {
        /// Up, having carried this many bytes in both directions.
        case up(carried: Int)
        /// The limit was reached: the link goes down when the chunk that reached it is delivered, at `at`.
        case down(at: Instant)
    }

    /// Whether the local side closed the transport.
    enum Lifecycle: Sendable, Hashable {
        case open
        /// Closed: queued outgoing chunks still reach the inner transport until `drainUntil`.
        case closed(drainUntil: Instant)
    }

    /// Where the delivery of outgoing chunks to the inner transport is.
    enum Delivery: Sendable, Hashable {
        case idle
        /// A batch is with the inner transport.
        case sending
        /// Direct mode: the inner transport took only part of a batch at once; the delivery task sends `rest`.
        case handover(rest: [UInt8])
        /// The inner transport failed: senders get its error.
        case failed(TransportError)
    }

    /// Where the reader of the inner transport is. In direct mode: reading, or waiting for the inner transport (a
    /// readiness handler), for room in the incoming lane (the receiver restarts it), or for the bandwidth to allow
    /// the next chunk (a timer). The reader task (not direct) only ends: stopped, or with the inner transport's failure.
    enum Reader: Sendable, Hashable {
        case idle, reading, awaitingData, awaitingRoom, awaitingTime, stopped
        /// The inner transport failed or ended: the receiver gets `failure` once what was on the link before it is
        /// delivered (at `at`).
        case ended(TransportError, at: Instant)
    }

    /// Direct mode: the timer that delivers the outgoing head on the reactor's thread (its token names it: a timer
    /// replaced by an earlier one does nothing when it fires).
    enum DeliveryTimer: Sendable, Hashable {
        case unarmed
        case armed(at: Instant, token: UInt64)
    }

    /// Why a call is refused (the shell words the errors, naming the peer).
    enum Refusal: Sendable, Hashable {
        /// The transport is closed.
        case closed
        /// The link went down at its byte limit.
        case linkDown
        /// The inner transport failed (delivering, or reading): its error.
        case failed(TransportError)
        /// A receive is pending already.
        case receivePending
    }

    /// A chunk put on a lane.
    struct Carried: Sendable, Hashable {
        var deliverAt: Instant
        /// It reached the byte limit: the link goes down when it is delivered.
        var final: Bool
        /// It was cut at the limit.
        var truncated: Bool
    }

    /// Faults a chunk met (for the shell's trace).
    struct Faults: Sendable, Hashable {
        var direction: Direction
        var bytes: Int
        var drop: Bool
        var stall: Bool
        var corrupted: Int
    }

    /// What a parked call or loop does next: go on, or wait (until woken, or until an instant).
    enum Next: Sendable, Hashable {
        case proceed
        case wait
        case waitUntil(Instant)
    }

    /// The answer to `send`.
    enum SendAnswer: Sendable, Hashable {
        case refused(Refusal)
        case wait
        case waitUntil(Instant)
        /// Carried: the delivery is due at `deliverAt`. `reachedLimit`: the link goes down (wake the receiver), and
        /// `lostTail`: bytes of this send could not be carried (the send fails with `linkDown`).
        case carried(deliverAt: Instant, reachedLimit: Bool, lostTail: Bool)
    }

    /// The answer to `receiveStep`.
    enum ReceiveAnswer: Sendable, Hashable {
        case refused(Refusal)
        case wait
        case waitUntil(Instant)
        /// Hand these bytes to the receiver.
        case bytes([UInt8])
    }

    /// The answer to `deliveryStep`.
    enum DeliveryAnswer: Sendable, Hashable {
        /// Send these bytes to the inner transport, then `delivered` or `deliveryFailed`.
        case send([UInt8])
        /// The link's down time came: close the inner transport (the loop ends).
        case goDown
        case wait
        case waitUntil(Instant)
        /// The transport is closed and nothing is left to deliver: the loop ends.
        case stop
    }

    /// The answer to `deliveryTimerFired`.
    enum DirectDelivery: Sendable, Hashable {
        /// Write these bytes without waiting, then `delivered`, `handedOver` or `deliveryFailed`.
        case send([UInt8])
        /// The head is not due yet: arm the timer for it.
        case rearm(Instant)
        case nothing
    }

    /// The answer to `receivedChunk`.
    struct ChunkAnswer: Sendable, Hashable {
        /// When the first piece is due (nil: none was carried).
        var due: Instant?
        /// The reader stops (the transport is closed, or the link reached its byte limit).
        var stop: Bool
    }

    /// Where a direct reader is resumed from (`resumeReading`).
    enum Resume: Sendable, Hashable { case start, data, room, time }

    /// The answer to `directReadStep`.
    enum DirectRead: Sendable, Hashable {
        /// Read from the inner transport without waiting.
        case read
        /// Stopped (closed), or waiting for room (the receiver resumes it).
        case stop
        /// Waiting for the bandwidth: resume it (`.time`) at this instant.
        case resumeAt(Instant)
    }

    let settings: Settings
    private(set) var outgoing: Lane
    private(set) var incoming: Lane
    private(set) var link: Link = .up(carried: 0)
    private(set) var lifecycle: Lifecycle = .open
    private(set) var delivery: Delivery = .idle
    private(set) var reader: Reader = .idle
    /// A `receive()` is pending.
    private(set) var receiving = false
    private(set) var deliveryTimer: DeliveryTimer = .unarmed
    private var lastToken: UInt64 = 0
    /// Batches the inner transport did not take at once in direct mode (for tests).
    private(set) var handovers = 0

    /// A link created at `now`, its lanes' generators seeded from the conditions' seed.
    init(settings: Settings, now: Instant) {
        self.settings = settings
        var mix = settings.conditions.seed
        func lane() -> Lane {
            Lane(linkFreeAt: now, lastDeliverAt: now,
                 chunkRandom: SeededRandom(seed: SeededRandom.splitMix64(&mix)),
                 corruptRandom: SeededRandom(seed: SeededRandom.splitMix64(&mix)))
        }
        outgoing = lane()
        incoming = lane()
    }

    private var conditions: LinkConditions { settings.conditions }

    var isClosed: Bool {
        if case .closed = lifecycle { return true }
        return false
    }

    /// Whether the byte limit was reached.
    var disconnected: Bool {
        if case .down = link { return true }
        return false
    }

    var linkDownAt: Instant? {
        if case let .down(at) = link { return at }
        return nil
    }

    var deliveryFailure: TransportError? {
        if case let .failed(error) = delivery { return error }
        return nil
    }

    /// A batch is with the inner transport (or its rest handed over).
    var deliveryBusy: Bool {
        switch delivery {
        case .sending, .handover: true
        case .idle, .failed: false
        }
    }

    var statistics: LinkStatistics {
        var stats = LinkStatistics()
        stats.outgoing = outgoing.stats
        stats.incoming = incoming.stats
        stats.disconnected = disconnected
        return stats
    }

    // MARK: Carrying

    /// Puts `bytes` on `lane`: faults, timing, the byte limit. Nil when the link is down already.
    private static func carry(
        _ bytes: [UInt8], on lane: inout Lane, _ direction: Direction, link: inout Link, now: Instant,
        settings: Settings, faults: (Faults) -> Void
    ) -> Carried? {
        let conditions = settings.conditions
        var piece = bytes
        var final = false
        var truncated = false
        var carried = 0
        if let limit = conditions.disconnectAfterBytes {
            guard case let .up(total) = link else { return nil }
            carried = total
            let allowance = limit - total
            if allowance <= 0 { return nil }
            if piece.count >= allowance {
                truncated = piece.count > allowance
                piece = Array(piece.prefix(allowance))
                final = true
            }
        } else if case let .up(total) = link {
            carried = total
        }
        let drop = lane.chunkRandom.nextUnit() < conditions.dropRate
        let stall = lane.chunkRandom.nextUnit() < conditions.stallRate
        let corrupted = lane.corrupt(&piece, rate: conditions.corruptionRate)
        if lane.stats.chunks > 0, now > lane.linkFreeAt {
            lane.stats.idleTime += now - lane.linkFreeAt
        }
        var start = max(now, lane.linkFreeAt)
        if stall { start += conditions.stallDuration }
        let end = start + settings.wireTime(piece.count)
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
            lane.queuedBytes += piece.count
            lane.queue.append(Scheduled(bytes: piece, deliverAt: deliverAt))
        }
        link = final ? .down(at: deliverAt) : .up(carried: carried + piece.count)
        if drop || stall || corrupted > 0 {
            faults(Faults(direction: direction, bytes: piece.count, drop: drop, stall: stall, corrupted: corrupted))
        }
        return Carried(deliverAt: deliverAt, final: final, truncated: truncated)
    }

    // MARK: Local side

    /// An empty `send`: refused only when closed.
    func sendEmpty() -> Refusal? {
        isClosed ? .closed : nil
    }

    /// A `send` offers `count` bytes of `bytes` from `offset` (a piece of at most `linkBufferBytes`, or a whole packet).
    /// It waits while more than the link's buffer is queued ahead of the wire (or, without a bandwidth limit, while
    /// the outgoing cap would be passed).
    mutating func send(_ bytes: [UInt8], offset: Int, count: Int, now: Instant, faults: (Faults) -> Void) -> SendAnswer {
        if isClosed { return .refused(.closed) }
        if disconnected { return .refused(.linkDown) }
        if let failure = deliveryFailure { return .refused(.failed(failure)) }
        if conditions.bitsPerSecond != nil {
            let allowedAt = outgoing.linkFreeAt - settings.wireTime(max(0, conditions.linkBufferBytes - count))
            if now < allowedAt { return .waitUntil(allowedAt) }
        } else if outgoing.queuedBytes > 0 && outgoing.queuedBytes + count > settings.outgoingCap {
            return .wait
        }
        let piece = offset == 0 && count == bytes.count ? bytes : Array(bytes[offset..<offset + count])
        guard let carried = Self.carry(piece, on: &outgoing, .outgoing, link: &link, now: now, settings: settings, faults: faults) else {
            return .refused(.linkDown)
        }
        return .carried(deliverAt: carried.deliverAt, reachedLimit: carried.final,
                        lostTail: carried.final && (carried.truncated || offset + count < bytes.count))
    }

    /// A `receive()` begins: refused when closed or when another is pending.
    mutating func beginReceive() -> Refusal? {
        if isClosed { return .closed }
        if receiving { return .receivePending }
        receiving = true
        return nil
    }

    /// The `receive()` ended (with bytes or an error).
    mutating func endReceive() {
        receiving = false
    }

    /// The pending `receive()` looks at the incoming lane: the chunks due (none past the link's down time), or when to
    /// look again; the link's end or the inner transport's failure once everything before it was delivered.
    mutating func receiveStep(now: Instant) -> ReceiveAnswer {
        if isClosed { return .refused(.closed) }
        if let head = incoming.first {
            if let down = linkDownAt, head.deliverAt > down {
                incoming.removeAll()
            } else if head.deliverAt <= now {
                return .bytes(incoming.takeDue(now: now, limit: linkDownAt, packets: settings.packets))
            } else {
                return .waitUntil(head.deliverAt)
            }
        }
        if let down = linkDownAt {
            return now >= down ? .refused(.linkDown) : .waitUntil(down)
        }
        if case let .ended(failure, at) = reader {
            return now < at ? .waitUntil(at) : .refused(.failed(failure))
        }
        return .wait
    }

    /// `close()`: the drain deadline (a second past the last outgoing delivery), or nil when closed already.
    mutating func close(now: Instant) -> Instant? {
        guard !isClosed else { return nil }
        let deadline = max(now, outgoing.lastDeliverAt) + .seconds(1)
        lifecycle = .closed(drainUntil: deadline)
        return deadline
    }

    /// The closing call waits until the outgoing lane is drained (or cannot drain: delivery failed, the link went
    /// down), or until the deadline.
    func closeStep(now: Instant) -> Next {
        guard case let .closed(deadline) = lifecycle else { return .proceed }
        let drained = outgoing.isEmpty && !deliveryBusy
        if drained || deliveryFailure != nil || linkDownAt != nil || now >= deadline { return .proceed }
        return .waitUntil(deadline)
    }

    // MARK: Delivery

    /// The delivery loop looks for work: due outgoing chunks (task mode), a direct write's rest (direct mode), the
    /// link's down time, or the end.
    mutating func deliveryStep(now: Instant) -> DeliveryAnswer {
        if settings.direct {
            // Direct mode: the timer delivers; this loop sends only what it handed over.
            if case let .handover(rest) = delivery {
                delivery = .sending
                return .send(rest)
            }
            return isClosed ? .stop : .wait
        }
        if let head = outgoing.first {
            if let down = linkDownAt, head.deliverAt > down {
                outgoing.removeAll()
            } else if head.deliverAt <= now {
                let batch = outgoing.takeDue(now: now, limit: linkDownAt, packets: settings.packets)
                delivery = .sending
                return .send(batch)
            } else {
                return .waitUntil(head.deliverAt)
            }
        }
        if let down = linkDownAt {
            return now >= down ? .goDown : .waitUntil(down)
        }
        return isClosed ? .stop : .wait
    }

    /// The inner transport took the batch being sent. Answers the next head's delivery time (direct mode re-arms
    /// its timer).
    mutating func delivered() -> Instant? {
        if delivery == .sending { delivery = .idle }
        return outgoing.first?.deliverAt
    }

    /// Sending the batch failed (nil: the delivery was cancelled, which is no failure).
    mutating func deliveryFailed(_ failure: TransportError?) {
        guard delivery == .sending else { return }
        delivery = failure.map { .failed($0) } ?? .idle
    }

    /// Direct mode: the inner transport took only `written` bytes of the batch being sent; the delivery task sends
    /// the rest.
    mutating func handedOver(_ batch: [UInt8], written: Int) {
        guard delivery == .sending else { return }
        delivery = .handover(rest: written == 0 ? batch : Array(batch[written...]))
        handovers += 1
    }

    /// Direct mode: the delivery timer must fire by `at`. A token for a new timer (replacing the armed one), or nil
    /// when one armed for `at` or earlier covers it (chunks are queued in delivery order).
    mutating func armDelivery(at: Instant) -> UInt64? {
        if case let .armed(current, _) = deliveryTimer, current <= at { return nil }
        lastToken &+= 1
        deliveryTimer = .armed(at: at, token: lastToken)
        return lastToken
    }

    /// Direct mode: the delivery timer `token` fired (or the loop it started goes on): the batch due to write, or
    /// when the head is due.
    mutating func deliveryTimerFired(_ token: UInt64, now: Instant) -> DirectDelivery {
        if case let .armed(_, armed) = deliveryTimer, armed == token { deliveryTimer = .unarmed }
        guard delivery == .idle, let head = outgoing.first else { return .nothing }
        guard head.deliverAt <= now else { return .rearm(head.deliverAt) }
        let batch = outgoing.takeDue(now: now, limit: nil, packets: settings.packets)
        delivery = .sending
        return .send(batch)
    }

    /// The transport is closed or gone: whether a delivery timer was armed (the shell cancels it).
    mutating func disarm() -> Bool {
        defer { deliveryTimer = .unarmed }
        return deliveryTimer != .unarmed
    }

    // MARK: Reading

    /// The reader task looks at the incoming lane: read from the inner transport, wait for room or for the
    /// bandwidth, or stop (closed, or the link went down).
    mutating func readerStep(now: Instant) -> Next? {
        if isClosed || disconnected {
            if case .ended = reader {} else { reader = .stopped }
            return nil
        }
        if incoming.queuedBytes >= settings.incomingCap { return .wait }
        if conditions.bitsPerSecond != nil {
            let allowedAt = incoming.linkFreeAt - settings.wireTime(conditions.linkBufferBytes)
            if now < allowedAt { return .waitUntil(allowedAt) }
        }
        return .proceed
    }

    /// The inner transport failed or ended (`failure`): the receiver gets it after what is still on the link.
    mutating func readingFailed(_ failure: TransportError, now: Instant) {
        reader = .ended(failure, at: max(now + conditions.latency, incoming.lastDeliverAt))
    }

    /// The reader got `chunk` from the inner transport: it goes on the incoming lane in pieces of at most
    /// `linkBufferBytes` (a packet whole). Stops the reader when closed or when the byte limit is reached.
    mutating func receivedChunk(_ chunk: [UInt8], now: Instant, faults: (Faults) -> Void) -> ChunkAnswer {
        if isClosed || disconnected {
            reader = .stopped
            return ChunkAnswer(due: nil, stop: true)
        }
        let buffer = conditions.linkBufferBytes
        var due: Instant?
        var offset = 0
        while offset < chunk.count {
            let count = settings.packets ? chunk.count : min(buffer, chunk.count - offset)
            let piece = offset == 0 && count == chunk.count ? chunk : Array(chunk[offset..<offset + count])
            guard let carried = Self.carry(piece, on: &incoming, .incoming, link: &link, now: now, settings: settings, faults: faults) else {
                reader = .stopped
                return ChunkAnswer(due: due, stop: true)
            }
            if due == nil { due = carried.deliverAt }
            if carried.final {
                reader = .stopped
                return ChunkAnswer(due: due, stop: true)
            }
            offset += count
        }
        return ChunkAnswer(due: due, stop: false)
    }

    /// Direct mode: the reader resumes if it is where `from` says (so that it never runs twice at once). True: run it.
    mutating func resumeReading(from: Resume) -> Bool {
        let expected: Reader
        switch from {
        case .start: expected = .idle
        case .data: expected = .awaitingData
        case .room: expected = .awaitingRoom
        case .time: expected = .awaitingTime
        }
        guard reader == expected else { return false }
        reader = .reading
        return true
    }

    /// Direct mode: the running reader looks at the incoming lane before reading.
    mutating func directReadStep(now: Instant) -> DirectRead {
        if isClosed {
            reader = .stopped
            return .stop
        }
        if incoming.queuedBytes >= settings.incomingCap {
            reader = .awaitingRoom
            return .stop
        }
        if conditions.bitsPerSecond != nil {
            let allowedAt = incoming.linkFreeAt - settings.wireTime(conditions.linkBufferBytes)
            if now < allowedAt {
                reader = .awaitingTime
                return .resumeAt(allowedAt)
            }
        }
        return .read
    }

    /// Direct mode: the inner transport has nothing now; the reader waits for its readiness handler.
    mutating func awaitingData() {
        if reader == .reading { reader = .awaitingData }
    }
}
