@_exported import Session
import Transport
import Wearable
import WearableLink

/// A GATT conversation over one of Tuneup's byte-stream links (`GATTFraming`).
public typealias GATTLinkSession = RequestSession<GATTLinkProtocol>

/// The GATT framing as a `SessionProtocol`: requests and responses paired by `GATTKey` (request opcode and handle),
/// notifications are pushes, error responses are replies (the caller turns them into `.refused`).
public struct GATTLinkProtocol: SessionProtocol {
    public typealias Packet = GATTPDU
    public typealias Key = GATTKey
    public typealias Command = GATTKey
    public typealias Options = RequestOptions
    public typealias Failure = WearableSessionError

    public init() {}

    public func encode(_ request: GATTPDU, for framing: LinkFraming) -> [UInt8] { GATTFraming.encode(request) }

    public func key(of request: GATTPDU) -> GATTKey {
        request.key ?? GATTKey(requestOpcode: request.opcode, handle: 0)
    }

    public func command(of request: GATTPDU) -> GATTKey { key(of: request) }

    public func makeDeframer(for framing: LinkFraming) -> Deframer { Deframer() }

    public func classify(_ packet: GATTPDU) -> Incoming<GATTKey> {
        if packet.isRequest { return .ignore(reason: "a request from the device") }
        guard let key = packet.key else { return .push }
        return .reply(key)
    }

    public func error(_ failure: SessionFailure<GATTKey>) -> WearableSessionError {
        switch failure {
        case let .linkLost(peer, cause):
            return WearableSessionError(.disconnected, "link to \(peer) lost" + (cause.map { ": \($0.message)" } ?? ""), category: .connection)
        case let .linkClosedWhileSending(command, peer):
            return WearableSessionError(.disconnected, "link to \(peer) closed while sending the \(command)", category: .connection)
        case let .writeFailed(command, cause):
            return WearableSessionError(.writeFailed, "sending the \(command) failed: \(cause.message)", category: .connection)
        case let .noAnswer(command, waited, attempts):
            return WearableSessionError(.timeout, "the device did not answer the \(command) within \(waited)"
                + (attempts > 1 ? " (\(attempts) attempts)" : ""), category: .connection)
        case let .notFinished(command, _), let .ticketTimedOut(command, _):
            return WearableSessionError(.timeout, "the device did not answer the \(command) in time", category: .connection)
        case let .closed(peer):
            return WearableSessionError(.notOpen, "the session with \(peer) is closed", category: .connection)
        case .notOpen:
            return WearableSessionError(.notOpen, "the session is closed", category: .connection)
        }
    }

    /// `GATTStreamDecoder` as the session's deframer.
    public struct Deframer: PacketDeframer {
        private var decoder = GATTStreamDecoder()

        public mutating func append(_ chunk: [UInt8]) { decoder.append(chunk) }

        public mutating func next() -> Deframed<GATTPDU>? {
            switch decoder.next() {
            case nil: return nil
            case let .pdu(pdu)?: return .packet(pdu)
            case let .rejected(error)?: return .rejected(reason: error.message)
            }
        }

        public mutating func abandonPartialFrame() -> Bool { decoder.abandonPartialFrame() }

        public var statistics: GATTStreamDecoder.Statistics { decoder.statistics }
    }
}
