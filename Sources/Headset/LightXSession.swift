import LightX
import Logging
// Re-exported: the session types (`LightXSession.Options`, `.Statistics`, `.Ticket`, ...) are members of the core.
@_exported import Session
import Transport

/// A LightX conversation with one device over any `Transport`: the request/response core (`RequestSession`) run
/// with the LightX protocol (`LightXProtocol`).
///
/// - Frames requests for the link (SPP on byte streams, raw packets on USB) and decodes what comes back.
/// - Matches replies to requests by param0, first in first out per param0, as the protocol has no sequence
///   numbers (sheet §3.2). Requests with different param0 may be in flight together; requests with the same
///   param0 are sent one after another, and after a retransmission the next request with that param0 waits one
///   timeout so that a late duplicate reply cannot be taken for its answer.
/// - A reply with status Pending keeps the request waiting for the final reply (the reference host dropped it).
/// - Times out and retransmits per `Options`; reports a device that stops answering as `HeadsetError.timeout`.
/// - Delivers device pushes (command 0xC0-0xFF) to every `pushes()` subscriber.
/// - Throws `HeadsetError` (`.timeout`, `.disconnected`, `.deviceNotConnected` once closed, `.writeFailed`) or
///   `CancellationError`.
///
/// Call `close()` when done: the session's reader task keeps the transport open until then.
public typealias LightXSession = RequestSession<LightXProtocol>

extension RequestSession where P == LightXProtocol {
    /// Starts a session on an open transport. The session owns the transport from now on.
    /// - Parameter clock: runs the session's timers (tests pass a clock they advance themselves).
    public init(transport: any Transport, options: Options = Options(), clock: any Clock<Duration> = ContinuousClock(),
                logger: Logger = Logger(label: "tuneup.session")) {
        let style = options.style ?? (transport.framing == .packets ? .usb : .spp)
        self.init(transport: transport, definition: LightXProtocol(style: style), options: options, clock: clock, logger: logger)
    }

    /// The request header style in use.
    public nonisolated var style: RequestStyle { definition.style }
}

/// LightX as a `SessionProtocol`: SPP frames on byte streams and raw packets on packet links, replies matched by
/// param0, pushes by command (0xC0-0xFF), Pending status, packets from foreign modules ignored (§1.6), and
/// `HeadsetError` for every failure.
public struct LightXProtocol: SessionProtocol {
    /// Timing and addressing of requests (`LightXSession.Options`).
    public struct Options: SessionTiming {
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

    /// The request header style in use.
    public let style: RequestStyle

    public init(style: RequestStyle) { self.style = style }

    public func encode(_ request: Packet, for framing: LinkFraming) -> [UInt8] {
        framing == .packets ? RawPacketCodec.encode(request) : SPPFraming.encode(request)
    }

    public func key(of request: Packet) -> UInt32 { request.header.param0 }

    public func command(of request: Packet) -> Command { request.command }

    public func makeDeframer(for framing: LinkFraming) -> Deframer { Deframer(framing: framing) }

    public func classify(_ packet: Packet) -> Incoming<UInt32> {
        let source = packet.header.source
        // The reference host accepts its own id (USB devices echo the request header) or the application (§1.6).
        guard source == .application || source == style.source || source == style.destination else {
            return .ignore(reason: "packet from module \(source)")
        }
        if packet.isPush { return .push }
        return packet.status == .pending ? .pending(packet.header.param0) : .reply(packet.header.param0)
    }

    public func describe(_ command: Command) -> String { commandName(command) }

    public func error(_ failure: SessionFailure<Command>) -> HeadsetError {
        switch failure {
        case let .linkLost(peer, cause?):
            return .transport(cause, while: "link to \(peer) lost")
        case let .linkLost(peer, nil):
            return HeadsetError(.disconnected, "link to \(peer) closed")
        case let .linkClosedWhileSending(command, peer):
            return HeadsetError(.disconnected, "link to \(peer) closed while sending \(commandName(command))")
        case let .writeFailed(command, cause):
            return HeadsetError(.writeFailed, "sending \(commandName(command)) failed: \(cause.message)")
        case let .noAnswer(command, waited, attempts):
            return HeadsetError(
                .timeout,
                "device did not answer \(commandName(command)) within \(waited.shortDescription)" + (attempts > 1 ? " (\(attempts) attempts)" : ""),
                command: command)
        case let .notFinished(command, pendingTimeout):
            return HeadsetError(
                .timeout, "device accepted \(commandName(command)) but did not finish it within \(pendingTimeout.shortDescription)",
                command: command)
        case let .ticketTimedOut(command, accepted):
            return HeadsetError(.timeout, "device did not " + (accepted ? "finish " : "answer ") + commandName(command) + " in time",
                                command: command)
        case let .closed(peer):
            return HeadsetError(.deviceNotConnected, "the session with \(peer) is closed")
        case .notOpen:
            return HeadsetError(.deviceNotConnected, "the session is closed")
        }
    }

    /// LightX packets from a link: `SPPStreamDecoder` on byte streams, one raw packet per message on packet links.
    public struct Deframer: PacketDeframer {
        private let framing: LinkFraming
        private var decoder = SPPStreamDecoder()
        private var message: [UInt8]?

        init(framing: LinkFraming) { self.framing = framing }

        public mutating func append(_ chunk: [UInt8]) {
            switch framing {
            case .byteStream: decoder.append(chunk)
            case .packets: message = chunk
            }
        }

        public mutating func next() -> Deframed<Packet>? {
            guard framing == .packets else { return decoder.next().map { .packet($0) } }
            guard let chunk = message else { return nil }
            message = nil
            do {
                return .packet(try RawPacketCodec.decode(chunk))
            } catch {
                return .rejected(reason: "undecodable packet: \(error)")
            }
        }

        public mutating func abandonPartialFrame() -> Bool {
            framing == .byteStream && decoder.abandonPartialFrame()
        }

        /// What the stream decoder skipped (zero on packet links).
        public var statistics: SPPStreamDecoder.Statistics { decoder.statistics }
    }
}
