import LightX
import Logging
import Synchronization
import Transport

/// A LightX conversation with one device over any `Transport`.
///
/// - Frames requests for the link (SPP on byte streams, raw packets on USB) and decodes what comes back.
/// - Matches replies to requests by param0, first in first out per param0, as the protocol has no sequence
///   numbers (sheet §3.2). Requests with different param0 may be in flight together; requests with the same
///   param0 are sent one after another, and after a retransmission the next request with that param0 waits one
///   timeout so that a late duplicate reply cannot be taken for its answer.
/// - A reply with status Pending keeps the request waiting for the final reply (the reference host dropped it).
/// - Times out and retransmits per `Options`; reports a device that stops answering as `HeadsetError.timeout`.
/// - Delivers device pushes (command 0xC0-0xFF) to every `pushes()` subscriber.
///
/// Call `close()` when done: the session's reader task keeps the transport open until then.
public actor LightXSession {
    /// Timing and addressing of requests.
    public struct Options: Sendable {
        /// How long to wait for a reply before retransmitting (or failing).
        public var timeout: Duration
        /// How many times a request is sent again after a timeout before `HeadsetError.timeout`.
        public var retransmissions: Int
        /// How long to wait for the final reply after the device answered Pending (it accepted a long operation).
        /// A request the device accepted is never retransmitted.
        public var pendingTimeout: Duration
        /// Header fields of requests; nil picks `.spp` on byte streams and `.usb` on packet links.
        public var style: RequestStyle?

        public init(timeout: Duration = .seconds(2), retransmissions: Int = 2, pendingTimeout: Duration = .seconds(10), style: RequestStyle? = nil) {
            self.timeout = timeout
            self.retransmissions = retransmissions
            self.pendingTimeout = pendingTimeout
            self.style = style
        }
    }

    /// Counters, for diagnostics and tests.
    public struct Statistics: Sendable, Hashable {
        public var requests = 0
        public var replies = 0
        public var retransmissions = 0
        public var timeouts = 0
        /// Replies that matched no waiting request (late duplicates, or answers to abandoned requests).
        public var unexpectedReplies = 0
        /// Packets from a source other than the device application or the host's own id (§1.6).
        public var ignoredPackets = 0
        public var pushes = 0
        /// What the stream decoder skipped (garbage, bad checksums).
        public var decoder = SPPStreamDecoder.Statistics()
    }

    /// Something that happened to the session as a whole.
    public enum Event: Sendable, Hashable {
        /// The link went down; every waiting request failed with `error`.
        case disconnected(HeadsetError)
    }

    public let transport: any Transport
    public nonisolated let options: Options
    /// The request header style in use.
    public nonisolated let style: RequestStyle
    public private(set) var statistics = Statistics()

    private let logger: Logger
    private var decoder = SPPStreamDecoder()
    /// Outstanding requests by slot id, and per param0 the ids still waiting for a reply, oldest first.
    private var slots: [UInt64: Slot] = [:]
    private var waiting: [UInt32: [UInt64]] = [:]
    private var busyKeys: Set<UInt32> = []
    /// Requests waiting for a busy param0, in arrival order; resumed with false when cancelled.
    private var keyQueues: [UInt32: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)]] = [:]
    private var nextWaiter: UInt64 = 0
    private var quietUntil: [UInt32: ContinuousClock.Instant] = [:]
    private var nextWaiterID: UInt64 = 0
    private let pushBroadcast = Broadcast<Packet>()
    private let eventBroadcast = Broadcast<Event>()
    private var readerTask: Task<Void, Never>?
    private var failure: HeadsetError?

    /// One transmission of a request waiting for its reply. A slot exists before the request is sent, so a reply
    /// that arrives before the sender gets to wait is kept in `result` instead of being lost.
    private struct Slot {
        let key: UInt32
        /// The slot holds its param0's turn (submitted requests) and gives it back when it ends.
        var holdsKey = false
        var continuation: CheckedContinuation<WaitResult, Never>?
        var result: WaitResult?
        var timer: Task<Void, Never>?
        /// The device answered Pending: it accepted the request and the final reply follows.
        var accepted = false
    }

    private enum WaitResult {
        case reply(Packet)
        case timedOut(accepted: Bool)
        case cancelled
        case failed(HeadsetError)
    }

    /// Starts a session on an open transport. The session owns the transport from now on.
    public init(transport: any Transport, options: Options = Options(), logger: Logger = Logger(label: "tuneup.session")) {
        self.transport = transport
        self.options = options
        self.style = options.style ?? (transport.framing == .packets ? .usb : .spp)
        self.logger = logger
        Task { await self.startReader() }
    }

    private func startReader() {
        guard readerTask == nil, failure == nil else { return }
        let transport = self.transport
        readerTask = Task { [weak self] in
            while !Task.isCancelled {
                do {
                    let chunk = try await transport.receive()
                    guard let self else { return }
                    await self.ingest(chunk)
                } catch {
                    guard let self else { return }
                    let reason: HeadsetError
                    if let e = error as? TransportError {
                        reason = .transport(e, while: "link to \(transport.peerDescription) lost")
                    } else {
                        reason = HeadsetError(.disconnected, "link to \(transport.peerDescription) closed")
                    }
                    await self.fail(reason)
                    return
                }
            }
        }
    }

    // MARK: Requests

    /// Sends `packet` and returns the device's reply, whatever its status (`Packet.status`).
    ///
    /// - Parameters:
    ///   - timeout: overrides `options.timeout` for this request.
    ///   - retransmissions: overrides `options.retransmissions` (use 0 for requests that must not be repeated).
    /// - Throws: `HeadsetError` with `.timeout`, `.disconnected`, `.deviceNotConnected` (session closed) or
    ///   `.writeFailed`; `CancellationError` when the calling task is cancelled (a reply arriving later is dropped).
    public func request(_ packet: Packet, timeout: Duration? = nil, retransmissions: Int? = nil) async throws -> Packet {
        if let failure { throw failure }
        let key = packet.header.param0
        try await acquire(key)
        defer { release(key) }
        if let failure { throw failure }
        let frame = encode(packet)
        let wait = timeout ?? options.timeout
        let limit = max(0, retransmissions ?? options.retransmissions)
        statistics.requests += 1
        var sends = 0
        while true {
            try Task.checkCancellation()
            sends += 1
            if sends > 1 { statistics.retransmissions += 1 }
            let slot = openSlot(key, timeout: wait)
            do {
                logger.trace("→ \(packet)")
                try await transport.send(frame)
            } catch let error as TransportError {
                closeSlot(slot)
                let e: HeadsetError = error.code == .closed
                    ? HeadsetError(.disconnected, "link to \(transport.peerDescription) closed while sending \(commandName(packet.command))")
                    : HeadsetError(.writeFailed, "sending \(commandName(packet.command)) failed: \(error.message)")
                fail(e)
                throw e
            } catch {
                closeSlot(slot)
                throw error
            }
            switch await result(of: slot) {
            case let .reply(reply):
                statistics.replies += 1
                if sends > 1 { quietUntil[key] = .now + wait }
                return reply
            case let .failed(error):
                throw error
            case .cancelled:
                quietUntil[key] = .now + wait
                throw CancellationError()
            case let .timedOut(accepted):
                statistics.timeouts += 1
                if accepted {
                    quietUntil[key] = .now + wait
                    throw HeadsetError(
                        .timeout,
                        "device accepted \(commandName(packet.command)) but did not finish it within \(options.pendingTimeout.shortDescription)",
                        command: packet.command)
                }
                // A corrupted length field may hold back frames already received; look behind it.
                if transport.framing == .byteStream, decoder.abandonPartialFrame() { drainDecoder() }
                if sends > limit {
                    quietUntil[key] = .now + wait
                    throw HeadsetError(
                        .timeout,
                        "device did not answer \(commandName(packet.command)) within \(wait.shortDescription)" + (sends > 1 ? " (\(sends) attempts)" : ""),
                        command: packet.command)
                }
                logger.debug("no reply to \(commandName(packet.command)) in \(wait.shortDescription); sending again")
            }
        }
    }

    /// A submitted request whose reply can be awaited with `reply(to:)`.
    public struct Ticket: Sendable, Hashable {
        fileprivate let id: UInt64
        /// The request's command.
        public let command: Command
        /// When the request was handed to the link.
        public let sentAt: ContinuousClock.Instant
    }

    /// Sends `packet` now and returns at once with a ticket for its reply: for pipelines that must put requests
    /// on the link in a fixed order and wait for many replies at a time. Calls are sent in call order. A request
    /// whose param0 equals that of an unanswered submitted request waits for it first (the protocol cannot tell
    /// their replies apart). There is no retransmission: the caller decides what to resend.
    ///
    /// - Throws: `HeadsetError` (`.disconnected`, `.deviceNotConnected`, `.writeFailed`), `CancellationError`.
    public func submit(_ packet: Packet, timeout: Duration? = nil) async throws -> Ticket {
        if let failure { throw failure }
        let key = packet.header.param0
        try await acquire(key)
        if let failure {
            release(key)
            throw failure
        }
        statistics.requests += 1
        let id = openSlot(key, timeout: timeout ?? options.timeout)
        slots[id]?.holdsKey = true
        do {
            logger.trace("→ \(packet)")
            try await transport.send(encode(packet))
        } catch {
            closeSlot(id)
            if let error = error as? TransportError {
                let e: HeadsetError = error.code == .closed
                    ? HeadsetError(.disconnected, "link to \(transport.peerDescription) closed while sending \(commandName(packet.command))")
                    : HeadsetError(.writeFailed, "sending \(commandName(packet.command)) failed: \(error.message)")
                fail(e)
                throw e
            }
            throw error
        }
        return Ticket(id: id, command: packet.command, sentAt: .now)
    }

    /// Waits for the reply to a submitted request, whatever its status.
    /// - Throws: `HeadsetError(.timeout)` when none came in the ticket's timeout (or, after Pending, the pending
    ///   timeout), `.disconnected`/`.deviceNotConnected` when the session ends, `CancellationError`.
    public func reply(to ticket: Ticket) async throws -> Packet {
        switch await result(of: ticket.id) {
        case let .reply(packet):
            statistics.replies += 1
            return packet
        case let .timedOut(accepted):
            statistics.timeouts += 1
            if transport.framing == .byteStream, decoder.abandonPartialFrame() { drainDecoder() }
            throw HeadsetError(.timeout, "device did not " + (accepted ? "finish " : "answer ") + commandName(ticket.command) + " in time",
                               command: ticket.command)
        case .cancelled:
            throw CancellationError()
        case let .failed(error):
            throw error
        }
    }

    /// The request bytes as they travel on this link.
    private func encode(_ packet: Packet) -> [UInt8] {
        transport.framing == .packets ? RawPacketCodec.encode(packet) : SPPFraming.encode(packet)
    }

    /// Registers a slot for the next reply with this param0 and starts its timer. Call before sending.
    private func openSlot(_ key: UInt32, timeout: Duration) -> UInt64 {
        nextWaiterID += 1
        let id = nextWaiterID
        var slot = Slot(key: key)
        if let failure {
            slot.result = .failed(failure)
        } else {
            slot.timer = startTimer(id: id, after: timeout)
            waiting[key, default: []].append(id)
        }
        slots[id] = slot
        return id
    }

    /// Forgets a slot whose request was never sent.
    private func closeSlot(_ id: UInt64) {
        guard let slot = slots.removeValue(forKey: id) else { return }
        if slot.holdsKey { release(slot.key) }
        slot.timer?.cancel()
        waiting[slot.key]?.removeAll { $0 == id }
        if waiting[slot.key]?.isEmpty == true { waiting[slot.key] = nil }
    }

    /// Waits for the slot's outcome (which may already be there).
    private func result(of id: UInt64) async -> WaitResult {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WaitResult, Never>) in
                guard var slot = slots[id] else {
                    continuation.resume(returning: .failed(failure ?? HeadsetError(.deviceNotConnected, "the session is closed")))
                    return
                }
                if let result = slot.result {
                    slots[id] = nil
                    continuation.resume(returning: result)
                } else {
                    slot.continuation = continuation
                    slots[id] = slot
                }
            }
        } onCancel: {
            Task { await self.finish(id, with: .cancelled) }
        }
    }

    private func startTimer(id: UInt64, after timeout: Duration) -> Task<Void, Never> {
        Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            await self?.expireTimer(id)
        }
    }

    private func expireTimer(_ id: UInt64) {
        guard let slot = slots[id], slot.result == nil else { return }
        finish(id, with: .timedOut(accepted: slot.accepted))
    }

    /// Ends a slot with `result`: takes it out of the reply queue and hands the result to the waiting request
    /// (or keeps it there until the request comes to wait).
    private func finish(_ id: UInt64, with result: WaitResult) {
        guard var slot = slots[id], slot.result == nil else { return }
        slot.timer?.cancel()
        slot.timer = nil
        if slot.holdsKey {
            slot.holdsKey = false
            release(slot.key)
        }
        waiting[slot.key]?.removeAll { $0 == id }
        if waiting[slot.key]?.isEmpty == true { waiting[slot.key] = nil }
        if let continuation = slot.continuation {
            slots[id] = nil
            continuation.resume(returning: result)
        } else {
            slot.result = result
            slots[id] = slot
        }
    }

    /// Waits until no other request with this param0 is outstanding and its quiet period has passed. Both waits end
    /// at once, without spinning, when the calling task is cancelled (`CancellationError`; the key is not taken).
    private func acquire(_ key: UInt32) async throws {
        try Task.checkCancellation()
        if busyKeys.contains(key) {
            nextWaiter += 1
            let id = nextWaiter
            let granted = await withTaskCancellationHandler {
                await withCheckedContinuation { keyQueues[key, default: []].append((id, $0)) }
            } onCancel: {
                Task { await self.cancelWaiter(id, key) }
            }
            guard granted else { throw CancellationError() }
        }
        busyKeys.insert(key)
        while let quiet = quietUntil[key], quiet > .now, failure == nil {
            do {
                try await Task.sleep(until: quiet, clock: .continuous)
            } catch {
                release(key)
                throw CancellationError()
            }
        }
        if failure == nil { quietUntil[key] = nil }
    }

    /// Requests waiting for a busy param0 (for tests and diagnostics).
    var queuedRequests: Int { keyQueues.values.reduce(0) { $0 + $1.count } }

    /// Keys in their quiet period with a request holding them (waiting it out).
    var quietKeys: Int { quietUntil.keys.filter { busyKeys.contains($0) && quietUntil[$0]! > .now }.count }

    /// A cancelled waiter leaves the queue at once (if it was not handed the key already).
    private func cancelWaiter(_ id: UInt64, _ key: UInt32) {
        guard var queue = keyQueues[key], let i = queue.firstIndex(where: { $0.id == id }) else { return }
        let waiter = queue.remove(at: i)
        keyQueues[key] = queue.isEmpty ? nil : queue
        waiter.continuation.resume(returning: false)
    }

    private func release(_ key: UInt32) {
        if var queue = keyQueues[key], !queue.isEmpty {
            let next = queue.removeFirst()
            keyQueues[key] = queue.isEmpty ? nil : queue
            next.continuation.resume(returning: true)  // The key stays busy: ownership passes to the next request.
        } else {
            busyKeys.remove(key)
        }
    }

    // MARK: Receiving

    private func ingest(_ chunk: [UInt8]) {
        switch transport.framing {
        case .byteStream:
            decoder.append(chunk)
            drainDecoder()
        case .packets:
            do {
                deliver(try RawPacketCodec.decode(chunk))
            } catch {
                statistics.ignoredPackets += 1
                logger.debug("ignoring undecodable packet from \(transport.peerDescription): \(error)")
            }
        }
    }

    private func drainDecoder() {
        while let packet = decoder.next() { deliver(packet) }
        statistics.decoder = decoder.statistics
    }

    private func deliver(_ packet: Packet) {
        logger.trace("← \(packet)")
        let source = packet.header.source
        // The reference host accepts its own id (USB devices echo the request header) or the application (§1.6).
        guard source == .application || source == style.source || source == style.destination else {
            statistics.ignoredPackets += 1
            logger.debug("ignoring packet from module \(source): \(packet)")
            return
        }
        if packet.isPush {
            statistics.pushes += 1
            pushBroadcast.yield(packet)
            return
        }
        let key = packet.header.param0
        guard let id = waiting[key]?.first, var slot = slots[id] else {
            statistics.unexpectedReplies += 1
            logger.debug("reply matches no request: \(packet)")
            return
        }
        if packet.status == .pending {
            // Accepted; the final reply follows. Wait for it as long as a long operation may take.
            slot.timer?.cancel()
            slot.timer = startTimer(id: id, after: max(options.pendingTimeout, options.timeout))
            slot.accepted = true
            slots[id] = slot
            return
        }
        finish(id, with: .reply(packet))
    }

    // MARK: Pushes, events, closing

    /// A stream of every push the device sends from now on (command 0xC0-0xFF). It finishes when the session ends.
    /// Up to 256 undelivered pushes are kept; older ones are dropped if the consumer falls behind.
    public func pushes() -> AsyncStream<Packet> {
        pushBroadcast.subscribe(bufferingPolicy: .bufferingNewest(256))
    }

    /// A stream of session events; it finishes after `.disconnected`.
    public func events() -> AsyncStream<Event> {
        eventBroadcast.subscribe()
    }

    /// Whether the session can still carry requests.
    public var isOpen: Bool { failure == nil }

    /// Ends the session: fails waiting requests with `.deviceNotConnected`, finishes the streams, closes the transport.
    public func close() async {
        fail(HeadsetError(.deviceNotConnected, "the session with \(transport.peerDescription) is closed"))
        await transport.close()
    }

    private func fail(_ error: HeadsetError) {
        guard failure == nil else { return }
        failure = error
        readerTask?.cancel()
        for id in Array(slots.keys) { finish(id, with: .failed(error)) }
        for (_, queue) in keyQueues { queue.forEach { $0.continuation.resume(returning: true) } }
        keyQueues = [:]
        pushBroadcast.finish()
        eventBroadcast.finish(last: .disconnected(error))
        if error.code != .deviceNotConnected {
            Task { [transport] in await transport.close() }
        }
    }
}
