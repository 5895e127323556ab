import Failure
/// How the peer on a link delimits protocol packets.
public enum LinkFraming: Sendable, Hashable {
    /// An unstructured byte stream (TCP, serial/tty, pty, RFCOMM, in-memory stream pairs).
    /// Chunks returned by `receive()` have arbitrary boundaries; the protocol layer frames them.
    case byteStream
    /// A message link (USB HID feature reports): every `send` is one whole packet and every
    /// `receive` returns one whole packet.
    case packets
}

/// A bidirectional, connected link to one device or one peer.
///
/// Contract shared by every back end:
/// - `send` delivers all bytes or throws; concurrent `send` calls are serialised, each call's bytes stay contiguous.
/// - `receive` returns the next non-empty chunk (or message), waiting as long as needed; it throws
///   `TransportError.closed` after an orderly end of stream or after `close()`. Only one `receive` may be pending.
/// - Cancelling the task of a pending `send`/`receive` makes it throw `CancellationError` promptly. No received
///   byte is lost by a cancellation: data that arrives afterwards is returned by the next `receive`.
/// - `close()` is idempotent; pending and later calls throw `TransportError.closed`.
/// - No implementation blocks a thread of Swift's cooperative pool: back ends use non-blocking descriptors
///   driven by a dedicated I/O thread, or their own threads.
/// - `send`, `receive` and `close` are `nonisolated(nonsending)`: they run on the caller's executor, so a session
///   actor that sends a request does not hop to the global pool and back for each write. Back ends may declare theirs
///   the same way; one that does not still conforms (the call then hops as any nonisolated async call does).
public protocol Transport: AnyObject, Sendable {
    /// The address this transport is connected to, in `DeviceAddress` syntax where possible (e.g. `tcp:127.0.0.1:4000`).
    var peerDescription: String { get }
    /// How packets are delimited on this link.
    var framing: LinkFraming { get }
    /// Sends all of `bytes`. Throws `TransportError` (or `CancellationError`).
    nonisolated(nonsending) func send(_ bytes: [UInt8]) async throws
    /// Receives the next chunk or message; never returns an empty array. Throws `TransportError` (or `CancellationError`).
    nonisolated(nonsending) func receive() async throws -> [UInt8]
    /// Closes the link and releases its descriptor. Idempotent.
    nonisolated(nonsending) func close() async
}

/// An error from a transport, with a stable code for programs and a one-line message for people.
public struct TransportError: CodedError, Hashable {
    /// Stable classification of a transport failure.
    public typealias Code = ErrorCodeIn<TransportError>

    /// The failure class.
    public var code: Code
    /// A human-readable, single-line explanation.
    public var message: String
    /// The `errno` value behind the failure, when there was one.
    public var errno: Int32?

    /// Creates an error; `message` should be one line naming what failed and why.
    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// A malformed address or link specification is a usage error; everything else is the link's.
    public var category: FailureCategory { code == .invalidAddress ? .usage : .connection }

}

extension ErrorCodeIn where Domain == TransportError {

    /// The address text (or another link specification, such as `LinkConditions` text) could not be parsed.
    public static var invalidAddress: Self { Self(rawValue: "invalid-address") }
    /// The named device, file or host does not exist.
    public static var notFound: Self { Self(rawValue: "not-found") }
    /// The peer refused the connection.
    public static var connectionRefused: Self { Self(rawValue: "connection-refused") }
    /// The operating system denied access (permissions).
    public static var permissionDenied: Self { Self(rawValue: "permission-denied") }
    /// The device is held by another process.
    public static var busy: Self { Self(rawValue: "busy") }
    /// Opening or connecting did not finish in time.
    public static var timedOut: Self { Self(rawValue: "timed-out") }
    /// The link was closed locally or ended by the peer.
    public static var closed: Self { Self(rawValue: "closed") }
    /// This kind of link is not available on this host or in this build.
    public static var unsupported: Self { Self(rawValue: "unsupported") }
    /// Any other operating-system error.
    public static var io: Self { Self(rawValue: "io") }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] { [.invalidAddress, .notFound, .connectionRefused, .permissionDenied, .busy, .timedOut, .closed, .unsupported, .io] }
}
