import Speaker
import Transport

/// The speaker side of discovery (docs/speaker-protocol.md §8): a UDP socket on the discovery port (shared with the
/// host's other speakers: `SO_REUSEPORT`, so broadcast and multicast queries reach every one) that answers each
/// query to its sender. Answers come from `answer`, so a rename shows at the next query. Waits on the I/O reactor.
public final class SpeakerDiscoveryResponder: Sendable {
    private let socket: UDPSocket
    private let task: Task<Void, Never>

    /// The port the responder listens on (the protocol's 45454, or the free port picked for port 0).
    public var port: UInt16 { socket.localPort }

    /// Starts answering on `host:port` (joining the multicast group where the host allows).
    /// - Throws: `TransportError` when the socket cannot be bound.
    public init(host: String = "0.0.0.0", port: UInt16 = DiscoveryMessage.port,
                answer: @escaping @Sendable (UInt32) -> DiscoveryAnswer?) throws(TransportError) {
        let socket = try UDPSocket.bind(host: host, port: port, reuseAddress: true)
        if host == "0.0.0.0" { socket.joinMulticastGroup(DiscoveryMessage.multicastGroup) }
        self.socket = socket
        task = Task {
            while true {
                let datagram: UDPDatagram
                do { datagram = try await socket.receive() } catch { return }
                guard case let .query(queryId)? = try? DiscoveryMessage.decode(datagram.bytes),
                      let a = answer(queryId) else { continue }
                try? await socket.send(DiscoveryMessage.answer(a).encode(), toHost: datagram.host, port: datagram.port)
            }
        }
    }

    /// Answers `speaker`'s identity.
    public convenience init(for speaker: SimulatedSpeaker, host: String = "0.0.0.0", port: UInt16 = DiscoveryMessage.port) throws(TransportError) {
        try self.init(host: host, port: port) { [weak speaker] queryId in speaker?.discoveryAnswer(to: queryId) }
    }

    /// Stops answering (the speaker vanishes from discovery). Idempotent.
    public func stop() async {
        task.cancel()
        socket.close()
        await task.value
    }
}
