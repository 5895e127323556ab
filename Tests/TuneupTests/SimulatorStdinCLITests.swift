import Foundation
import Testing
import TestSupport

/// A simulator started in the background has its standard input closed or on /dev/null (the VM rig, systemd, `&` in
/// a script): the end of its input must not stop it; only 'quit', SIGINT or SIGTERM do.
@Suite struct SimulatorStdinCLITests {
    @Test func theEndOfStandardInputDoesNotStopTheSimulator() async throws {
        try await withTimeLimit {
            let dir = Scratch.directory
            let sim = try await RunningSimulator.start(["--listen", "tcp:127.0.0.1:0", "--state", dir + "/stdin-sim.json"])
            sim.process.closeInput()
            // It still serves after its input ended: a probe answers (the old reader ended the simulator here).
            let probe = try await CLI.run(["probe", "--device", sim.addresses[0], "--format", "json"], state: dir)
            #expect(probe.status == 0, "\(probe.stderr)")
            #expect(await sim.stop() == 0)
        }
    }
}
