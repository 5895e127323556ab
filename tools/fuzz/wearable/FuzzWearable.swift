// libFuzzer entry point for the Bose Wearable decoders (sensor data and the information payloads).
// Built together with Sources/Failure, Sources/Wearable and Tests/WearableTests/WearableReplay.swift by
// tools/fuzz/wearable/run.sh; see tools/fuzz/README.md.
//
// Each input goes through `replayThroughWearableDecoders` (WearableReplay.swift): its first byte picks the decoder,
// the rest is the payload (for sensor data: a SensorInformation, then a notification), and the codec's invariants are
// checked. `swift test` replays the kept inputs (seeds/, regressions/) through the same function.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWearable(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let replay = replayThroughWearableDecoders(Array(UnsafeBufferPointer(start: data, count: size)))
    precondition(replay.problems.isEmpty, replay.problems.joined(separator: "; "))
    return 0
}
