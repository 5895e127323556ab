// libFuzzer entry point for the Speaker protocol decoders: the control deframer and message decoder, the audio,
// discovery and clock-sync datagram decoders. Built together with Sources/Failure, Sources/Speaker and
// Tests/SpeakerTests/SpeakerReplay.swift by tools/fuzz/speaker/run.sh; see tools/fuzz/README.md.
//
// Each input goes through `replaySpeakerInput` (SpeakerReplay.swift): deframed in chunks cut by its own first byte
// and all at once, every frame decoded and re-encoded, and the whole input decoded as one control frame, one audio
// datagram, one discovery datagram and one clock-sync datagram. `swift test` replays the kept inputs (seeds/,
// regressions/) the same way.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSpeaker(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let replay = replaySpeakerInput(Array(UnsafeBufferPointer(start: data, count: size)))
    precondition(replay.problems.isEmpty, replay.problems.joined(separator: "; "))
    return 0
}
