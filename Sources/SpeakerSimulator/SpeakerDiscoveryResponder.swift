import Speaker
import Synchronization
import Transport

/// The speaker side of discovery (docs/speaker-protocol.md §8): a UDP socket on the discovery port that answers each
/// query to its sender, once for each speaker it stands for. One responder answers for all the speakers of a process
/// (`SpeakerSimulation`). Responders of several processes on one host (two `sim speaker`s, a `speaker receive`) share
/// the port (`SO_REUSEPORT`): broadcast and multicast queries reach every one of them, but a query sent to the port
/// directly (`--discovery-target HOST:PORT`) reaches only one. So a responder listening on every interface passes each
/// query it gets on to the others of its host (`DiscoveryRelay`: a datagram to a multicast group joined on the
/// loopback, which never leaves the host), and each answers the query's sender; a query is answered once by each
/// responder however it came. Answers come from `answers`, so a rename shows at the next query. Waits on the I/O
/// reactor.
public final class SpeakerDiscoveryResponder: Sendable {
    private let socket: UDPSocket
    private let task: Task<Void, Never>
    private let tap = TapHolder()

    /// Shows `tap` every discovery datagram from now on: each query received and each answer sent (a capture of the
    /// speaker's side, docs/capture.md); the relays between the host's responders are not shown.
    public func setDatagramTap(_ tap: SpeakerSideDatagramTap?) { self.tap.tap.withLock { $0 = tap } }

    /// The port the responder listens on (the protocol's 45454, or the free port picked for port 0).
    public var port: UInt16 { socket.localPort }

    /// Starts answering on `host:port` (joining the multicast group and the host's relay group where the host
    /// allows: on "0.0.0.0"), one answer per element of `answers(queryId)`.
    /// - Throws: `TransportError` when the socket cannot be bound.
    public init(host: String = "0.0.0.0", port: UInt16 = DiscoveryMessage.port,
                answers: @escaping @Sendable (UInt32) -> [DiscoveryAnswer]) throws(TransportError) {
        let socket = try UDPSocket.bind(host: host, port: port, reuseAddress: true)
        var relays = false
        if host == "0.0.0.0" {
            socket.joinMulticastGroup(DiscoveryMessage.multicastGroup)
            relays = socket.joinMulticastGroup(DiscoveryRelay.group, interface: "127.0.0.1") && socket.setMulticastInterface("127.0.0.1")
        }
        self.socket = socket
        let relayPort = socket.localPort
        let tap = self.tap
        task = Task {
            var answered = RecentQueries()
            while true {
                let datagram: UDPDatagram
                do { datagram = try await socket.receive() } catch { return }
                let to: (host: String, port: UInt16), queryId: UInt32
                if let relayed = DiscoveryRelay(decoding: datagram.bytes) {
                    // Only from this host (the group is joined on the loopback; nothing from outside comes from 127/8).
                    guard datagram.host.hasPrefix("127.") else { continue }
                    (to, queryId) = ((relayed.host, relayed.port), relayed.queryId)
                } else {
                    tap.show(.discovery, host: datagram.host, port: datagram.port, outbound: false, datagram.bytes)
                    guard case let .query(id)? = try? DiscoveryMessage.decode(datagram.bytes) else { continue }
                    (to, queryId) = ((datagram.host, datagram.port), id)
                    if relays {
                        let relay = DiscoveryRelay(queryId: id, host: datagram.host, port: datagram.port).encode()
                        try? await socket.send(relay, toHost: DiscoveryRelay.group, port: relayPort)
                    }
                }
                guard answered.insert("\(to.host) \(to.port) \(queryId)") else { continue }
                for a in answers(queryId) {
                    let answer = DiscoveryMessage.answer(a).encode()
                    tap.show(.discovery, host: to.host, port: to.port, outbound: true, answer)
                    try? await socket.send(answer, toHost: to.host, port: to.port)
                }
            }
        }
    }

    /// Answers `speaker`'s identity.
    public convenience init(for speaker: SimulatedSpeaker, host: String = "0.0.0.0", port: UInt16 = DiscoveryMessage.port) throws(TransportError) {
        try self.init(for: [speaker], host: host, port: port)
    }

    /// Answers each of `speakers`' identities (those switched on), in order.
    public convenience init(for speakers: [SimulatedSpeaker], host: String = "0.0.0.0", port: UInt16 = DiscoveryMessage.port) throws(TransportError) {
        let held = speakers.map { WeakSpeaker(speaker: $0) }
        try self.init(host: host, port: port) { queryId in held.compactMap { $0.speaker?.discoveryAnswer(to: queryId) } }
    }

    /// Stops answering (the speaker vanishes from discovery). Idempotent.
    public func stop() async {
        task.cancel()
        socket.close()
        await task.value
    }
}

/// A responder's tap, shared with its receiving task.
private final class TapHolder: Sendable {
    let tap = Mutex<SpeakerSideDatagramTap?>(nil)

    /// Shows the datagram to the tap, if any.
    func show(_ kind: SpeakerSideDatagram.Kind, host: String, port: UInt16, outbound: Bool, _ bytes: [UInt8]) {
        guard let tap = tap.withLock({ $0 }) else { return }
        tap(SpeakerSideDatagram(kind: kind, peer: SpeakerSideDatagram.peer(host: host, port: port), outbound: outbound, bytes: bytes))
    }
}

private struct WeakSpeaker: Sendable {
    weak var speaker: SimulatedSpeaker?
}

/// A discovery query passed on to the other responders of the host (docs/speaker-protocol.md §8): who asked (the
/// query's sender) and its id, sent to `group` on the loopback at the discovery port. Tuneup's own, never on the
/// network: `"TR" (54 52) | version 01 | query id u32 | port u16 | host length u8 | host (ASCII) | CRC-32 u32`.
public struct DiscoveryRelay: Sendable, Hashable {
    /// The multicast group the responders of a host join on its loopback.
    public static let group = "239.255.84.84"
    static let magic: [UInt8] = [0x54, 0x52]

    public var queryId: UInt32
    public var host: String
    public var port: UInt16

    public init(queryId: UInt32, host: String, port: UInt16) {
        (self.queryId, self.host, self.port) = (queryId, host, port)
    }

    public func encode() -> [UInt8] {
        let text = Array(host.utf8.prefix(255))
        var bytes = Self.magic + [1]
        bytes += [UInt8(queryId >> 24), UInt8(queryId >> 16 & 0xff), UInt8(queryId >> 8 & 0xff), UInt8(queryId & 0xff)]
        bytes += [UInt8(port >> 8), UInt8(port & 0xff), UInt8(text.count)] + text
        let crc = CRC32.checksum(bytes)
        return bytes + [UInt8(crc >> 24), UInt8(crc >> 16 & 0xff), UInt8(crc >> 8 & 0xff), UInt8(crc & 0xff)]
    }

    /// Nil for anything that is not exactly a relay datagram.
    public init?(decoding bytes: [UInt8]) {
        guard bytes.count >= 14, bytes.count <= 269, Array(bytes[0..<2]) == Self.magic, bytes[2] == 1 else { return nil }
        let length = Int(bytes[9])
        guard bytes.count == 14 + length else { return nil }
        let body = bytes[..<(10 + length)]
        let crc = bytes[(10 + length)...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard CRC32.checksum(body) == crc, let host = String(validating: bytes[10..<(10 + length)], as: UTF8.self), !host.isEmpty else {
            return nil
        }
        queryId = bytes[3..<7].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        port = UInt16(bytes[7]) << 8 | UInt16(bytes[8])
        self.host = host
    }
}

/// The queries a responder answered lately (their sender and id), so one that reaches it twice (directly and passed
/// on by another responder of the host) is answered once. Bounded: the oldest are forgotten.
struct RecentQueries {
    private var keys: Set<String> = []
    private var order: [String] = []
    let capacity = 256

    /// False when `key` was answered lately.
    mutating func insert(_ key: String) -> Bool {
        guard keys.insert(key).inserted else { return false }
        order.append(key)
        if order.count > capacity { keys.remove(order.removeFirst()) }
        return true
    }
}
