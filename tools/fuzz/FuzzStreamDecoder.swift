// libFuzzer entry point for the LightX SPP stream decoder.
// Built together with Sources/LightX and Tests/LightXTests/DecoderReplay.swift by tools/fuzz/run.sh; see
// tools/fuzz/README.md.
//
// Each input goes through `replayThroughDecoder` (DecoderReplay.swift): split into chunks by its own first byte, fed
// to SPPStreamDecoder through both paths (owned packets and borrowed views), and checked for the decoder's
// invariants. `swift test` replays the kept inputs (seeds/, regressions/) through the same function.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStreamDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let replay = replayThroughDecoder(Array(UnsafeBufferPointer(start: data, count: size)))
    precondition(replay.problems.isEmpty, replay.problems.joined(separator: "; "))
    return 0
}
