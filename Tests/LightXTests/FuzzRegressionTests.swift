import Foundation
import Testing
import LightX

/// Replays every input the decoder fuzzer keeps (tools/fuzz/seeds: valid traffic; tools/fuzz/regressions: inputs that
/// once crashed the fuzzer or are hostile by construction) through the fuzzer's own checks, so a plain `swift test`
/// catches a regression without libFuzzer.
@Suite struct FuzzRegressionTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tools/fuzz")

    /// Frames each hand-made regression input must decode to (before any `abandonPartialFrame`), from how it was built.
    static let expectedFrames: [String: Int] = [
        "truncated-frames.bin": 1,  // every prefix of a maximal frame, then one whole frame
        "length-fields.bin": 4,  // lengths 0, 18, 276, 0xFFFF are skipped; 275 waits for bytes that never come
        "maximal-length-pending.bin": 0,  // a start that claims 275 bytes and nothing else
        "garbage.bin": 0,
        "bad-checksums.bin": 13,  // each bad frame is dropped, the good one after it is kept
        "magic-flood.bin": 1,
        "param1-lies.bin": 2,  // param1 is the header's business, not the framing's
    ]

    static func inputs(in folder: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzzDirectory.appendingPathComponent(folder)
        let names = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
        return try names.map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    /// After any input, a session gives up on a pending partial frame (`abandonPartialFrame`, as on a receive
    /// timeout) and a good frame sent next is found, leaving nothing buffered.
    func expectRecovers(_ decoder: SPPStreamDecoder, after name: String) throws {
        var decoder = decoder
        let good = try AppSettings.ancEnabled.writeRequest(true)
        decoder.append(SPPFraming.encode(good))
        var found: [Packet] = []
        repeat {
            found += decoder.decodeAll()
        } while found.last != good && decoder.abandonPartialFrame()
        #expect(found.last == good, "\(name): a good frame after the input was not found")
        #expect(decoder.bufferedByteCount == 0, "\(name)")
    }

    @Test func keptFuzzerInputsKeepTheDecoderInvariants() throws {
        let seeds = try Self.inputs(in: "seeds")
        let regressions = try Self.inputs(in: "regressions")
        #expect(seeds.count >= 3 && regressions.count >= Self.expectedFrames.count, "the kept inputs are missing")
        for (name, bytes) in seeds + regressions {
            let replay = replayThroughDecoder(bytes)
            #expect(replay.problems.isEmpty, "\(name): \(replay.problems.joined(separator: "; "))")
            try expectRecovers(replay.decoder, after: name)
        }
        for (name, bytes) in seeds {
            let replay = replayThroughDecoder(bytes)
            #expect(replay.packets.count > 0 && replay.decoder.statistics.checksumErrors == 0, "\(name) is valid traffic")
        }
    }

    @Test func handMadeRegressionsDecodeAsBuilt() throws {
        let regressions = Dictionary(uniqueKeysWithValues: try Self.inputs(in: "regressions").map { ($0.name, $0.bytes) })
        for (name, frames) in Self.expectedFrames {
            let bytes = try #require(regressions[name], "tools/fuzz/regressions/\(name) is missing")
            let replay = replayThroughDecoder(bytes)
            #expect(replay.packets.count == frames, "\(name)")
        }
        let lengths = replayThroughDecoder(try #require(regressions["length-fields.bin"])).decoder.statistics
        #expect(lengths.lengthErrors >= 4)
        let checksums = replayThroughDecoder(try #require(regressions["bad-checksums.bin"])).decoder.statistics
        #expect(checksums.checksumErrors >= 13)
        let pending = replayThroughDecoder(try #require(regressions["maximal-length-pending.bin"])).decoder
        #expect(pending.bufferedByteCount == 18 && pending.statistics.discardedBytes == 1, "waits for the promised frame")
    }
}
