import Foundation
import HeadsetSimulator
import Synchronization
import Testing
import TestSupport
import Transport
import TuneupKit
import Logging

/// `tuneup sim headset`'s serving as a library call (issue 31 §1): the link chosen, control lines applied until quit.
struct SimulatedHeadsetsTests {
    @Test func servesOnTCPAppliesControlLinesAndSaysWhatItRefuses() async throws {
        try await withTimeLimit {
            let prepared = Mutex(false)
            let headsets = try await SimulatedHeadsets.start(on: .tcp(host: "127.0.0.1", port: 0), count: 2, statePath: nil,
                                                             options: SimulatorOptions(timeScale: 0), logger: Logger(label: "test")) {
                prepared.withLock { $0 = true }
            }
            #expect(prepared.withLock { $0 } && headsets.endpoints.count == 2 && headsets.endpoints.allSatisfy { $0.hasPrefix("tcp:127.0.0.1:") })
            let (lines, input) = AsyncStream.makeStream(of: String.self)
            for line in ["battery 42 1", "battery 42 7", "quit", "battery 10 1"] { input.yield(line) }
            let refused = Mutex<[String]>([])
            await headsets.follow(lines) { line in refused.withLock { $0.append(line) } }
            #expect(refused.withLock { $0.count } == 1, "the line naming a device the server does not have")
            #expect(await headsets.server.devices[1].state.batteryPercent == 42, "lines after quit are not applied")
            await headsets.shutdown()
        }
    }

    @Test func aStateFileInAMissingDirectoryIsRefusedBeforeAnythingIsServed() async throws {
        let prepared = Mutex(false)
        await #expect(throws: (any Error).self) {
            _ = try await SimulatedHeadsets.start(on: .pty, count: 1, statePath: "/nonexistent-dir-31/state.json",
                                                  options: SimulatorOptions(timeScale: 0), logger: Logger(label: "test")) { prepared.withLock { $0 = true } }
        }
        #expect(!prepared.withLock { $0 })
    }
}
