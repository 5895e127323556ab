import Failure
import SpeakerHub
import SpeakerHubCore
import TestSupport
import Testing

/// A hub whose port is taken says so in one line (issue 30), and the CLI exits 69 for it (its category).
@Suite("Hub: an address that cannot be bound")
struct HubListenTests {
    @Test func aPortInUseIsSaidInOneLine() async throws {
        try await withHub(speakers: 1) { hub in
            do {
                let second = try await SpeakerHubServer.start(hub.api, host: "127.0.0.1", port: hub.port)
                await second.stop()
                Issue.record("a second hub listened on \(hub.port)")
            } catch let error as HubError {
                #expect(error.code == .cannotServe && error.category == .connection)
                #expect(error.message == "address already in use: 127.0.0.1:\(hub.port)")
            }
        }
    }
}
