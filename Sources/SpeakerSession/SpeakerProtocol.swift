import Session
import Speaker
import Synchronization
import Transport

/// The last `playbackPaused` (version 5) a speaker sent, recorded as the session's reader classifies it — so before
/// any reply or event that came after it is delivered (a resume's reply, another controller's `playbackStateChanged`
/// playing): the player reads it when it resumes (docs/speaker-protocol.md §3.2).
public final class PausePositions: Sendable {
    private let last = Mutex<PausePosition?>(nil)
    public init() {}
    func record(_ position: PausePosition) { last.withLock { $0 = position } }
    /// The last position reported for `streamId`, forgotten once taken (nil: none since it was last taken).
    public func take(of streamId: UInt32) -> PausePosition? {
        last.withLock { l in
            guard let p = l, p.streamId == streamId else { return nil }
            l = nil
            return p
        }
    }
}

/// The speaker control protocol as a `SessionProtocol` (docs/speaker-protocol.md §9): packets are `ControlPacket`s,
/// the reply key is the request id, `accepted` (7e) is Pending, events are pushes, and a request from the speaker is
/// ignored. Failures are `SpeakerSessionError`s.
public struct SpeakerProtocol: SessionProtocol {
    public typealias Packet = ControlPacket
    public typealias Key = UInt32
    public typealias Command = UInt8
    public typealias Options = RequestOptions

    /// Where `playbackPaused` events are recorded (nil: not recorded).
    public let pausePositions: PausePositions?

    public init(pausePositions: PausePositions? = nil) { self.pausePositions = pausePositions }

    public func encode(_ request: ControlPacket, for framing: LinkFraming) -> [UInt8] { request.encode() }
    public func key(of request: ControlPacket) -> UInt32 { request.requestId }
    public func command(of request: ControlPacket) -> UInt8 { request.message.type }
    public func makeDeframer(for framing: LinkFraming) -> Deframer { Deframer() }

    public func classify(_ packet: ControlPacket) -> Incoming<UInt32> {
        if case let .playbackPaused(p) = packet.message { pausePositions?.record(p) }
        return switch packet.kind {
        case .reply: .reply(packet.requestId)
        case .accepted: .pending(packet.requestId)
        case .event: .push
        case .request: .ignore(reason: "a request from the speaker")
        }
    }

    public func describe(_ command: UInt8) -> String { Self.name(command) }

    /// A request type's name ("setVolume"), or its hex.
    static func name(_ type: UInt8) -> String {
        guard let request = RequestType(rawValue: type) else { return "request 0x" + String(type, radix: 16) }
        return String(describing: request)
    }

    public func error(_ failure: SessionFailure<UInt8>) -> SpeakerSessionError {
        switch failure {
        case let .linkLost(peer, cause?):
            return SpeakerSessionError(.disconnected, "link to speaker \(peer) lost: \(cause.message)")
        case let .linkLost(peer, nil):
            return SpeakerSessionError(.disconnected, "link to speaker \(peer) closed")
        case let .linkClosedWhileSending(command, peer):
            return SpeakerSessionError(.disconnected, "link to speaker \(peer) closed while sending \(Self.name(command))")
        case let .writeFailed(command, cause):
            return SpeakerSessionError(.disconnected, "sending \(Self.name(command)) failed: \(cause.message)")
        case let .noAnswer(command, waited, attempts):
            return SpeakerSessionError(.timeout, "speaker did not answer \(Self.name(command)) within \(waited.shortDescription)"
                + (attempts > 1 ? " (\(attempts) attempts)" : ""))
        case let .notFinished(command, pendingTimeout):
            return SpeakerSessionError(.timeout, "speaker accepted \(Self.name(command)) but did not finish it within \(pendingTimeout.shortDescription)")
        case let .ticketTimedOut(command, accepted):
            return SpeakerSessionError(.timeout, "speaker did not \(accepted ? "finish" : "answer") \(Self.name(command)) in time")
        case let .closed(peer):
            return SpeakerSessionError(.notConnected, "the session with speaker \(peer) is closed")
        case .notOpen:
            return SpeakerSessionError(.notConnected, "the speaker session is closed")
        }
    }

    /// `ControlDeframer`, with each frame decoded into a `ControlPacket` (a frame that does not decode is a rejection).
    public struct Deframer: PacketDeframer {
        private var inner = ControlDeframer()

        public mutating func append(_ chunk: [UInt8]) { inner.append(chunk) }

        public mutating func next() -> Deframed<ControlPacket>? {
            guard let output = inner.next() else { return nil }
            switch output {
            case let .frame(frame):
                do {
                    return .packet(try ControlPacket(frame: frame))
                } catch {
                    return .rejected(reason: "undecodable control frame: \(error.message)")
                }
            case let .rejected(error):
                return .rejected(reason: error.message)
            }
        }

        public mutating func abandonPartialFrame() -> Bool { inner.abandonPartialFrame() }
        public var statistics: ControlDeframer.Statistics { inner.statistics }
    }
}
