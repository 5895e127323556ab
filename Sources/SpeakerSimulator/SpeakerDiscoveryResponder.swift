import Speaker
import Transport

/// The speaker side of discovery (docs/speaker-protocol.md §8): a UDP socket on the discovery port that answers each
/// query to its sender, once for each speaker it stands for. One responder answers for all the speakers of a process
/// (`SpeakerSimulation`): a query sent to the port directly (`--discovery-target HOST:PORT`) reaches only one of
/// the sockets bound to it, so one socket per speaker would let one speaker of several answer. The port is still
/// shared with other processes (`SO_REUSEPORT`): broadcast and multicast queries reach every one of them.
/// Answers come from `answers`, so a rename shows at the next query. Waits on the I/O reactor.
public final class SpeakerDiscoveryResponder: Sendable {
    private let socket: UDPSocket
    private let task: Task<Void, Never>

    /// The port the responder listens on (the protocol's 45454, or the free port picked for port 0).
    public var port: UInt16 { socket.localPort }

    /// Starts answering on `host:port` (joining the multicast group where the host allows), one answer per element
    /// of `answers(queryId)`.
    /// - Throws: `TransportError` when the socket cannot be bound.
    public init(host: String = "0.0.0.0", port: UInt16 = DiscoveryMessage.port,
                answers: @escaping @Sendable (UInt32) -> [DiscoveryAnswer]) throws(TransportError) {
        let socket = try UDPSocket.bind(host: host, port: port, reuseAddress: true)
        if host == "0.0.0.0" { socket.joinMulticastGroup(DiscoveryMessage.multicastGroup) }
        self.socket = socket
        task = Task {
            while true {
                let datagram: UDPDatagram
                do { datagram = try await socket.receive() } catch { return }
                guard case let .query(queryId)? = try? DiscoveryMessage.decode(datagram.bytes) else { continue }
                for a in answers(queryId) {
                    try? await socket.send(DiscoveryMessage.answer(a).encode(), toHost: datagram.host, port: datagram.port)
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

private struct WeakSpeaker: Sendable {
    weak var speaker: SimulatedSpeaker?
}
