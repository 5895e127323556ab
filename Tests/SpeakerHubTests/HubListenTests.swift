import Failure
import Glibc
import NIOCore
import SpeakerHub
import SpeakerHubCore
import TestSupport
import Testing
import WebServing

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

    /// The one bind-failure line of WebServing, the hub's and the pages' (`PageServer.describe`).
    @Test func aBindFailureIsTheSystemsReason() {
        struct Other: Error, CustomStringConvertible { var description: String { "no such interface\nmore" } }
        #expect(BindFailure.message(IOError(errnoCode: EADDRINUSE, reason: "bind"), host: "::1", port: 8080) == "address already in use: [::1]:8080")
        #expect(BindFailure.reason(IOError(errnoCode: EACCES, reason: "bind")) == "permission denied")
        #expect(BindFailure.message(Other(), host: "10.0.0.1", port: 80) == "cannot listen: no such interface: 10.0.0.1:80")
        #expect(BindFailure.reason(Other()) == "no such interface")
    }
}
