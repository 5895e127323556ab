// libFuzzer entry point for the hub's query handling: query parsing, the calls' parameters and rules, sessions with
// priorities and expiry, JSON answers, the WAV header reader. Built together with Sources/Failure,
// Sources/SpeakerHubCore and Tests/SpeakerHubTests/HubReplay.swift by tools/fuzz/hub/run.sh; see tools/fuzz/README.md.
//
// Each input goes through `replayHubInput` (HubReplay.swift): its lines are requests to a fresh hub over model
// speakers. `swift test` replays the kept inputs (seeds/, regressions/) the same way. The hub is async; libFuzzer
// calls in on its own thread, which waits for the replay (it is not a thread of the cooperative pool).
import Dispatch
import Synchronization

final class ReplayBox: Sendable {
    let problems = Mutex<[String]>([])
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHub(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let done = DispatchSemaphore(value: 0)
    let box = ReplayBox()
    Task {
        let replay = await replayHubInput(bytes)
        box.problems.withLock { $0 = replay.problems }
        done.signal()
    }
    done.wait()
    let problems = box.problems.withLock { $0 }
    precondition(problems.isEmpty, problems.joined(separator: "; "))
    return 0
}
