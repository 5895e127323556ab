import Foundation
import Testing
import Transport

/// `tuneup speaker hub --control-port` (docs/cli.md, docs/hub.md §9.1): a port out of range is a usage error; an
/// explicit port that is in use is one line and exit 69 (the default, 1705, gives way with a warning instead: the
/// SpeakerHubTests' SnapcastControlServerTests).
@Suite("tuneup speaker hub --control-port")
struct HubControlPortCLITests {
    @Test func aBadOrBusyControlPortIsAOneLineError() async throws {
        let bad = try await CLI.run(["speaker", "hub", "--media", Scratch.directory, "--control-port", "70000", "--speaker", "127.0.0.1:1"])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderrLines.first?.contains("--control-port takes a port 0...65535, got 70000") == true, "\(bad.stderr)")

        let sim = try await RunningSpeakers.start([], count: 1)
        let holder = try await TCPListener.bind(host: "127.0.0.1", port: 0)
        defer { holder.close() }
        guard case let .tcp(_, port) = holder.boundAddress else { throw TestFailure("\(holder.boundAddress)") }
        let busy = try await CLI.run(["speaker", "hub", "--media", Scratch.directory, "--listen", "127.0.0.1:0", "--control-port", String(port)]
                                     + sim.speakerArgs)
        #expect(busy.status == 69, "\(busy.stderr)")
        #expect(busy.stderrLines == ["tuneup: cannot serve Snapcast's control on 127.0.0.1:\(port): the port is in use (a snapserver?)"])
        #expect(busy.stdout.isEmpty, "no URL: the hub did not start")
        _ = await sim.quit()
    }
}
