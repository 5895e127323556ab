import Testing
@testable import LightX

@Suite struct StreamDecoderTests {
    /// Decodes `stream` fed in chunks of the given sizes (cycled), through `next()` or, with `views`, through
    /// `forEachFrame`; both must give the same packets.
    func decode(_ stream: [UInt8], chunks: [Int], views: Bool = false) -> (packets: [Packet], decoder: SPPStreamDecoder) {
        var decoder = SPPStreamDecoder()
        var packets: [Packet] = []
        var i = 0
        var k = 0
        while i < stream.count {
            let n = chunks.isEmpty ? stream.count : chunks[k % chunks.count]
            decoder.append(Array(stream[i..<min(stream.count, i + n)]))
            if views {
                decoder.forEachFrame { header, buffer in
                    var copy: [UInt8] = []
                    for j in buffer.indices { copy.append(buffer[j]) }
                    packets.append(try! Packet(header: header, buffer: copy))
                }
            } else {
                packets += decoder.decodeAll()
            }
            #expect(decoder.bufferedByteCount < SPPFraming.maxFrameLength)
            i += n
            k += 1
        }
        return (packets, decoder)
    }

    @Test func roundTripRandomPackets() async throws {
        var rng = TestRandom(seed: 1)
        var bufferless = 0
        for _ in 0..<2000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            let p = randomPacket(&rng)
            if !p.header.hasBuffer && !p.buffer.isEmpty { bufferless += 1 }
            let frame = SPPFraming.encode(p)
            #expect(frame.count == p.buffer.count + 19)
            #expect(frame.reduce(UInt8(0), &+) == 0, "all frame bytes sum to zero")
            #expect(try SPPFraming.decodeFrame(frame) == p)
            // Raw messages carry no length: without the buffer flag the decoder keeps no buffer bytes, so the round
            // trip keeps the header exactly (param1 included) and drops the buffer; with it, the packet comes back whole.
            let raw = RawPacketCodec.encode(p)
            #expect(raw.count == Header.size + p.buffer.count)
            let expected = p.header.hasBuffer ? p : try Packet(header: p.header, buffer: [])
            #expect(try RawPacketCodec.decode(raw) == expected, "\(p)")
        }
        #expect(bufferless > 500, "both kinds of packet are exercised")
    }

    @Test func byteByByteAllAtOnceAndRandomChunksAgree() {
        let packets = realisticPackets(count: 500, seed: 2)
        let stream = packets.flatMap(SPPFraming.encode)
        let whole = decode(stream, chunks: [])
        let single = decode(stream, chunks: [1])
        var rng = TestRandom(seed: 9)
        let random = decode(stream, chunks: (0..<97).map { _ in Int.random(in: 1...700, using: &rng) })
        let perFrame = decode(stream, chunks: packets.map { $0.buffer.count + 19 })
        let viewsRandom = decode(stream, chunks: (0..<31).map { _ in Int.random(in: 1...600, using: &rng) }, views: true)
        let viewsSingle = decode(stream, chunks: [1], views: true)
        #expect(viewsRandom.packets == packets)
        #expect(viewsSingle.packets == packets)
        #expect(whole.packets == packets)
        #expect(single.packets == packets)
        #expect(random.packets == packets)
        #expect(perFrame.packets == packets)
        for d in [whole.decoder, single.decoder, random.decoder, perFrame.decoder] {
            #expect(d.statistics.frames == packets.count)
            #expect(d.statistics.discardedBytes == 0)
            #expect(d.bufferedByteCount == 0)
        }
    }

    @Test func appendingSeveralChunksBeforeDrainingLosesNothing() {
        let packets = realisticPackets(count: 300, seed: 21)
        let stream = packets.flatMap(SPPFraming.encode)
        var rng = TestRandom(seed: 22)
        var d = SPPStreamDecoder()
        var out: [Packet] = []
        var i = 0
        while i < stream.count {
            for _ in 0..<Int.random(in: 1...5, using: &rng) where i < stream.count {
                let n = Int.random(in: 1...400, using: &rng)
                d.append(Array(stream[i..<min(stream.count, i + n)]))
                i += n
            }
            if Bool.random(using: &rng) { if let p = d.next() { out.append(p) } } else { out += d.decodeAll() }
        }
        out += d.decodeAll()
        #expect(out == packets)
        #expect(d.bufferedByteCount == 0)
    }

    @Test func decodedBuffersStayValidAfterMoreInput() {
        let packets = realisticPackets(count: 40, seed: 23)
        var d = SPPStreamDecoder()
        var kept: [Packet] = []
        for p in packets {
            var frame = SPPFraming.encode(p)
            d.append(frame)
            kept += d.decodeAll()
            frame.withUnsafeMutableBufferPointer { $0.initialize(repeating: 0xEE) }  // the caller reuses its buffer
        }
        #expect(kept == packets)
    }

    @Test func garbageBetweenFramesIsSkippedAndCounted() {
        let packets = realisticPackets(count: 200, seed: 4)
        var rng = TestRandom(seed: 5)
        var stream: [UInt8] = []
        var garbage = 0
        for p in packets {
            // Garbage including lone 0xFF and partial magic, but never a full valid frame start.
            let junk: [UInt8] = (0..<Int.random(in: 0...40, using: &rng)).map { _ in
                [0xFF, 0x5A, 0x00, UInt8.random(in: 1...0xFE, using: &rng)][Int.random(in: 0..<4, using: &rng)]
            } + [0xFF, 0x5A, 0x00, 0x01]
            garbage += junk.count
            stream += junk + SPPFraming.encode(p)
        }
        let result = decode(stream, chunks: [13, 1, 300, 64])
        #expect(result.packets == packets)
        #expect(result.decoder.statistics.discardedBytes == garbage)
        let viewed = decode(stream, chunks: [700, 3, 90], views: true)
        #expect(viewed.packets == packets)
        #expect(viewed.decoder.statistics.discardedBytes == garbage)
    }

    @Test func everySingleByteCorruptionOfBufferOrChecksumDropsOnlyThatFrame() {
        let packets = realisticPackets(count: 60, seed: 6)
        let frames = packets.map(SPPFraming.encode)
        var rng = TestRandom(seed: 7)
        for victim in 0..<frames.count {
            var corrupted = frames
            // Corrupt one byte after the length field (header, buffer or checksum).
            let at = Int.random(in: 6..<corrupted[victim].count, using: &rng)
            corrupted[victim][at] ^= UInt8.random(in: 1...255, using: &rng)
            let result = decode(corrupted.flatMap { $0 }, chunks: [41])
            var expected = packets
            expected.remove(at: victim)
            #expect(result.packets == expected, "victim \(victim) byte \(at)")
            #expect(result.decoder.statistics.checksumErrors >= 1)
        }
    }

    @Test func badLengthsAreRejected() {
        let good = SPPFraming.encode(AppSettings.batteryLevel.readRequest())
        for length in [0, 1, 18, 276, 0xFFFF] {
            var bad = good
            bad[4] = UInt8(length >> 8)
            bad[5] = UInt8(length & 0xFF)
            let result = decode(bad + good, chunks: [])
            #expect(result.packets.count == 1, "length \(length)")
            #expect(result.decoder.statistics.lengthErrors >= 1)
        }
    }

    @Test func partialFrameWaitsThenCompletes() {
        let frame = SPPFraming.encode(try! AppSettings.ancEnabled.writeRequest(true))
        var d = SPPStreamDecoder()
        d.append(frame.prefix(22))
        let early = d.next()
        #expect(early == nil)
        #expect(d.bufferedByteCount == 22)
        d.append(frame.suffix(1))
        let complete = d.next()
        #expect(complete != nil)
    }

    @Test func abandonPartialFrameFindsFramesBehindABogusLength() {
        let good = SPPFraming.encode(try! AppSettings.ancEnabled.writeRequest(true))
        // A start that claims 275 bytes, followed by one complete frame and nothing else.
        let bogus: [UInt8] = [0xFF, 0x5A, 0x00, 0x00, 0x01, 0x13, 0x0F]
        var d = SPPStreamDecoder()
        d.append(bogus + good)
        let waiting = d.next()
        #expect(waiting == nil, "waits for the 275 bytes the bogus header promises")
        let skipped = d.abandonPartialFrame()
        #expect(skipped)
        let found = d.next()
        #expect(found == (try! SPPFraming.decodeFrame(good)))
        #expect(d.statistics.discardedBytes == bogus.count)
    }

    @Test func randomInputNeverTrapsAndStaysBounded() async {
        var rng = TestRandom(seed: 11)
        var d = SPPStreamDecoder()
        let valid = realisticPackets(count: 50, seed: 12).map(SPPFraming.encode)
        var fed = 0
        for _ in 0..<5000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            var chunk: [UInt8]
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: chunk = (0..<Int.random(in: 0...300, using: &rng)).map { _ in .random(in: 0...255, using: &rng) }
            case 1: chunk = [0xFF, 0x5A, 0, 0, UInt8.random(in: 0...1, using: &rng), .random(in: 0...255, using: &rng)]
            case 2: chunk = valid[Int.random(in: 0..<valid.count, using: &rng)]
            default:
                let v = valid[Int.random(in: 0..<valid.count, using: &rng)]
                chunk = Array(v.prefix(Int.random(in: 0...v.count, using: &rng)))
            }
            fed += chunk.count
            d.append(chunk)
            _ = d.decodeAll()
            #expect(d.bufferedByteCount < SPPFraming.maxFrameLength)
        }
        let s = d.statistics
        #expect(s.frames > 0)
        #expect(s.discardedBytes + d.bufferedByteCount <= fed)
    }

    @Test func decodeFrameErrorsNameTheCheck() {
        let good = SPPFraming.encode(AppSettings.batteryLevel.readRequest())
        #expect(throws: LightXError(.truncated, "")) { try SPPFraming.decodeFrame(Array(good.prefix(10))) }
        var bad = good
        bad[274] ^= 1
        #expect(throws: LightXError(.malformed, "")) { try SPPFraming.decodeFrame(bad) }
        bad = good
        bad[1] = 0x5B
        #expect(throws: LightXError(.malformed, "")) { try SPPFraming.decodeFrame(bad) }
        #expect(throws: LightXError(.truncated, "")) { try SPPFraming.decodeFrame(Array(good.dropLast())) }
    }
}
