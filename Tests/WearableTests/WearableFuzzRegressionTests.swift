import Foundation
import Testing
import Wearable

/// Replays every input the Wearable fuzzer keeps (tools/fuzz/wearable/seeds: valid payloads of every kind;
/// tools/fuzz/wearable/regressions: inputs that once broke the codec or are hostile by construction) through the
/// fuzzer's own checks, so a plain `swift test` catches a regression without libFuzzer.
@Suite struct WearableFuzzRegressionTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tools/fuzz/wearable")

    /// What each hand-made regression input must give: nil when accepted, else the refusal's code.
    static let expectedOutcomes: [String: String?] = [
        "empty.bin": "truncated",  // device information with no bytes
        "device-information-long.bin": "malformed",
        "device-information-later-gesture.bin": "reserved-bits",  // gesture bit 4: a gesture this version does not know
        "sensor-information-cut-entry.bin": "truncated",
        "sensor-information-reserved-period.bin": "reserved-bits",
        "sensor-information-zero-range.bin": "invalid-range",  // minRaw == maxRaw would divide by zero
        "sensor-information-length-lies.bin": "sample-length-mismatch",  // rotation said to have 8-byte samples
        "sensor-configuration-mixed-periods.bin": "mixed-periods",
        "sensor-configuration-bit-position-as-period.bin": "unknown-period",  // 4 is 20 ms's bit, not a period
        "gesture-configuration-flag-2.bin": "malformed",
        "gesture-data-unknown.bin": "unknown-gesture",
        "sensor-data-unknown-id.bin": "unknown-sensor",  // a good record, then id 7: the whole notification goes
        "sensor-data-cut-record.bin": "truncated",
        "sensor-data-unlisted-sensor.bin": "sensor-not-listed",  // a gyroscope record, only the accelerometer listed
        "sensor-data-bad-accuracy.bin": "malformed",
        "sensor-data-info-lies.bin": String?.none,  // the carried information is refused; the full one decodes the record
        "parser-garbage.bin": "unknown-sensor",
        "parser-empty-notification.bin": "truncated",
    ]

    static func inputs(in folder: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzzDirectory.appendingPathComponent(folder)
        let names = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
        return try names.map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    @Test func keptInputsKeepTheCodecsInvariants() throws {
        let seeds = try Self.inputs(in: "seeds")
        let regressions = try Self.inputs(in: "regressions")
        #expect(seeds.count >= ReplayTarget.allCases.count && regressions.count >= Self.expectedOutcomes.count, "the kept inputs are missing")
        for (name, bytes) in seeds + regressions {
            let replay = replayThroughWearableDecoders(bytes)
            #expect(replay.problems.isEmpty, "\(name): \(replay.problems.joined(separator: "; "))")
        }
        // Seeds are valid payloads: every target is covered and accepted.
        var covered = Set<ReplayTarget>()
        for (name, bytes) in seeds {
            let replay = replayThroughWearableDecoders(bytes)
            #expect(replay.errorCode == nil, "\(name) is a valid payload, refused with \(replay.errorCode ?? "")")
            covered.insert(replay.target)
        }
        #expect(covered == Set(ReplayTarget.allCases))
    }

    @Test func handMadeRegressionsGiveTheirOutcome() throws {
        let regressions = Dictionary(uniqueKeysWithValues: try Self.inputs(in: "regressions").map { ($0.name, $0.bytes) })
        for (name, outcome) in Self.expectedOutcomes {
            let bytes = try #require(regressions[name], "tools/fuzz/wearable/regressions/\(name) is missing")
            #expect(replayThroughWearableDecoders(bytes).errorCode == outcome, "\(name)")
        }
        #expect(replayThroughWearableDecoders(try #require(regressions["sensor-data-info-lies.bin"])).records == 1)
    }

    /// The seeds' sensor data decodes to the records written into them (a replay that silently accepted nothing
    /// would pass the invariants).
    @Test func seedsHoldTheirRecords() throws {
        let seeds = Dictionary(uniqueKeysWithValues: try Self.inputs(in: "seeds").map { ($0.name, $0.bytes) })
        #expect(replayThroughWearableDecoders(try #require(seeds["sensor-data-four-sensors.bin"])).records == 4)
        #expect(replayThroughWearableDecoders(try #require(seeds["sensor-data-every-sensor.bin"])).records == 7)
        #expect(replayThroughWearableDecoders(try #require(seeds["parser-two-records.bin"])).records == 2)
    }
}
