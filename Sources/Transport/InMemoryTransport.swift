import Support
import Synchronization

/// One end of an in-memory link, made by `InMemoryTransport.pair(framing:capacity:)`. For tests and for running the
/// simulator in-process.
///
/// Contract (in addition to `Transport`'s):
/// - Purely async: no threads, no descriptors; waiting suspends tasks.
/// - Bounded buffering: each direction holds at most `capacity` unread bytes. With `.byteStream` a `send` larger than
///   the free space is delivered in pieces as the peer reads; with `.packets` each `send` is delivered as one message
///   by one `receive`, and a message waits until it fits (a message larger than `capacity` waits for an empty buffer).
/// - With `.byteStream`, `receive` returns everything buffered at that moment (up to `capacity` bytes) as one chunk.
/// - Sending an empty array does nothing (a receiver never gets an empty chunk).
/// - `close()` on one end: that end's pending and later calls throw `.closed`; the other end's `receive` first drains
///   what is buffered, then throws `.closed`; its `send` throws `.closed` at once (nobody will read the bytes).
///   Dropping an end without closing it closes it.
public final class InMemoryTransport: Transport {
    /// `memory:N.a` / `memory:N.b` — the pair number and the *other* end's letter.
    public let peerDescription: String
    /// The framing chosen for the pair.
    public let framing: LinkFraming

    private let incoming: MemoryPipe
    private let outgoing: MemoryPipe
    private let sendLock = AsyncLock()

    private static let counter = Atomic<Int>(0)

    private init(peerDescription: String, framing: LinkFraming, incoming: MemoryPipe, outgoing: MemoryPipe) {
        self.peerDescription = peerDescription
        self.framing = framing
        self.incoming = incoming
        self.outgoing = outgoing
    }

    deinit {
        incoming.closeReader()
        outgoing.closeWriter()
    }

    /// Makes a connected pair. `capacity` (at least 1) bounds the unread bytes per direction.
    public static func pair(framing: LinkFraming = .byteStream, capacity: Int = 64 * 1024) -> (any Transport, any Transport) {
        let ends = makePair(framing: framing, capacity: capacity)
        return (ends.0, ends.1)
    }

    /// Like `pair(framing:capacity:)` but with the concrete type.
    public static func makePair(framing: LinkFraming = .byteStream, capacity: Int = 64 * 1024) -> (InMemoryTransport, InMemoryTransport) {
        let number = counter.add(1, ordering: .relaxed).newValue
        let aToB = MemoryPipe(capacity: max(1, capacity), framing: framing)
        let bToA = MemoryPipe(capacity: max(1, capacity), framing: framing)
        let a = InMemoryTransport(peerDescription: "memory:\(number).b", framing: framing, incoming: bToA, outgoing: aToB)
        let b = InMemoryTransport(peerDescription: "memory:\(number).a", framing: framing, incoming: aToB, outgoing: bToA)
        return (a, b)
    }

    /// See `Transport.send(_:)`.
    public func send(_ bytes: [UInt8]) async throws {
        try await sendLock.withLock {
            try await outgoing.write(bytes, peer: peerDescription)
        }
    }

    /// See `Transport.receive()`.
    public func receive() async throws -> [UInt8] {
        try await incoming.read(peer: peerDescription)
    }

    /// Whether a `receive()` on this end is parked waiting for data (for tests and diagnostics).
    var hasPendingReceive: Bool { incoming.hasParkedReader }

    /// Whether a `send(_:)` on this end is parked waiting for the peer to make room (for tests and diagnostics).
    var hasPendingSend: Bool { outgoing.hasParkedWriter }

    /// See `Transport.close()`.
    public func close() async {
        incoming.closeReader()
        outgoing.closeWriter()
    }
}

/// One direction of an in-memory link. Internal.
final class MemoryPipe: Sendable {
    private enum Role: Hashable, Sendable { case reader, writer }

    private struct State: ParkingState {
        var chunks: [[UInt8]] = []
        var head = 0
        var buffered = 0
        /// The sending end closed: the reader drains, then gets `.closed`.
        var writerClosed = false
        /// The receiving end closed: writes fail, buffered bytes are discarded.
        var readerClosed = false
        /// The parked read and write.
        var parking = Parking<Role>()
        var receiving = false

        mutating func append(_ chunk: [UInt8]) {
            chunks.append(chunk)
            buffered += chunk.count
        }

        mutating func takeFirst() -> [UInt8] {
            let chunk = chunks[head]
            chunks[head] = []
            head += 1
            buffered -= chunk.count
            if head > 64 && head * 2 > chunks.count {
                chunks.removeFirst(head)
                head = 0
            }
            return chunk
        }

        mutating func takeAll() -> [UInt8] {
            if chunks.count - head == 1 { return takeFirst() }
            var all: [UInt8] = []
            all.reserveCapacity(buffered)
            for i in head..<chunks.count { all.append(contentsOf: chunks[i]) }
            chunks.removeAll(keepingCapacity: true)
            head = 0
            buffered = 0
            return all
        }

        var isEmpty: Bool { head == chunks.count }
    }

    let capacity: Int
    let framing: LinkFraming
    private let state = Mutex(State())

    init(capacity: Int, framing: LinkFraming) {
        self.capacity = capacity
        self.framing = framing
    }

    /// Appends `bytes`, waiting for space. Throws `.closed` if either end closed.
    func write(_ bytes: [UInt8], peer: String) async throws {
        guard !bytes.isEmpty else {
            try state.withLock { s throws(TransportError) in
                if s.writerClosed { throw TransportError(.closed, "\(peer): the in-memory link is closed") }
            }
            return
        }
        var offset = 0
        while offset < bytes.count {
            try await suspend(.writer) { s throws(TransportError) -> Bool in
                if s.writerClosed { throw TransportError(.closed, "\(peer): the in-memory link is closed") }
                if s.readerClosed { throw TransportError(.closed, "\(peer): the peer closed the in-memory link") }
                switch framing {
                case .byteStream:
                    let room = capacity - s.buffered
                    guard room > 0 else { return false }
                    let n = min(room, bytes.count - offset)
                    s.append(offset == 0 && n == bytes.count ? bytes : Array(bytes[offset..<offset + n]))
                    offset += n
                case .packets:
                    guard s.buffered == 0 || s.buffered + bytes.count <= capacity else { return false }
                    s.append(bytes)
                    offset = bytes.count
                }
                return true
            }
            wake(.reader)
        }
    }

    /// Takes the next chunk (byte stream: everything buffered; packets: one message).
    func read(peer: String) async throws -> [UInt8] {
        try state.withLock { s throws(TransportError) in
            if s.receiving { throw TransportError(.io, "\(peer): receive() called while another receive() is pending") }
            s.receiving = true
        }
        defer { state.withLock { $0.receiving = false } }
        var result: [UInt8] = []
        try await suspend(.reader) { s throws(TransportError) -> Bool in
            if s.readerClosed { throw TransportError(.closed, "\(peer): the in-memory link is closed") }
            if !s.isEmpty {
                result = framing == .packets ? s.takeFirst() : s.takeAll()
                return true
            }
            if s.writerClosed { throw TransportError(.closed, "\(peer): the peer closed the in-memory link") }
            return false
        }
        wake(.writer)
        return result
    }

    /// Whether a read is suspended waiting for data (for tests and diagnostics).
    var hasParkedReader: Bool { state.withLock { $0.receiving && $0.parking.isParked(.reader) } }

    /// Whether a write is suspended waiting for room (for tests and diagnostics).
    var hasParkedWriter: Bool { state.withLock { $0.parking.isParked(.writer) } }

    /// The receiving end went away.
    func closeReader() {
        let waiters = state.withLock { s in
            s.readerClosed = true
            s.chunks = []
            s.head = 0
            s.buffered = 0
            return s.parking.takeAll()
        }
        for w in waiters { w.resume() }
    }

    /// The sending end went away.
    func closeWriter() {
        let waiters = state.withLock { s in
            s.writerClosed = true
            return s.parking.takeAll()
        }
        for w in waiters { w.resume() }
    }

    private func wake(_ role: Role) {
        state.withLock { $0.parking.take(role) }?.resume()
    }

    /// Runs `attempt` under the lock until it returns true, parked (cancellably) in between (`parkLoop`). `attempt` may
    /// throw to end the wait. Cancellation is only honoured while not making progress, so no data is lost by it.
    private func suspend(_ role: Role, _ attempt: (inout State) throws(TransportError) -> Bool) async throws {
        try await parkLoop(role, in: state, wake: { [weak self] role, _ in self?.wake(role) }) { s, _ throws(TransportError) in
            try attempt(&s) ? .done : .wait
        }
    }
}
