import LightX
import Transport

/// Turns what one host link delivers into requests: SPP frames on a `.byteStream` link (garbage and bad frames
/// skipped), one raw LightX packet per message on a `.packets` link (messages that do not decode skipped).
struct RequestDecoder {
    let framing: LinkFraming
    private var stream = SPPStreamDecoder()
    private var packet: Packet?
    private var undecodable = 0

    init(framing: LinkFraming) {
        self.framing = framing
    }

    /// Appends one received chunk (on a packet link: one message). Returns false when it was a message that does not
    /// decode (skipped).
    mutating func append(_ chunk: [UInt8]) -> Bool {
        switch framing {
        case .byteStream:
            stream.append(chunk)
            return true
        case .packets:
            packet = try? RawPacketCodec.decode(chunk)
            if packet == nil { undecodable += 1 }
            return packet != nil
        }
    }

    /// The next complete request from what was appended, if any.
    mutating func next() -> Packet? {
        switch framing {
        case .byteStream: return stream.next()
        case .packets: return packet.take()
        }
    }

    /// For the log when the link ends: what was decoded and skipped.
    var summary: String {
        switch framing {
        case .byteStream:
            let stats = stream.statistics
            return "\(stats.frames) frames, \(stats.discardedBytes) bytes skipped"
        case .packets:
            return "\(undecodable) packets skipped"
        }
    }
}
