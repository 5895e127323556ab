import Foundation
import Testing
import Speaker

/// Replays every input the Speaker fuzzer keeps (tools/fuzz/speaker/seeds: valid traffic; regressions: inputs that
/// once broke a decoder or are hostile by construction) through the fuzzer's own checks, so a plain `swift test`
/// catches a regression without libFuzzer.
@Suite struct FuzzRegressionTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tools/fuzz/speaker")

    /// Frames and decodable control packets each hand-made regression input gives (before any
    /// `abandonPartialFrame`), from how it was built.
    static let expected: [String: (frames: Int, packets: Int)] = [
        "truncated-frames.bin": (1, 1),  // every prefix of a device-info frame, then the whole frame
        "length-fields.bin": (2, 2),  // lengths 4097 and 0xFFFF refused at once; 4096 waits for bytes that never come
        "bad-checksums.bin": (5, 5),  // each corrupt frame is dropped, the good one after it kept
        "garbage.bin": (0, 0),
        "magic-flood.bin": (0, 0),  // "TS TS T" + the good frame's start reads as length 768: the good frame waits for
                                    // abandonPartialFrame (keptInputsKeepTheInvariants checks it is then found)
        "undecodable-frames.bin": (10, 5),  // version ff, type 14, id rules, volume 51: framed but not packets (its
                                            // version-2 frame decodes since the codec speaks 1...3)
        "audio-frame-count-lies.bin": (0, 0),
        "discovery-text-overrun.bin": (0, 0),
    ]

    static func inputs(in folder: String) throws -> [(name: String, bytes: [UInt8])] {
        let url = fuzzDirectory.appendingPathComponent(folder)
        let names = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { !$0.hasPrefix(".") }.sorted()
        return try names.map { ($0, Array(try Data(contentsOf: url.appendingPathComponent($0)))) }
    }

    /// After any input, giving up pending partial frames (as a session does on a receive timeout) and sending a good
    /// frame finds that frame and leaves nothing buffered.
    func expectRecovers(_ deframer: ControlDeframer, after name: String) {
        var d = deframer
        let good = Examples.control[0].packet.frame
        d.append(good.encode())
        var found: [ControlDeframer.Output] = []
        repeat {
            while let output = d.next() { found.append(output) }
        } while found.last != .frame(good) && d.abandonPartialFrame()
        #expect(found.last == .frame(good), "\(name): a good frame after the input was not found")
        #expect(d.bufferedByteCount == 0, "\(name)")
    }

    @Test func keptInputsKeepTheInvariants() throws {
        let seeds = try Self.inputs(in: "seeds")
        let regressions = try Self.inputs(in: "regressions")
        #expect(seeds.count >= 7 && regressions.count >= Self.expected.count, "the kept inputs are missing")
        for (name, bytes) in seeds + regressions {
            let replay = replaySpeakerInput(bytes)
            #expect(replay.problems.isEmpty, "\(name): \(replay.problems.joined(separator: "; "))")
            expectRecovers(replay.deframer, after: name)
        }
    }

    @Test func seedsAreValidTraffic() throws {
        for (name, bytes) in try Self.inputs(in: "seeds") {
            let replay = replaySpeakerInput(bytes)
            let rejected = replay.outputs.filter { if case .rejected = $0 { true } else { false } }
            #expect(rejected.isEmpty, "\(name)")
            if name.hasPrefix("control") || name.hasPrefix("device") {
                #expect(replay.packets.count > 0 && replay.packets.count == replay.outputs.count, "\(name)")
            } else if name.hasPrefix("audio") {
                #expect(throws: Never.self, "\(name)") { try AudioPacket.decode(bytes) }
            } else {
                #expect(throws: Never.self, "\(name)") { try DiscoveryMessage.decode(bytes) }
            }
        }
    }

    @Test func handMadeRegressionsDecodeAsBuilt() throws {
        let regressions = Dictionary(uniqueKeysWithValues: try Self.inputs(in: "regressions").map { ($0.name, $0.bytes) })
        for (name, expected) in Self.expected {
            let bytes = try #require(regressions[name], "\(name) is missing")
            let replay = replaySpeakerInput(bytes)
            #expect(replay.deframer.statistics.frames == expected.frames, "\(name): frames")
            #expect(replay.packets.count == expected.packets, "\(name): packets")
        }
        let audio = try #require(regressions["audio-frame-count-lies.bin"])
        #expect(thrownCode { () throws(SpeakerError) in try AudioPacket.decode(audio) } == .truncated)
        let discovery = try #require(regressions["discovery-text-overrun.bin"])
        #expect(thrownCode { () throws(SpeakerError) in try DiscoveryMessage.decode(discovery) } == .truncated)
    }
}
