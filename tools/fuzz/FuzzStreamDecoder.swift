// libFuzzer entry point for the LightX SPP stream decoder.
// Built together with Sources/LightX by tools/fuzz/run.sh; see tools/fuzz/README.md.
//
// Each input is split into chunks by its own first byte, fed to SPPStreamDecoder through both paths
// (owned packets and borrowed views), and checked for the decoder's invariants:
// - it never traps;
// - after draining, fewer than one maximal frame stays buffered;
// - both paths decode the same frames and account for every byte;
// - every decoded frame re-encodes to bytes that decode to the same packet.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStreamDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let chunkSize = Int(bytes.first ?? 1) % 64 + 1

    var owned = SPPStreamDecoder()
    var viewed = SPPStreamDecoder()
    var packets: [Packet] = []
    var views: [Packet] = []
    var i = 0
    while i < bytes.count {
        let chunk = Array(bytes[i..<min(bytes.count, i + chunkSize)])
        owned.append(chunk)
        while let p = owned.next() { packets.append(p) }
        viewed.append(chunk)
        viewed.forEachFrame { header, buffer in
            var copy: [UInt8] = []
            for k in buffer.indices { copy.append(buffer[k]) }
            views.append(try! Packet(header: header, buffer: copy))
        }
        precondition(owned.bufferedByteCount < SPPFraming.maxFrameLength, "owned path holds \(owned.bufferedByteCount) bytes")
        precondition(viewed.bufferedByteCount < SPPFraming.maxFrameLength, "view path holds \(viewed.bufferedByteCount) bytes")
        i += chunkSize
    }
    precondition(packets == views, "paths disagree")
    precondition(owned.statistics == viewed.statistics, "statistics disagree")
    let framed = packets.reduce(0) { $0 + $1.buffer.count + SPPFraming.overhead }
    precondition(framed + owned.statistics.discardedBytes + owned.bufferedByteCount == bytes.count, "bytes unaccounted for")
    for p in packets {
        let again = try! SPPFraming.decodeFrame(SPPFraming.encode(p))
        precondition(again == p, "re-encoding changed a packet")
    }
    return 0
}
