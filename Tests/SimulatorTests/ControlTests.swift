import Testing
@testable import HeadsetSimulator
@testable import Simulator

@Suite struct ControlTests {
    @Test func parsesControlLines() throws {
        #expect(try SimulatorControl.parse("press anc") == .press(.anc, device: 0))
        #expect(try SimulatorControl.parse("  press   ambient  \n") == .press(.ambient, device: 0))
        #expect(try SimulatorControl.parse("PRESS ANC 2") == .press(.anc, device: 2))
        #expect(try SimulatorControl.parse("battery 0") == .battery(percent: 0, device: 0))
        #expect(try SimulatorControl.parse("battery 100 1") == .battery(percent: 100, device: 1))
        #expect(try SimulatorControl.parse("quit") == .quit)
        #expect(try SimulatorControl.parse("power-cut") == .powerCut(device: 0))
        #expect(try SimulatorControl.parse("Power-Cut 3") == .powerCut(device: 3))
        #expect(try SimulatorControl.parse("reboot") == .reboot(device: 0))
        #expect(try SimulatorControl.parse(" reboot 1 ") == .reboot(device: 1))
    }

    @Test(arguments: ["", "   ", "press", "press volume", "press anc x", "press anc 1 2", "battery", "battery 101",
                      "battery -1", "battery 5%", "quit now", "reboot now", "reboot 1 2", "power-cut x", "powercut", "power cut"])
    func rejectsAnythingElse(line: String) {
        #expect {
            try SimulatorControl.parse(line)
        } throws: { error in
            guard let e = error as? SimulatorError else { return false }
            return e.code == .invalidControlLine && e.message.contains("'\(line)'") && e.message.contains(SimulatorControl.usage)
        }
    }
}
