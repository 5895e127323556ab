// The checks the LightX stream-decoder fuzzer makes on every input, shared by the fuzzer (tools/fuzz/run.sh compiles
// this file together with Sources/LightX and tools/fuzz/FuzzStreamDecoder.swift) and by FuzzRegressionTests, which
// replays every kept fuzzer input through it on a normal `swift test`. In the fuzzer build LightX is not a module.
#if canImport(LightX)
import LightX
#endif

/// What replaying one input through `SPPStreamDecoder` gave, and every invariant it broke.
struct DecoderReplay {
    /// The packets decoded by `next()`.
    var packets: [Packet] = []
    /// The decoder fed through `next()`, after the whole input (for further checks such as recovery).
    var decoder = SPPStreamDecoder()
    /// Broken invariants, in words; empty when the decoder behaved.
    var problems: [String] = []
}

/// Replays `bytes` as the fuzzer does: cut into chunks of `first byte % 64 + 1` bytes, fed through both decoder paths
/// (owned packets with `next()`, borrowed views with `forEachFrame`), checking that after each chunk fewer than one
/// maximal frame stays buffered, that both paths decode the same frames with the same statistics, that every byte is
/// a decoded frame, discarded or still buffered, and that every decoded frame re-encodes to the same packet.
/// A trap inside the decoder is not caught: it ends the run, which is the failure.
func replayThroughDecoder(_ bytes: [UInt8]) -> DecoderReplay {
    var result = DecoderReplay()
    let chunkSize = Int(bytes.first ?? 1) % 64 + 1
    var viewed = SPPStreamDecoder()
    var views: [Packet] = []
    var i = 0
    while i < bytes.count {
        let chunk = Array(bytes[i..<min(bytes.count, i + chunkSize)])
        result.decoder.append(chunk)
        while let p = result.decoder.next() { result.packets.append(p) }
        viewed.append(chunk)
        viewed.forEachFrame { header, buffer in
            var copy: [UInt8] = []
            for k in buffer.indices { copy.append(buffer[k]) }
            if let packet = try? Packet(header: header, buffer: copy) {
                views.append(packet)
            } else {
                result.problems.append("the view path handed out a \(copy.count)-byte buffer")
            }
        }
        for (path, held) in [("owned", result.decoder.bufferedByteCount), ("view", viewed.bufferedByteCount)]
        where held >= SPPFraming.maxFrameLength {
            result.problems.append("the \(path) path holds \(held) bytes after the chunk at \(i)")
        }
        i += chunkSize
    }
    if result.packets != views { result.problems.append("the paths disagree: \(result.packets.count) vs \(views.count) frames") }
    let statistics = result.decoder.statistics
    if statistics != viewed.statistics { result.problems.append("statistics disagree: \(statistics) vs \(viewed.statistics)") }
    let framed = result.packets.reduce(0) { $0 + $1.buffer.count + SPPFraming.overhead }
    if framed + statistics.discardedBytes + result.decoder.bufferedByteCount != bytes.count {
        result.problems.append("bytes unaccounted for: \(framed) framed + \(statistics.discardedBytes) discarded + "
            + "\(result.decoder.bufferedByteCount) buffered != \(bytes.count)")
    }
    if statistics.frames != result.packets.count {
        result.problems.append("statistics count \(statistics.frames) frames, \(result.packets.count) were decoded")
    }
    for p in result.packets where (try? SPPFraming.decodeFrame(SPPFraming.encode(p))) != p {
        result.problems.append("re-encoding changed \(p)")
    }
    return result
}
