import Session
import Synchronization
import Transport
@_exported import TestSupport

/// A tiny protocol for testing the core: 4-byte frames `A5 kind key value` on byte streams, 3-byte messages
/// `kind key value` on packet links. A reply answers the oldest request with its key.
struct Tiny: Hashable, Sendable, CustomStringConvertible {
    enum Kind: UInt8 { case request = 1, reply = 2, pending = 3, push = 4, foreign = 5 }
    var kind: Kind
    var key: UInt8
    var value: UInt8

    static func request(_ key: UInt8, _ value: UInt8 = 0) -> Tiny { Tiny(kind: .request, key: key, value: value) }
    static func reply(_ key: UInt8, _ value: UInt8) -> Tiny { Tiny(kind: .reply, key: key, value: value) }

    var bytes: [UInt8] { [kind.rawValue, key, value] }
    var description: String { "\(kind) \(key)=\(value)" }
}

/// The error of the tiny protocol: the core's failure itself, so tests can check exactly what the core reported.
struct TinyError: Error, Hashable, Sendable {
    let failure: SessionFailure<UInt8>
}

struct TinyProtocol: SessionProtocol {
    typealias Options = RequestOptions
    static let marker: UInt8 = 0xA5

    func encode(_ request: Tiny, for framing: LinkFraming) -> [UInt8] {
        framing == .packets ? request.bytes : [Self.marker] + request.bytes
    }
    func key(of request: Tiny) -> UInt8 { request.key }
    func command(of request: Tiny) -> UInt8 { request.key }
    func makeDeframer(for framing: LinkFraming) -> TinyDeframer { TinyDeframer(framing: framing) }
    func classify(_ packet: Tiny) -> Incoming<UInt8> {
        switch packet.kind {
        case .reply: .reply(packet.key)
        case .pending: .pending(packet.key)
        case .push: .push
        case .request, .foreign: .ignore(reason: "not for the host")
        }
    }
    func error(_ failure: SessionFailure<UInt8>) -> TinyError { TinyError(failure: failure) }
}

struct TinyDeframer: PacketDeframer {
    struct Statistics: Hashable, Sendable {
        var frames = 0
        var discardedBytes = 0
    }
    let framing: LinkFraming
    var buffer: [UInt8] = []
    var statistics = Statistics()

    mutating func append(_ chunk: [UInt8]) { buffer += chunk }

    mutating func next() -> Deframed<Tiny>? {
        if framing == .packets {
            guard !buffer.isEmpty else { return nil }
            defer { buffer = [] }
            guard buffer.count == 3, let kind = Tiny.Kind(rawValue: buffer[0]) else { return .rejected(reason: "bad message") }
            statistics.frames += 1
            return .packet(Tiny(kind: kind, key: buffer[1], value: buffer[2]))
        }
        while let first = buffer.first, first != TinyProtocol.marker || (buffer.count >= 2 && Tiny.Kind(rawValue: buffer[1]) == nil) {
            buffer.removeFirst()
            statistics.discardedBytes += 1
        }
        guard buffer.count >= 4 else { return nil }
        let packet = Tiny(kind: Tiny.Kind(rawValue: buffer[1])!, key: buffer[2], value: buffer[3])
        buffer.removeFirst(4)
        statistics.frames += 1
        return .packet(packet)
    }
}

typealias TinySession = RequestSession<TinyProtocol>

/// The device end of an in-memory link: records every request and answers with what `respond` returns.
final class TinyPeer: Sendable {
    let link: any Transport
    let framing: LinkFraming
    private let log = Mutex<[Tiny]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    var requests: [Tiny] { log.withLock { $0 } }

    private init(link: any Transport, framing: LinkFraming) {
        self.link = link
        self.framing = framing
    }

    /// A peer and the host's end of the link.
    static func start(framing: LinkFraming = .byteStream,
                      respond: @escaping @Sendable (_ request: Tiny, _ index: Int) async -> [Tiny] = { _, _ in [] }) -> (TinyPeer, any Transport) {
        let (host, device) = InMemoryTransport.pair(framing: framing)
        let peer = TinyPeer(link: device, framing: framing)
        let t = Task {
            var deframer = TinyDeframer(framing: framing)
            while let chunk = try? await device.receive() {
                deframer.append(chunk)
                while case let .packet(p)? = deframer.next() {
                    let index = peer.log.withLock { log -> Int in log.append(p); return log.count - 1 }
                    for answer in await respond(p, index) { try? await peer.send(answer) }
                }
            }
        }
        peer.task.withLock { $0 = t }
        return (peer, host)
    }

    /// Sends a packet to the host unprompted.
    func send(_ packet: Tiny) async throws {
        try await link.send(framing == .packets ? packet.bytes : [TinyProtocol.marker] + packet.bytes)
    }

    func stop() async {
        task.withLock { $0?.cancel() }
        await link.close()
    }
}

/// A transport that runs `afterSend` once each send is done, before returning to the sender.
final class GatedTransport: Transport {
    let inner: any Transport
    let afterSend: Mutex<(@Sendable () async -> Void)?> = Mutex(nil)
    init(_ inner: any Transport) { self.inner = inner }
    var peerDescription: String { inner.peerDescription }
    var framing: LinkFraming { inner.framing }
    func send(_ bytes: [UInt8]) async throws {
        try await inner.send(bytes)
        if let gate = afterSend.withLock({ $0 }) { await gate() }
    }
    func receive() async throws -> [UInt8] { try await inner.receive() }
    func close() async { await inner.close() }
}

