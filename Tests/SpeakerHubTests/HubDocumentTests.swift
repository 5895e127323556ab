import Foundation
import SpeakerHubCore
import TestSupport
import Testing

/// docs/hub.md stays true: every refusal example of §4 that needs no earlier request is what the hub answers,
/// byte for byte, with that status.
@Suite struct HubDocumentTests {
    static let document = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/hub.md")

    @Test func theRefusalExamplesAreWhatTheHubAnswers() async throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        guard let start = text.range(of: "## 4. Refusals"), let end = text.range(of: "## 5.", range: start.upperBound..<text.endIndex) else {
            throw TestFailure("docs/hub.md has no section 4")
        }
        let lines = text[start.upperBound..<end.lowerBound].split(separator: "\n").map(String.init)
        let clock = ManualClock()
        let now: @Sendable () -> Duration = { clock.now.offset }
        let api = HubAPI(speakers: ModelSpeakers(), player: ModelPlayer(now: now), media: ModelMedia(), now: now)
        var checked = 0
        for (k, line) in lines.enumerated() where line.hasPrefix("    GET /v1/") && k + 1 < lines.count {
            var request = line.dropFirst("    GET /v1/".count)
            // "(after close_session)", "(priority 50; ...)": examples that need earlier requests; other notes are read past.
            if let space = request.firstIndex(of: " ") {
                let note = request[space...].trimmingCharacters(in: .whitespaces)
                guard !note.hasPrefix("(after"), !note.hasPrefix("(priority") else { continue }
                request = request[..<space]
            }
            let answer = lines[k + 1].trimmingCharacters(in: .whitespaces)
            guard let split = answer.range(of: "}   ", options: .backwards), let status = Int(answer[split.upperBound...]) else {
                throw TestFailure("no 'BODY   STATUS' after \(line)")
            }
            let body = String(answer[..<answer.index(after: split.lowerBound)])
            let path = request.split(separator: "?", maxSplits: 1)
            let got = await api.handle(name: path[0], query: path.count > 1 ? path[1] : nil)
            #expect(got.body == body && got.status == status, "\(request): the hub answers \(got.body) \(got.status)")
            checked += 1
        }
        #expect(checked >= 5, "\(checked) examples checked")
    }
}
