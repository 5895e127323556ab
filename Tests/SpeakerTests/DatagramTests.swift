import Testing
import Speaker
import TestSupport

@Suite struct AudioPacketTests {
    static let example = Examples.audio[0].packet

    static func code(_ bytes: [UInt8]) -> SpeakerError.Code? {
        thrownCode { () throws(SpeakerError) in try AudioPacket.decode(bytes) }
    }

    @Test func examplesRoundTrip() throws {
        for (name, packet) in Examples.audio {
            #expect(try AudioPacket.decode(packet.encode()) == packet, "\(name)")
            #expect(try AudioPacket.decode(packet.encode()).encode() == packet.encode(), "\(name)")
        }
        #expect(Self.example.encode().count == AudioPacket.overhead + 8)
        #expect(Self.example.frameCount == 2)
    }

    @Test func framesArePlacedExactly() throws {
        let format = try AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)
        let packet = try AudioPacket(streamId: 1, sequence: 3, firstFrame: 480, presentationTime: 2_000_000_000, format: format,
                                     pcm: [UInt8](repeating: 0, count: 4 * 240))
        #expect(packet.presentationTime(ofFrame: 0) == 2_000_000_000)
        #expect(packet.presentationTime(ofFrame: 240) == 2_005_000_000)
        #expect(packet.presentationTime(ofFrame: 1) == 2_000_020_833)  // 20833.33 ns, rounded down
        #expect(format.nanoseconds(forFrames: 48_000) == 1_000_000_000)
        #expect(format.nanoseconds(forFrames: .max) == .max)
        // In 64 bits (no 128-bit division per frame), the same as frames × 10⁹ / rate rounded down, up to the limit.
        for rate in [8_000, 44_100, 48_000, 96_000, 192_000] as [UInt32] {
            let f = try AudioFormat(sampleRate: rate, channels: 2, sampleFormat: .s16le)
            var rng = SystemRandomNumberGenerator()
            let limit = UInt64.max / 1_000_000_000 * UInt64(rate)  // beyond it the product needs more than 64 bits
            for frames in [0, 1, UInt64(rate) - 1, UInt64(rate), 123_456_789, limit - 1, limit] + (0..<200).map({ _ in UInt64.random(in: 0...limit, using: &rng) }) {
                let (high, low) = frames.multipliedFullWidth(by: 1_000_000_000)
                let exact = high < UInt64(rate) ? UInt64(rate).dividingFullWidth((high, low)).quotient : .max
                #expect(f.nanoseconds(forFrames: frames) == exact, "\(frames) frames at \(rate) Hz")
            }
            #expect(f.nanoseconds(forFrames: .max) == .max)
        }
        #expect(AudioPacket.maxFrames(for: format) == 358)
        let s24 = try AudioFormat(sampleRate: 96_000, channels: 6, sampleFormat: .s24le)
        #expect(s24.bytesPerFrame == 18)
    }

    @Test func randomPacketsRoundTrip() throws {
        var rng = TestRandom(seed: 44)
        for _ in 0..<300 {
            let format = try AudioFormat(sampleRate: UInt32.random(in: AudioFormat.sampleRates, using: &rng),
                                         channels: UInt8.random(in: 1...8, using: &rng),
                                         sampleFormat: SampleFormat.allCases.randomElement(using: &rng)!)
            let frames = Int.random(in: 0...AudioPacket.maxFrames(for: format), using: &rng)
            let pcm = (0..<(frames * format.bytesPerFrame)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let packet = try AudioPacket(streamId: UInt32.random(in: 0...UInt32.max, using: &rng), sequence: UInt32.random(in: 0...UInt32.max, using: &rng),
                                         firstFrame: rng.next(), presentationTime: rng.next(), format: format,
                                         endOfStream: frames == 0 || Bool.random(using: &rng), pcm: pcm)
            let bytes = packet.encode()
            #expect(bytes.count <= AudioPacket.maxDatagramSize)
            #expect(try AudioPacket.decode(bytes) == packet)
        }
    }

    @Test func badPackets() throws {
        let bytes = Self.example.encode()
        for n in 0..<bytes.count { #expect(Self.code(Array(bytes.prefix(n))) != nil, "cut to \(n)") }
        #expect(Self.code(Array(bytes.prefix(10))) == .truncated)
        #expect(Self.code(bytes + [0]) == .badChecksum)
        #expect(Self.code(reframed(bytes) { $0.append(0) }) == .trailingBytes)  // not a whole frame
        #expect(Self.code(reframed(bytes) { $0 += [0, 0, 0, 0] }) == .trailingBytes)  // one frame more than the count says
        #expect(Self.code(reframed(bytes) { $0.removeLast(4) }) == .truncated)  // one frame less
        #expect(Self.code([UInt8](repeating: 0x54, count: 1473)) == .tooLarge)
        #expect(Self.code(reframed(bytes) { $0[1] = 0x53 }) == .badMagic)
        #expect(Self.code(reframed(bytes) { $0[2] = 2 }) == .unsupportedVersion)
        #expect(Self.code(reframed(bytes) { $0[3] = 0x02 }) == .valueOutOfRange)  // undefined flag
        #expect(Self.code(reframed(bytes) { $0[32] = 0 }) == .valueOutOfRange)  // no channels
        #expect(Self.code(reframed(bytes) { $0[33] = 9 }) == .valueOutOfRange)  // sample format
        #expect(Self.code(reframed(bytes) { $0[30] = 0; $0[31] = 0 }) == .valueOutOfRange)  // rate 0 Hz
        var crc = bytes
        crc[20] ^= 0x01
        #expect(Self.code(crc) == .badChecksum)
        let empty = reframed(Examples.audio[1].packet.encode()) { $0[3] = 0 }  // no frames and not the end
        #expect(Self.code(empty) == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in
            try AudioPacket(streamId: 1, sequence: 0, firstFrame: 0, presentationTime: 0, format: .cd, pcm: [1, 2, 3])
        } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in
            try AudioPacket(streamId: 1, sequence: 0, firstFrame: 0, presentationTime: 0, format: .cd, pcm: [UInt8](repeating: 0, count: 1436))
        } == .tooLarge)
    }
}

@Suite struct DiscoveryTests {
    static func code(_ bytes: [UInt8]) -> SpeakerError.Code? {
        thrownCode { () throws(SpeakerError) in try DiscoveryMessage.decode(bytes) }
    }

    @Test func examplesRoundTrip() throws {
        for (name, message) in Examples.discovery {
            #expect(try DiscoveryMessage.decode(message.encode()) == message, "\(name)")
        }
        #expect(Examples.discovery[0].message.encode().count == 12)
    }

    @Test func badDatagrams() throws {
        let answer = Examples.discovery[1].message.encode()
        for n in 0..<answer.count { #expect(Self.code(Array(answer.prefix(n))) != nil, "cut to \(n)") }
        #expect(Self.code(Array(answer.prefix(11))) == .truncated)
        #expect(Self.code(reframed(answer) { $0.removeLast() }) == .truncated)
        #expect(Self.code(reframed(answer) { $0.append(0) }) == .trailingBytes)
        #expect(Self.code(reframed(answer) { $0[0] = 0 }) == .badMagic)
        #expect(Self.code(reframed(answer) { $0[2] = 9 }) == .unsupportedVersion)
        #expect(Self.code(reframed(answer) { $0[3] = 3 }) == .unknownType)
        #expect(Self.code(reframed(answer) { $0[16] = 0; $0[17] = 0 }) == .valueOutOfRange)  // control port 0
        #expect(Self.code(reframed(answer) { $0[20] = 2 }) == .valueOutOfRange)  // versions 2...1
        #expect(Self.code(reframed(answer) { $0[23] = 0xC3 }) == .badText)  // "Adapt1" with a lone lead byte
        var crc = answer
        crc[5] ^= 0x40
        #expect(Self.code(crc) == .badChecksum)
        #expect(Self.code([UInt8](repeating: 0, count: 1025)) == .tooLarge)
        let query = Examples.discovery[0].message.encode()
        #expect(Self.code(reframed(query) { $0.append(1) }) == .trailingBytes)
    }
}
