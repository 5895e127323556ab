import Foundation
import Logging
import Support
import Synchronization
import Testing
import TestSupport
import TuneupKit
import WearableRecording
import WearableSimulator

/// `tuneup sim wearable`'s serving and replay as library calls (issue 31 §1).
struct SimulatedWearablesTests {
    @Test func servesOnTCPAndSaysWhatControlLinesItRefuses() async throws {
        try await withTimeLimit {
            let device = SimulatedWearable(profile: WearableProfile())
            let wearable = try await SimulatedWearables.start(device, on: .tcp(host: "127.0.0.1", port: 0), logger: Logger(label: "test"), linkLogger: nil)
            #expect(wearable.endpoints.count == 1 && wearable.endpoints[0].hasPrefix("tcp:127.0.0.1:"))
            let (lines, input) = AsyncStream.makeStream(of: String.self)
            for line in ["tap", "stall nosuch", "wave", "stall gyroscope", "quit"] { input.yield(line) }
            let refused = Mutex<[String]>([])
            await wearable.follow(lines) { line in refused.withLock { $0.append(line) } }
            let said = refused.withLock { $0 }
            #expect(said.count == 2 && said[0].hasPrefix("unknown sensor 'nosuch' (")
                && said[1] == "unknown control line 'wave' (tap, double-tap, stall SENSOR, resume SENSOR, drop-link, quit)")
        }
    }

    @Test func aFileThatIsNotARecordingIsRefusedAsOne() async throws {
        let directory = try TemporaryDirectory.make("replay")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/empty.jsonl"
        try await Blocking.perform("empty recording") { try "".write(toFile: path, atomically: true, encoding: .utf8) }
        let error = await #expect(throws: RecordingError.self) { _ = try await WearableProfile().replaying(recordingAt: path) }
        #expect(error?.code == .notARecording && error?.category == .device)
        let missing = await #expect(throws: RecordingError.self) { _ = try await WearableProfile().replaying(recordingAt: directory + "/none.jsonl") }
        #expect(missing?.category == .localFile)
    }
}
