import Foundation
import Testing
import Speaker

/// docs/speaker-protocol.md stays true: every hex example in it is what the codec writes for the named example
/// (Examples.swift), every example is in it, and its code tables list exactly the codec's codes.
/// `SPEAKER_PRINT_VECTORS=1 swift test --filter DocumentTests` prints the vectors to paste.
@Suite struct DocumentTests {
    static let document = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/speaker-protocol.md")

    /// The document's vectors: the hex block after each `<!-- vector: NAME -->` line.
    static func documentVectors() throws -> [(name: String, bytes: [UInt8]?)] {
        let lines = try String(contentsOf: document, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        var vectors: [(String, [UInt8]?)] = []
        var i = 0
        while i < lines.count {
            let line = lines[i].trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("<!-- vector: "), line.hasSuffix(" -->") {
                let name = String(line.dropFirst("<!-- vector: ".count).dropLast(" -->".count))
                var j = i + 1
                guard j < lines.count, lines[j].hasPrefix("```") else {
                    vectors.append((name, nil))
                    i += 1
                    continue
                }
                j += 1
                var hexText = ""
                while j < lines.count, !lines[j].hasPrefix("```") {
                    hexText += lines[j] + " "
                    j += 1
                }
                vectors.append((name, bytes(hex: hexText)))
                i = j
            }
            i += 1
        }
        return vectors
    }

    /// The vector as the document shows it: 16 bytes a line.
    static func formatted(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: bytes.count, by: 16).map { speakerHex(bytes[$0..<min(bytes.count, $0 + 16)]) }.joined(separator: "\n")
    }

    @Test func everyHexExampleIsWhatTheCodecWrites() throws {
        let expected = Examples.vectors
        if ProcessInfo.processInfo.environment["SPEAKER_PRINT_VECTORS"] != nil {
            for (name, bytes) in expected { print("VECTOR \(name)\n\(Self.formatted(bytes))\nEND") }
        }
        let documented = try Self.documentVectors()
        #expect(documented.map(\.name) == expected.map(\.name), "the document's vectors and the examples differ in names or order")
        let byName = Dictionary(documented.map { ($0.name, $0.bytes) }, uniquingKeysWith: { a, _ in a })
        for (name, bytes) in expected {
            #expect(byName[name] == .some(bytes), "vector \(name): the codec writes\n\(Self.formatted(bytes))")
        }
    }

    @Test func codeTablesMatchTheCodec() throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        var missing: [String] = []
        for reason in StateUpdateReason.allCases where !text.contains("| \(reason.rawValue) | `\(reason.name)` |") {
            missing.append("reason \(reason.rawValue) \(reason.name)")
        }
        for code in DeviceErrorCode.allCases where !text.contains("| \(code.rawValue) | `\(code.name)` |") {
            missing.append("error code \(code.rawValue) \(code.name)")
        }
        for code in SpeakerError.Code.allCases where !text.contains("`\(code.rawValue)`") {
            missing.append("decoder error \(code.rawValue)")
        }
        for type in RequestType.allCases where !text.contains("| `\(speakerHex([type.rawValue]))` | `\(type)` |") {
            missing.append("request type \(type)")
        }
        for type in EventType.allCases where !text.contains("| `\(speakerHex([type.rawValue]))` | `\(type)` |") {
            missing.append("event type \(type)")
        }
        #expect(missing == [], "not in docs/speaker-protocol.md's tables")
    }
}
