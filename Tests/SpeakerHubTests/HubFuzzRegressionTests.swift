import Foundation
import SpeakerHubCore
import Testing

/// Replays every input the hub fuzzer keeps (tools/fuzz/hub/seeds: valid call sequences; regressions: hostile ones)
/// through the fuzzer's own checks, so a plain `swift test` catches a regression without libFuzzer.
@Suite struct HubFuzzRegressionTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tools/fuzz/hub")

    static func inputs(in folder: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzzDirectory.appendingPathComponent(folder)
        let names = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
        return try names.map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    @Test func keptInputsKeepTheInvariants() async throws {
        let seeds = try Self.inputs(in: "seeds")
        let regressions = try Self.inputs(in: "regressions")
        #expect(seeds.count >= 4 && regressions.count >= 5, "the kept inputs are missing")
        for (name, bytes) in seeds + regressions {
            let replay = await replayHubInput(bytes)
            #expect(replay.problems.isEmpty, "\(name): \(replay.problems.joined(separator: "; "))")
        }
    }

    /// The seeds are valid sequences: what each call answers, pinned.
    @Test func seedsAnswerAsTheSequencesMean() async throws {
        let expected: [String: [String]] = [
            "devices.txt": Array(repeating: "", count: 12),
            "playback.txt": Array(repeating: "", count: 13),
            // Pausing web media stops it; resume then finds nothing paused.
            "web.txt": ["", "", "", "", "", "NotResumable"],
            // 1001 (priority 50) cannot interrupt or stop; 1002 (100) can; 1000 expires 60 min after its last request,
            // 1002 too (its last was before both waits).
            // JSON-RPC messages: each answered with JSON (checked by the replay), no v1 call among them.
            "jsonrpc.txt": [],
            "sessions.txt": ["", "", "", "", "PlaybackBusy", "PlaybackBusy", "", "", "", "SessionNotFound", "SessionNotFound"],
        ]
        for (name, bytes) in try Self.inputs(in: "seeds") {
            let replay = await replayHubInput(bytes)
            #expect(replay.errors == expected[name], "\(name): \(replay.errors)")
        }
        let flood = await replayHubInput(try Self.inputs(in: "regressions").first { $0.name == "session-flood.txt" }!.bytes)
        // Refused opens take no id: after the flood expires the next session is 1008.
        #expect(flood.errors == Array(repeating: "", count: 8) + ["TooManySessions", "TooManySessions", "", "SessionNotFound", ""])
        #expect(flood.statuses[8] == 503)
    }
}
