import LightX
import Support
import Transport

/// Decode throughput of a long stream of mixed SPP frames against a plain byte-sum pass over the same bytes.
struct CodecBenchmark {
    struct Result {
        var streamBytes: Int
        var frames: Int
        /// Best time of the plain byte-sum pass (the checksum alone).
        var sumSeconds: Double
        /// Best time of `forEachFrame`: validated headers and borrowed buffer views.
        var viewSeconds: Double
        /// Best time of `next()`: owned `Packet` values sharing the chunk.
        var packetSeconds: Double
        func rate(_ seconds: Double) -> Double { Double(streamBytes) / seconds }
        var viewRatio: Double { sumSeconds / viewSeconds }
        var packetRatio: Double { sumSeconds / packetSeconds }
    }

    var megabytes: Int
    var chunkSize: Int
    var rounds: Int

    /// A realistic mix: plain reads (275 B), flash-block writes (275 B), u32 writes (23 B), short replies (19-35 B).
    static func makeStream(bytes target: Int) -> (stream: [UInt8], frames: Int) {
        var rng = SeededRandom(seed: 42)
        var out: [UInt8] = []
        out.reserveCapacity(target + 300)
        var frames = 0
        let block = (0..<256).map { _ in UInt8.random(in: 0...255, using: &rng) }
        while out.count < target {
            let packet: Packet
            switch rng.next() % 8 {
            case 0, 1: packet = AppSettings.batteryLevel.readRequest()
            case 2, 3, 4: packet = try! BootRequests.writeBlock(.application, offset: UInt32(rng.next() % 2048) * 256, data: block)
            case 5: packet = try! AppSettings.ancEnabled.writeRequest(rng.next() & 1 == 0)
            case 6: packet = try! Packet.reply(to: AppSettings.batteryLevel.readRequest(), buffer: [87, 0, 0, 0])
            default: packet = try! Packet.reply(to: AppSettings.ancEnabled.readRequest())
            }
            SPPFraming.encode(packet, into: &out)
            frames += 1
        }
        return (out, frames)
    }

    func run() -> Result {
        let (stream, frames) = Self.makeStream(bytes: megabytes << 20)
        var best = (sum: Double.infinity, view: Double.infinity, packet: Double.infinity)
        var sink = 0
        let clock = ContinuousClock()
        for _ in 0..<rounds {
            // The checksum alone: a plain wrapping byte sum over the same bytes.
            var t = clock.now
            var sum: UInt8 = 0
            stream.withUnsafeBufferPointer { p in for b in p { sum &+= b } }
            sink &+= Int(sum)
            best.sum = min(best.sum, (clock.now - t).seconds)

            // The decoder fed in transport-sized chunks, handing out header + buffer views.
            t = clock.now
            var decoder = SPPStreamDecoder()
            var count = 0
            var i = 0
            while i < stream.count {
                decoder.append(stream[i..<min(stream.count, i + chunkSize)])
                decoder.forEachFrame { header, buffer in
                    count += 1
                    sink &+= Int(header.param1) &+ buffer.count
                }
                i += chunkSize
            }
            best.view = min(best.view, (clock.now - t).seconds)
            precondition(count == frames && decoder.statistics.discardedBytes == 0, "decoded \(count) of \(frames) frames")

            // The same, producing owned Packet values (what a session consumes).
            t = clock.now
            decoder = SPPStreamDecoder()
            count = 0
            i = 0
            while i < stream.count {
                decoder.append(stream[i..<min(stream.count, i + chunkSize)])
                while let p = decoder.next() {
                    count += 1
                    sink &+= p.buffer.count
                }
                i += chunkSize
            }
            best.packet = min(best.packet, (clock.now - t).seconds)
            precondition(count == frames, "decoded \(count) of \(frames) frames")
        }
        if sink == 42 { print("") }
        return Result(streamBytes: stream.count, frames: frames, sumSeconds: best.sum, viewSeconds: best.view, packetSeconds: best.packet)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
