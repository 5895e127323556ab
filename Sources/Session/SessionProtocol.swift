import Transport

/// What `RequestSession` needs to know about a request/response protocol: how requests travel on a link, how
/// packets are cut out of what the link delivers, which reply answers which request, and how the module's errors
/// look. A value of it is made per session (it may depend on the link, e.g. header fields that differ per framing).
///
/// The protocol has no sequence numbers as far as the core is concerned: a reply answers the oldest outstanding
/// request with the same `Key`, and requests with the same key are sent one after another.
public protocol SessionProtocol: Sendable {
    /// A decoded packet (requests, replies and pushes alike).
    associatedtype Packet: Sendable
    /// What a reply is matched to its request by (LightX: param0).
    associatedtype Key: Hashable & Sendable
    /// What names a request in errors and tickets (LightX: its command).
    associatedtype Command: Hashable & Sendable
    /// Cuts packets out of received chunks.
    associatedtype Deframer: PacketDeframer where Deframer.Packet == Packet
    /// Timing options of a session (`RequestOptions` unless the protocol has more).
    associatedtype Options: SessionTiming
    /// The module's error type, thrown for every failure of the session (besides `CancellationError`).
    associatedtype Failure: Error & Sendable & Hashable

    /// The bytes of `request` as they travel on a link with `framing`.
    func encode(_ request: Packet, for framing: LinkFraming) -> [UInt8]
    /// The key the reply to `request` will carry.
    func key(of request: Packet) -> Key
    /// The name of `request` for tickets and errors.
    func command(of request: Packet) -> Command
    /// A fresh deframer for a link with `framing`.
    func makeDeframer(for framing: LinkFraming) -> Deframer
    /// What an incoming packet is.
    func classify(_ packet: Packet) -> Incoming<Key>
    /// The module's error for a failure of the session.
    func error(_ failure: SessionFailure<Command>) -> Failure
    /// `command` in log lines; defaults to its description.
    func describe(_ command: Command) -> String
}

extension SessionProtocol {
    public func describe(_ command: Command) -> String { String(describing: command) }
}

/// What an incoming packet is, as `SessionProtocol.classify` says.
public enum Incoming<Key: Hashable & Sendable>: Sendable, Hashable {
    /// Unsolicited: delivered to every `pushes()` subscriber.
    case push
    /// The final reply to the oldest outstanding request with this key.
    case reply(Key)
    /// The device accepted the oldest outstanding request with this key and the final reply follows: the request
    /// waits up to the pending timeout and is never retransmitted.
    case pending(Key)
    /// Not for this session (counted in `ignoredPackets`); the reason goes to the debug log.
    case ignore(reason: String)
}

/// Everything that can end a request or the session, for `SessionProtocol.error(_:)` to turn into the module's
/// error (so each module keeps its own codes and messages).
public enum SessionFailure<Command: Hashable & Sendable>: Sendable, Hashable {
    /// The link failed while receiving: `cause` is the transport's error, nil when it ended otherwise.
    case linkLost(peer: String, cause: TransportError?)
    /// The link was closed while `command` was being sent.
    case linkClosedWhileSending(command: Command, peer: String)
    /// Sending `command` failed.
    case writeFailed(command: Command, cause: TransportError)
    /// `request(_:)` got no answer to `command`: `attempts` sends, each waited `waited`.
    case noAnswer(command: Command, waited: Duration, attempts: Int)
    /// The device answered Pending to `command` but sent no final reply within `pendingTimeout`.
    case notFinished(command: Command, pendingTimeout: Duration)
    /// The reply to a submitted request did not come in time (`accepted`: the device had answered Pending).
    case ticketTimedOut(command: Command, accepted: Bool)
    /// `close()` was called: what waiting requests and later calls fail with.
    case closed(peer: String)
    /// A ticket was awaited after its session ended without a recorded reason.
    case notOpen
}

/// The timing every session needs.
public protocol SessionTiming: Sendable {
    /// How long to wait for a reply before retransmitting (or failing).
    var timeout: Duration { get }
    /// How many times a request is sent again after a timeout before it fails.
    var retransmissions: Int { get }
    /// How long to wait for the final reply after the device answered Pending.
    var pendingTimeout: Duration { get }
}

/// Timing of requests, for protocols that need nothing else.
public struct RequestOptions: SessionTiming, Hashable {
    public var timeout: Duration
    public var retransmissions: Int
    public var pendingTimeout: Duration

    public init(timeout: Duration = .seconds(2), retransmissions: Int = 2, pendingTimeout: Duration = .seconds(10)) {
        self.timeout = timeout
        self.retransmissions = retransmissions
        self.pendingTimeout = pendingTimeout
    }
}

/// Cuts packets out of what a link delivers: a value type fed with chunks (a byte stream's arbitrary pieces, or a
/// packet link's whole messages) and drained with `next()`.
public protocol PacketDeframer: Sendable {
    associatedtype Packet: Sendable
    /// Counters of what was skipped (garbage, bad checksums), reported in the session's statistics.
    associatedtype Statistics: Sendable & Hashable

    /// Adds a received chunk.
    mutating func append(_ chunk: [UInt8])
    /// The next packet, `.rejected` for input that was dropped as a whole (counted as an ignored packet), or nil
    /// when more input is needed.
    mutating func next() -> Deframed<Packet>?
    /// Gives up a partial frame the deframer is waiting to complete (its length field may be corrupt) and looks
    /// behind it; true when that may have made packets available. Called when a request times out.
    mutating func abandonPartialFrame() -> Bool
    /// What the deframer skipped so far.
    var statistics: Statistics { get }
}

extension PacketDeframer {
    public mutating func abandonPartialFrame() -> Bool { false }
}

/// One result of a `PacketDeframer`.
public enum Deframed<Packet: Sendable>: Sendable {
    case packet(Packet)
    /// A chunk that held no valid packet, with the reason (for the debug log).
    case rejected(reason: String)
}
