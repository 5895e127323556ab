/// One datagram a player sent or received (audio to a speaker, a clock-sync request or its reply), for a capture
/// (`tuneup speaker play --capture`, docs/capture.md): what a `SpeakerDatagramTap` is given. Called as the datagram
/// goes, on the sending or receiving task: it must return at once (a capture queues its block).
public struct SpeakerDatagram: Sendable {
    public enum Kind: Sendable, Hashable {
        /// An audio datagram (`AudioPacket`), controller → speaker.
        case audio
        /// A clock-sync datagram (`ClockDatagram`): the request out, the reply in.
        case clock
    }

    public var kind: Kind
    /// The speaker's host and port.
    public var host: String
    public var port: UInt16
    /// Sent by the player (false: received).
    public var outbound: Bool
    public var bytes: [UInt8]

    public init(kind: Kind, host: String, port: UInt16, outbound: Bool, bytes: [UInt8]) {
        self.kind = kind
        self.host = host
        self.port = port
        self.outbound = outbound
        self.bytes = bytes
    }
}

/// Sees every datagram a player sends or receives (see `SpeakerDatagram`).
public typealias SpeakerDatagramTap = @Sendable (SpeakerDatagram) -> Void
