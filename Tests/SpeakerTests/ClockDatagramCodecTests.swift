import Speaker
import TestSupport
import Testing

/// Clock-sync datagrams (version 4, docs/speaker-protocol.md §6.1): strict round trips and refusals.
@Suite struct ClockDatagramCodecTests {
    static func code(_ bytes: [UInt8]) -> SpeakerError.Code? {
        thrownCode { () throws(SpeakerError) in try ClockDatagram.decode(bytes) }
    }

    static let request = ClockDatagram.request(t1: 1_000_000_000)
    static let reply = ClockDatagram.reply(try! ClockSyncReply(t1: 1_000_000_000, t2: 5_000_250_000, t3: 5_000_260_000))

    @Test func requestAndReplyRoundTripAtOneSize() throws {
        for datagram in [Self.request, Self.reply, .request(t1: 0), .request(t1: .max),
                         .reply(try ClockSyncReply(t1: .max, t2: .max, t3: .max))] {
            let bytes = datagram.encode()
            #expect(bytes.count == ClockDatagram.size)
            #expect(Array(bytes.prefix(3)) == [0x54, 0x43, 0x04])
            #expect(try ClockDatagram.decode(bytes) == datagram)
            #expect(ClockDatagram.looksLikeClockDatagram(bytes))
        }
        #expect(Self.request.encode()[3] == 1 && Self.reply.encode()[3] == 2)
        #expect(!ClockDatagram.looksLikeClockDatagram(Examples.audio[0].packet.encode()))
    }

    /// With the CRC fixed up, so that the field checks themselves are reached.
    static func resealed(_ bytes: [UInt8]) -> [UInt8] {
        let body = Array(bytes.dropLast(4))
        let crc = CRC32.checksum(body)
        return body + [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    }

    @Test func truncatedLongAndGarbageDatagramsAreRefused() {
        let good = Self.reply.encode()
        #expect(Self.code([]) == .truncated)
        #expect(Self.code(Array(good.prefix(31))) == .truncated)
        for n in 0..<ClockDatagram.size { #expect(Self.code(Array(good.prefix(n))) == .truncated, "\(n) bytes") }
        #expect(Self.code(good + [0]) == .trailingBytes)
        var corrupt = good
        corrupt[12] ^= 0x01
        #expect(Self.code(corrupt) == .badChecksum)
        var magic = good
        magic[1] = 0x41  // "TA": an audio datagram's magic
        #expect(Self.code(Self.resealed(magic)) == .badMagic)
        var version = good
        version[2] = 3
        #expect(Self.code(Self.resealed(version)) == .unsupportedVersion)
        var type = good
        type[3] = 3
        #expect(Self.code(Self.resealed(type)) == .unknownType)
        // A request carries zeros for t2 and t3; a reply's t3 is not before its t2.
        var request = Self.request.encode()
        request[19] = 1
        #expect(Self.code(Self.resealed(request)) == .valueOutOfRange)
        let backwards = [0x54, 0x43, 0x04, 0x02] + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0, 0, 0, 0, 9]
            + [0, 0, 0, 0, 0, 0, 0, 8] + [0, 0, 0, 0]
        #expect(Self.code(Self.resealed(backwards)) == .valueOutOfRange)
        var rng = TestRandom(seed: 19)
        for _ in 0..<500 {
            let garbage = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(Self.code(garbage) != nil)
        }
    }
}
