import Logging
import Support
import Synchronization
import Transport

/// A request/response conversation with one device over any `Transport`, for any protocol `P` describes.
///
/// - Frames requests for the link and cuts what comes back into packets with the protocol's deframer.
/// - Matches a reply to the oldest outstanding request with the same key. Requests with different keys may be in
///   flight together; requests with the same key are sent one after another (first come, first served), and after
///   a retransmission or an abandoned request the next request with that key waits one timeout (its quiet period),
///   so that a late duplicate reply cannot be taken for its answer.
/// - A request's slot exists before it is sent, so a reply that arrives before the sender waits is kept.
/// - Times out and retransmits per `Options`. A Pending reply keeps the request waiting for the final reply (up to
///   the pending timeout) and stops retransmission: the device accepted it.
/// - Delivers pushes to every `pushes()` subscriber and reports a lost link as an `Event` after failing every
///   waiting request with the protocol's error.
/// - Every timer and wait runs on the clock given at init (`ContinuousClock` by default).
///
/// Errors are the protocol's (`P.Failure`, built by `P.error(_:)`) or `CancellationError`. Cancelling a waiting
/// call ends it at once, wherever it waits (for its key, its quiet period, its reply).
///
/// Call `close()` when done: the session's reader task keeps the transport open until then.
///
/// The session is the I/O shell of `RequestMachine` (docs/architecture.md, "State machines as values"), which keeps
/// every rule and every piece of state above: whose turn a key is, quiet periods, each request's slot, its timer and
/// outcome, Pending, the byte stream's send queue, the end. The shell keeps the link, the reader, the continuations
/// of waiting requests, the timers on the session's clock, the quiet-period sleeps, the deframer and the counters.
///
/// Performance: the optimiser does not specialise an async generic function for a caller in another module, so each
/// request used to run the unspecialised code, with a generic-metadata lookup (slots, `WaitResult`, continuations,
/// dictionaries keyed by `P.Key`) at nearly every step. The async members on a request's path are therefore
/// `@inlinable @inline(__always)` and what they touch `@usableFromInline`: inlined into a family's call site, where
/// `P` is concrete, they and the synchronous helpers they call are specialised. The actor is `final` so that calls
/// are direct (a class method call could not be inlined). `tuneup-bench many`: this process's CPU per round of 64
/// probes 94-99 ms → 77-87 ms.
public final actor RequestSession<P: SessionProtocol> {
    /// Timing of requests (and whatever else the protocol keeps in its options).
    public typealias Options = P.Options

    /// Counters, for diagnostics and tests.
    public struct Statistics: Sendable, Hashable {
        /// Requests given to `request` or `submit` (a retransmission is not a new request), and replies handed to a
        /// caller.
        public var requests = 0, replies = 0
        /// Sends repeated after a timeout, and timeouts (one per send that got no answer in time).
        public var retransmissions = 0, timeouts = 0
        /// Replies that matched no waiting request (late duplicates, or answers to abandoned requests).
        public var unexpectedReplies = 0
        /// Packets the protocol said are not for this session, and input the deframer rejected as a whole; pushes.
        public var ignoredPackets = 0, pushes = 0
        /// What the deframer skipped (garbage, bad checksums).
        public var decoder: P.Deframer.Statistics
    }

    /// Something that happened to the session as a whole.
    public enum Event: Sendable, Hashable {
        /// The session ended (link lost, or closed); every waiting request failed with the error.
        case disconnected(P.Failure)
    }

    /// A submitted request whose reply can be awaited with `reply(to:)`.
    public struct Ticket: Sendable, Hashable {
        @usableFromInline let id: UInt64
        /// The request's command.
        public let command: P.Command
        /// When the request was handed to the link (wall time, for latency measurements; timers use the session's
        /// clock).
        public let sentAt: ContinuousClock.Instant

        @usableFromInline init(id: UInt64, command: P.Command, sentAt: ContinuousClock.Instant) {
            (self.id, self.command, self.sentAt) = (id, command, sentAt)
        }
    }

    /// The link; the session owns it.
    public let transport: any Transport
    /// Timing of requests.
    public nonisolated let options: Options
    /// The protocol description in use.
    public nonisolated let definition: P
    public var statistics: Statistics { counters }
    /// The counters behind `statistics` (usable from the inlined request path).
    @usableFromInline var counters: Statistics

    @usableFromInline let logger: Logger
    @usableFromInline let clock: SessionClock
    @usableFromInline var deframer: P.Deframer
    /// The session's rules and state: keys' turns and quiet periods, slots, the send queue, its end.
    @usableFromInline var machine = Machine()
    /// The I/O of each slot in flight: its timer, and its requester once it waits.
    @usableFromInline var slotIO: [UInt64: SlotIO] = [:]
    /// Requests waiting for a busy key, by the machine's waiter id; resumed with false when cancelled.
    @usableFromInline var turnWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    /// Requests waiting out a quiet period (ended when the session fails).
    @usableFromInline var quietWaits: [UInt64: Task<Void, any Error>] = [:]
    @usableFromInline var nextQuietWait: UInt64 = 0
    private let pushBroadcast = Broadcast<P.Packet>()
    private let eventBroadcast = Broadcast<Event>()
    /// The task reading the link (set once, at init; cancelled when the session fails).
    private let reader = Mutex<Task<Void, Never>?>(nil)

    @usableFromInline typealias Machine = RequestMachine<P.Key, P.Packet, P.Failure>
    @usableFromInline typealias WaitResult = Machine.Outcome

    /// What the shell holds for a slot the machine has in flight.
    @usableFromInline struct SlotIO {
        @usableFromInline var timer: SessionTimer?
        @usableFromInline var continuation: CheckedContinuation<WaitResult, Never>?
        @inlinable init(timer: SessionTimer? = nil, continuation: CheckedContinuation<WaitResult, Never>? = nil) {
            (self.timer, self.continuation) = (timer, continuation)
        }
    }

    /// The session's failure once it ended.
    @usableFromInline var failure: P.Failure? { machine.failure }

    /// Starts a session on an open transport. The session owns the transport from now on.
    ///
    /// - Parameters:
    ///   - definition: the protocol, as it applies to this link.
    ///   - clock: runs every timer and wait of the session (tests pass a clock they advance themselves).
    public init(transport: any Transport, definition: P, options: Options, clock: any Clock<Duration> = ContinuousClock(),
                logger: Logger = Logger(label: "tuneup.session")) {
        self.transport = transport
        self.definition = definition
        self.options = options
        self.clock = SessionClock(clock)
        self.logger = logger
        let deframer = definition.makeDeframer(for: transport.framing)
        self.deframer = deframer
        self.counters = Statistics(decoder: deframer.statistics)
        // The reader starts here, not from a task that enters the actor to start it (one task per session less).
        let task = Task { [weak self, transport] in
            while !Task.isCancelled {
                do {
                    let chunk = try await transport.receive()
                    guard let self else { return }
                    await self.ingest(chunk)
                } catch {
                    guard let self else { return }
                    await self.fail(self.definition.error(.linkLost(peer: transport.peerDescription,
                                                                    cause: error as? TransportError)))
                    return
                }
            }
        }
        reader.withLock { $0 = task }
    }

    // MARK: Requests

    /// Sends `packet` and returns the device's reply, whatever it says.
    ///
    /// - Parameters:
    ///   - timeout: overrides `options.timeout` for this request.
    ///   - retransmissions: overrides `options.retransmissions` (use 0 for requests that must not be repeated).
    /// - Throws: the protocol's error for no answer, an unfinished accepted request, a lost or closed link or a
    ///   failed write; `CancellationError` when the calling task is cancelled (a reply arriving later is dropped).
    @inlinable @inline(__always)
    public func request(_ packet: P.Packet, timeout: Duration? = nil, retransmissions: Int? = nil) async throws -> P.Packet {
        if let failure { throw failure }
        let key = definition.key(of: packet)
        try await acquire(key)
        defer { release(key) }
        if let failure { throw failure }
        let command = definition.command(of: packet)
        let frame = definition.encode(packet, for: transport.framing)
        let wait = timeout ?? options.timeout
        let limit = max(0, retransmissions ?? options.retransmissions)
        counters.requests += 1
        try Task.checkCancellation()
        let slot = openSlot(key, timeout: wait)
        try await transmit(frame, packet, command, slot: slot)
        return try await reply(to: packet, frame: frame, key: key, slot: slot, wait: wait, limit: limit)
    }

    /// Waits for the reply to `packet`, sent once into `slot`, and sends it again after each timeout, `limit` times at
    /// most: what `request` returns or throws once the request is on the link (`requests` too, for each of a batch).
    @inlinable @inline(__always)
    func reply(to packet: P.Packet, frame: [UInt8], key: P.Key, slot first: UInt64, wait: Duration, limit: Int) async throws -> P.Packet {
        let command = definition.command(of: packet)
        var slot = first
        var sends = 1
        while true {
            switch await result(of: slot) {
            case let .reply(reply):
                counters.replies += 1
                if sends > 1 { beginQuiet(key, wait) }
                return reply
            case let .failed(error):
                throw error
            case .cancelled:
                beginQuiet(key, wait)
                throw CancellationError()
            case let .timedOut(accepted):
                counters.timeouts += 1
                if accepted {
                    beginQuiet(key, wait)
                    throw definition.error(.notFinished(command: command, pendingTimeout: options.pendingTimeout))
                }
                lookBehindPartialFrame()
                if sends > limit {
                    beginQuiet(key, wait)
                    throw definition.error(.noAnswer(command: command, waited: wait, attempts: sends))
                }
                try Task.checkCancellation()
                logger.debug("no reply to \(definition.describe(command)) in \(wait.shortDescription); sending again")
                sends += 1
                counters.retransmissions += 1
                slot = openSlot(key, timeout: wait)
                try await transmit(frame, packet, command, slot: slot)
            }
        }
    }

    /// Sends `packets` pipelined and returns the outcome of each, in order: what `request` would return or throw
    /// for it. One task carries the whole batch (no task per request): the requests whose key is free go out
    /// together in one send; their replies are awaited in order, each retransmitted after a timeout as `request`
    /// does. A request whose key is taken (by another caller, or earlier in the batch) is sent afterwards with
    /// `request`, once the batch holds no key: a batch never waits for a key while holding one.
    /// Cancelling the calling task ends every outstanding request of the batch with `CancellationError`.
    @inlinable @inline(__always)
    public func requests(_ packets: [P.Packet], timeout: Duration? = nil,
                         retransmissions: Int? = nil) async -> [Result<P.Packet, any Error>] {
        let wait = timeout ?? options.timeout
        let limit = max(0, retransmissions ?? options.retransmissions)
        var results = [Result<P.Packet, any Error>?](repeating: nil, count: packets.count)
        // Sent requests: (index, key, slot); the batch holds each key until its request is done.
        var sent: [(index: Int, key: P.Key, slot: UInt64, frame: [UInt8])] = []
        sent.reserveCapacity(packets.count)
        if let failure { return packets.map { _ in .failure(failure) } }
        if Task.isCancelled { return packets.map { _ in .failure(CancellationError()) } }
        let now = clock.now()
        var first: (slot: UInt64, command: P.Command)?
        for (index, packet) in packets.enumerated() {
            if failure != nil { break }  // A failed send ended the session: the rest fail in `request`.
            let key = definition.key(of: packet)
            guard machine.takeTurnIfReady(key, now: now) else { continue }
            counters.requests += 1
            let slot = openSlot(key, timeout: wait)
            if first == nil { first = (slot, definition.command(of: packet)) }
            logger.trace("→ \(packet)")
            let frame = definition.encode(packet, for: transport.framing)
            sent.append((index, key, slot, frame))
            if transport.framing == .byteStream {
                machine.enqueue(frame)
            } else {
                do {
                    try await send(frame, command: definition.command(of: packet), ownSlot: slot)
                } catch {
                    results[index] = .failure(error)
                }
            }
        }
        if let first, transport.framing == .byteStream, !machine.sending {
            do {
                try await flushOutgoing(own: first.slot, command: first.command)
            } catch {
                results[sent[0].index] = .failure(error)
            }
        }
        for (index, key, slot, frame) in sent {
            defer { release(key) }
            if results[index] != nil {
                closeSlot(slot)
                continue
            }
            do {
                results[index] = .success(try await reply(to: packets[index], frame: frame, key: key, slot: slot, wait: wait, limit: limit))
            } catch {
                results[index] = .failure(error)
            }
        }
        // The rest, one by one, holding no key of the batch.
        var outcomes: [Result<P.Packet, any Error>] = []
        outcomes.reserveCapacity(packets.count)
        for index in packets.indices {
            if let result = results[index] {
                outcomes.append(result)
            } else {
                do {
                    outcomes.append(.success(try await request(packets[index], timeout: timeout,
                                                               retransmissions: retransmissions)))
                } catch {
                    outcomes.append(.failure(error))
                }
            }
        }
        return outcomes
    }

    /// Sends `packet` now (or with the send in flight, see `transmit`) and returns at once with a ticket for its
    /// reply: for pipelines that must put requests on the link in a fixed order and wait for many replies at a
    /// time. Calls are sent in call order. A request
    /// whose key equals that of an unanswered submitted request waits for it first (the protocol cannot tell
    /// their replies apart). There is no retransmission: the caller decides what to resend.
    ///
    /// - Throws: the protocol's error for a lost or closed link or a failed write; `CancellationError`.
    @inlinable @inline(__always)
    public func submit(_ packet: P.Packet, timeout: Duration? = nil) async throws -> Ticket {
        if let failure { throw failure }
        let key = definition.key(of: packet)
        try await acquire(key)
        if let failure {
            release(key)
            throw failure
        }
        counters.requests += 1
        let command = definition.command(of: packet)
        let id = openSlot(key, timeout: timeout ?? options.timeout, holdsKey: true)
        try await transmit(definition.encode(packet, for: transport.framing), packet, command, slot: id)
        return Ticket(id: id, command: command, sentAt: .now)
    }

    /// Waits for the reply to a submitted request, whatever it says.
    /// - Throws: the protocol's error when none came within the ticket's timeout (or, after Pending, the pending
    ///   timeout) or when the session ends; `CancellationError`.
    @inlinable @inline(__always)
    public func reply(to ticket: Ticket) async throws -> P.Packet {
        switch await result(of: ticket.id) {
        case let .reply(packet):
            counters.replies += 1
            return packet
        case let .timedOut(accepted):
            counters.timeouts += 1
            lookBehindPartialFrame()
            throw definition.error(.ticketTimedOut(command: ticket.command, accepted: accepted))
        case .cancelled:
            throw CancellationError()
        case let .failed(error):
            throw error
        }
    }

    /// Puts one request on the link; a failed write ends the session (and forgets the slot).
    ///
    /// On a byte stream, requests that come while a send is in flight are queued and go out together in the next
    /// send, in call order, taken by the task whose send was in flight: a pipeline of N requests costs a few writes,
    /// not N (and a conditioned link a few chunks). The first request of a burst is never held back. A failed send
    /// ends the session, which fails every queued request with the same error; a send cancelled after the caller's
    /// own frame went out leaves the rest to a task of the session's own.
    @inlinable @inline(__always)
    func transmit(_ frame: [UInt8], _ packet: P.Packet, _ command: P.Command, slot: UInt64) async throws {
        logger.trace("→ \(packet)")
        guard transport.framing == .byteStream else {
            try await send(frame, command: command, ownSlot: slot)
            return
        }
        machine.enqueue(frame)
        if !machine.sending { try await flushOutgoing(own: slot, command: command) }
    }

    /// Sends what is queued, batch after batch, until nothing is: for the caller whose frame is first (`own`), or
    /// for a task of the session after a cancelled sender. A sender cancelled while sending others' requests leaves
    /// them to a task of the session (`handOverOutgoing`).
    @inlinable @inline(__always)
    func flushOutgoing(own: UInt64?, command: P.Command?) async throws {
        guard machine.startSending() else { return }
        defer { handOverOutgoing() }
        var own = own
        while let batch = machine.nextBatch() {
            do {
                try await send(batch, command: command, ownSlot: own)
            } catch is CancellationError where own == nil {
                machine.sendCancelled(batch)
                return
            }
            own = nil
        }
    }

    /// The sender is done: frames queued meanwhile (its send was cancelled) go out from a task of the session.
    @usableFromInline func handOverOutgoing() {
        if machine.stopSending() { Task { try? await self.flushOutgoing(own: nil, command: nil) } }
    }

    /// One write. A failed write ends the session (failing every waiting request); `ownSlot`, the caller's own
    /// request whose frame this is, is forgotten first, as its caller gets the error thrown.
    @inlinable @inline(__always)
    func send(_ bytes: [UInt8], command: P.Command?, ownSlot: UInt64?) async throws {
        do {
            try await transport.send(bytes)
        } catch let error as TransportError {
            if let ownSlot { closeSlot(ownSlot) }
            let e: P.Failure
            if let command {
                e = definition.error(error.code == .closed
                    ? .linkClosedWhileSending(command: command, peer: transport.peerDescription)
                    : .writeFailed(command: command, cause: error))
            } else {
                e = definition.error(.linkLost(peer: transport.peerDescription, cause: error))
            }
            fail(e)
            throw e
        } catch {
            if let ownSlot { closeSlot(ownSlot) }
            throw error
        }
    }

    /// After a timeout: a corrupted length field may hold back packets already received; look behind it.
    @usableFromInline func lookBehindPartialFrame() {
        if deframer.abandonPartialFrame() { drain() }
    }

    /// No request with `key` goes out for `wait` from now: a late reply to the last one is not taken for its answer.
    @usableFromInline func beginQuiet(_ key: P.Key, _ wait: Duration) {
        machine.beginQuiet(key, until: clock.now() + wait)
    }

    /// Registers a slot for the next reply with this key and starts its timer. Call before sending.
    @inlinable func openSlot(_ key: P.Key, timeout: Duration, holdsKey: Bool = false) -> UInt64 {
        let opened = machine.openSlot(key, holdsKey: holdsKey)
        if let number = opened.timer {
            slotIO[opened.id] = SlotIO(timer: startTimer(id: opened.id, number: number, after: timeout))
        }
        return opened.id
    }

    /// Forgets a slot whose request was never sent.
    @usableFromInline func closeSlot(_ id: UInt64) {
        if let ended = machine.forget(id) { perform(ended) }
    }

    /// Waits for the slot's outcome (which may already be there).
    @inlinable @inline(__always)
    func result(of id: UInt64) async -> WaitResult {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WaitResult, Never>) in
                switch machine.claim(id) {
                case let .ready(outcome):
                    continuation.resume(returning: outcome)
                case .waiting:
                    slotIO[id, default: SlotIO()].continuation = continuation
                case .absent:
                    continuation.resume(returning: .failed(failure ?? definition.error(.notOpen)))
                }
            }
        } onCancel: {
            Task { await self.cancelSlot(id) }
        }
    }

    /// Starts the slot's timeout on the session's clock (on the reactor's timers in use: no task per request).
    @usableFromInline func startTimer(id: UInt64, number: UInt64, after timeout: Duration) -> SessionTimer {
        clock.schedule(clock.now() + timeout) { [weak self] in
            guard let self else { return }
            Task { await self.expireTimer(id, number) }
        }
    }

    @usableFromInline func expireTimer(_ id: UInt64, _ number: UInt64) {
        if let ended = machine.timerFired(id, number: number) { perform(ended) }
    }

    @usableFromInline func cancelSlot(_ id: UInt64) {
        if let ended = machine.cancel(id) { perform(ended) }
    }

    /// Does what the machine said when a slot ended: stops its timer, hands its key to the next waiter, resumes its
    /// requester.
    @usableFromInline func perform(_ ended: Machine.Ended) {
        let io = slotIO.removeValue(forKey: ended.slot)
        io?.timer?.cancel()
        if let waiter = ended.granted { grant(waiter) }
        if let outcome = ended.deliver { io?.continuation?.resume(returning: outcome) }
    }

    /// Hands a waiter its key.
    @usableFromInline func grant(_ waiter: UInt64) {
        turnWaiters.removeValue(forKey: waiter)?.resume(returning: true)
    }

    /// Waits until no other request with this key is outstanding and its quiet period has passed. Both waits end
    /// at once, without spinning, when the calling task is cancelled (`CancellationError`; the key is not taken) or
    /// the session fails (its error).
    @inlinable @inline(__always)
    func acquire(_ key: P.Key) async throws {
        try Task.checkCancellation()
        if case let .queued(id) = machine.takeTurn(key) {
            let granted = await withTaskCancellationHandler {
                await withCheckedContinuation { turnWaiters[id] = $0 }
            } onCancel: {
                Task { await self.cancelWaiter(id, key) }
            }
            guard granted else { throw CancellationError() }
        }
        while let quiet = machine.quietPeriod(key, now: clock.now()) {
            nextQuietWait += 1
            let id = nextQuietWait
            let sleep = clock.sleep
            let wait = Task { try await sleep(quiet) }
            quietWaits[id] = wait
            defer { quietWaits[id] = nil }
            do {
                try await withTaskCancellationHandler { try await wait.value } onCancel: { wait.cancel() }
            } catch {
                release(key)
                if let failure { throw failure }
                throw CancellationError()
            }
        }
    }

    /// Requests waiting for a busy key (for tests and diagnostics).
    package var queuedRequests: Int { machine.queuedRequests }

    /// Requests waiting for their reply (for tests and diagnostics).
    package var awaitedRequests: Int { machine.awaitedRequests }

    /// Keys in their quiet period with a request holding them (waiting it out).
    package var quietKeys: Int { machine.quietKeys(now: clock.now()) }

    /// A cancelled waiter leaves the queue at once (if it was not handed the key already).
    @usableFromInline func cancelWaiter(_ id: UInt64, _ key: P.Key) {
        if machine.leaveQueue(id, key) { turnWaiters.removeValue(forKey: id)?.resume(returning: false) }
    }

    @inlinable func release(_ key: P.Key) {
        // The key stays busy when a waiter is handed it: ownership passes to the next request.
        if let next = machine.release(key) { grant(next) }
    }

    // MARK: Receiving

    @usableFromInline func ingest(_ chunk: [UInt8]) {
        deframer.append(chunk)
        drain()
    }

    @usableFromInline func drain() {
        while let item = deframer.next() {
            switch item {
            case let .packet(packet):
                deliver(packet)
            case let .rejected(reason):
                counters.ignoredPackets += 1
                logger.debug("ignoring input from \(transport.peerDescription): \(reason)")
            }
        }
        counters.decoder = deframer.statistics
    }

    @usableFromInline func deliver(_ packet: P.Packet) {
        logger.trace("← \(packet)")
        let key: P.Key
        let accepted: Bool
        switch definition.classify(packet) {
        case let .ignore(reason):
            counters.ignoredPackets += 1
            logger.debug("ignoring \(reason): \(packet)")
            return
        case .push:
            counters.pushes += 1
            pushBroadcast.yield(packet)
            return
        case let .reply(k):
            key = k
            accepted = false
        case let .pending(k):
            key = k
            accepted = true
        }
        if accepted {
            // The final reply follows. Wait for it as long as a long operation may take.
            guard let accepted = machine.pending(key) else { return unexpected(packet) }
            slotIO[accepted.slot]?.timer?.cancel()
            slotIO[accepted.slot, default: SlotIO()].timer =
                startTimer(id: accepted.slot, number: accepted.timer, after: max(options.pendingTimeout, options.timeout))
            return
        }
        guard let ended = machine.reply(packet, key: key) else { return unexpected(packet) }
        perform(ended)
    }

    @usableFromInline func unexpected(_ packet: P.Packet) {
        counters.unexpectedReplies += 1
        logger.debug("reply matches no request: \(packet)")
    }

    // MARK: Pushes, events, closing

    /// A stream of every push the device sends from now on. It finishes when the session ends.
    /// Up to 256 undelivered pushes are kept; older ones are dropped if the consumer falls behind.
    public func pushes() -> AsyncStream<P.Packet> {
        pushBroadcast.subscribe(bufferingPolicy: .bufferingNewest(256))
    }

    /// A stream of session events; it finishes after `.disconnected`.
    public func events() -> AsyncStream<Event> {
        eventBroadcast.subscribe()
    }

    /// Whether the session can still carry requests.
    public var isOpen: Bool { failure == nil }

    /// Ends the session: fails waiting requests with the protocol's `closed` error, finishes the streams, closes
    /// the transport.
    public func close() async {
        fail(definition.error(.closed(peer: transport.peerDescription)), closeTransport: false)
        await transport.close()
    }

    @usableFromInline func fail(_ error: P.Failure, closeTransport: Bool = true) {
        guard let failing = machine.fail(error) else { return }
        reader.withLock { $0 }?.cancel()
        let io = slotIO
        slotIO = [:]
        io.values.forEach { $0.timer?.cancel() }
        for id in failing.awaited { io[id]?.continuation?.resume(returning: .failed(error)) }
        for waiter in failing.granted { grant(waiter) }
        quietWaits.values.forEach { $0.cancel() }
        pushBroadcast.finish()
        eventBroadcast.finish(last: .disconnected(error))
        if closeTransport {
            Task { [transport] in await transport.close() }
        }
    }
}
