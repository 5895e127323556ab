import Testing
import Speaker
import TestSupport

/// The control deframer gives the same output however the stream is cut (NIO's ByteToMessageDecoderVerifier idea).
@Suite struct DeframerTests {
    static func drain(_ d: inout ControlDeframer) -> [ControlDeframer.Output] {
        var out: [ControlDeframer.Output] = []
        while let o = d.next() { out.append(o) }
        return out
    }

    /// Feeds `chunks` one after another, draining after each.
    static func feed(_ chunks: [[UInt8]]) -> (outputs: [ControlDeframer.Output], deframer: ControlDeframer) {
        var d = ControlDeframer()
        var out: [ControlDeframer.Output] = []
        for chunk in chunks {
            d.append(chunk)
            out += drain(&d)
        }
        return (out, d)
    }

    static let frames = Examples.control.map { $0.packet.encode() }

    @Test func byteByByteAllAtOnceAndFrameByFrameAgree() {
        let stream = Self.frames.flatMap { $0 }
        let all = Self.feed([stream])
        let bytes = Self.feed(stream.map { [$0] })
        let perFrame = Self.feed(Self.frames)
        let expected = Examples.control.map { ControlDeframer.Output.frame($0.packet.frame) }
        #expect(all.outputs == expected)
        #expect(bytes.outputs == expected)
        #expect(perFrame.outputs == expected)
        for d in [all.deframer, bytes.deframer, perFrame.deframer] {
            #expect(d.bufferedByteCount == 0)
            #expect(d.statistics.frames == expected.count && d.statistics.discardedBytes == 0)
        }
    }

    @Test func randomCutsOfHostileStreamsAgree() {
        var rng = TestRandom(seed: 10)
        for round in 0..<200 {
            // Good frames, garbage, corrupted frames and stray magic, in random order.
            var stream: [UInt8] = []
            for _ in 0..<Int.random(in: 1...12, using: &rng) {
                var frame = Self.frames.randomElement(using: &rng)!
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: frame = (0..<Int.random(in: 1...20, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                case 1: frame[Int.random(in: 0..<frame.count, using: &rng)] ^= 0x20
                case 2: frame = [0x54, 0x53, 0x54] + frame
                default: break
                }
                stream += frame
            }
            let whole = Self.feed([stream])
            var chunks: [[UInt8]] = []
            var i = 0
            while i < stream.count {
                let n = Int.random(in: 1...40, using: &rng)
                chunks.append(Array(stream[i..<min(stream.count, i + n)]))
                i += n
            }
            let cut = Self.feed(chunks)
            #expect(cut.outputs == whole.outputs, "round \(round)")
            #expect(cut.deframer.statistics == whole.deframer.statistics, "round \(round)")
            #expect(cut.deframer.bufferedByteCount == whole.deframer.bufferedByteCount, "round \(round)")
            #expect(replaySpeakerInput(stream).problems.isEmpty, "round \(round)")
        }
    }

    @Test func garbageIsSkippedAndCounted() {
        let good = Self.frames[2]
        let result = Self.feed([[0x00, 0x54, 0x00, 0xFF, 0x54] + good])
        #expect(result.outputs == [.frame(Examples.control[2].packet.frame)])
        #expect(result.deframer.statistics.discardedBytes == 5)
    }

    @Test func aCorruptFrameIsRejectedOnceAndTheNextIsFound() {
        var bad = Self.frames[0]
        bad[12] ^= 0x01
        let result = Self.feed([bad + Self.frames[1]])
        guard result.outputs.count == 2, case .rejected(let error) = result.outputs[0] else {
            Issue.record("expected a rejection then a frame, got \(result.outputs)")
            return
        }
        #expect(error.code == .badChecksum)
        #expect(result.outputs[1] == .frame(Examples.control[1].packet.frame))
        #expect(result.deframer.statistics.checksumErrors == 1)
        #expect(result.deframer.statistics.discardedBytes == bad.count)
    }

    @Test func anOversizeLengthIsRejectedAtOnce() {
        let header: [UInt8] = [0x54, 0x53, 0x01, 0x02, 0, 0, 0, 1, 0xFF, 0xFF]
        let result = Self.feed([header, Self.frames[3]])
        #expect(result.outputs.first.map { if case .rejected(let e) = $0 { e.code == .tooLarge } else { false } } == true)
        #expect(result.outputs.last == .frame(Examples.control[3].packet.frame))
        #expect(result.deframer.statistics.lengthErrors == 1)
    }

    @Test func abandoningAPartialFrameFindsTheFrameBehindIt() {
        // A header whose length (4000) swallows the good frame that follows.
        let header: [UInt8] = [0x54, 0x53, 0x01, 0x02, 0, 0, 0, 1, 0x0F, 0xA0]
        var d = ControlDeframer()
        d.append(header + Self.frames[4])
        #expect(Self.drain(&d).isEmpty)
        var found: [ControlDeframer.Output] = []
        while d.abandonPartialFrame() { found += Self.drain(&d) }
        #expect(found == [.frame(Examples.control[4].packet.frame)])
        #expect(d.bufferedByteCount == 0)
        let more = d.abandonPartialFrame()
        #expect(!more)
    }

    @Test func memoryStaysBounded() async {
        var d = ControlDeframer()
        var rng = TestRandom(seed: 3)
        for _ in 0..<2000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            d.append((0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) } + Self.frames[0])
            _ = Self.drain(&d)
            #expect(d.bufferedByteCount <= ControlFrame.maxFrameSize)
        }
        #expect(d.statistics.frames >= 1900)
    }
}
