/// One UDP datagram a speaker received or sent — audio, clock sync, discovery — for a capture of the speaker's side
/// (`--capture` on `tuneup sim speaker` and `tuneup speaker receive`, docs/capture.md): what a
/// `SpeakerSideDatagramTap` is given. (The controller's side has its own, `SpeakerDatagram` in SpeakerSession.)
public struct SpeakerSideDatagram: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// An audio datagram (`AudioPacket`), received on the speaker's audio port.
        case audio
        /// A clock-sync datagram (`ClockDatagram`): the request in, the reply out.
        case clock
        /// A discovery datagram (`DiscoveryMessage`): the query in, the answers out.
        case discovery
    }

    public var kind: Kind
    /// The other end, `udp:HOST:PORT`: the controller's socket (for audio read without its sender, the speaker's own
    /// audio address).
    public var peer: String
    /// Sent by the speaker (false: received).
    public var outbound: Bool
    public var bytes: [UInt8]

    public init(kind: Kind, peer: String, outbound: Bool, bytes: [UInt8]) {
        self.kind = kind
        self.peer = peer
        self.outbound = outbound
        self.bytes = bytes
    }

    /// `udp:HOST:PORT`, an IPv6 host in brackets.
    public static func peer(host: String, port: UInt16) -> String {
        host.contains(":") ? "udp:[\(host)]:\(port)" : "udp:\(host):\(port)"
    }
}

/// Sees every datagram a speaker sends or receives (see `SpeakerSideDatagram`). Called as the datagram goes, on the
/// receiving task or the I/O reactor's thread: it must return at once (a capture queues its block).
public typealias SpeakerSideDatagramTap = @Sendable (SpeakerSideDatagram) -> Void
