import Foundation
import Station
import Testing

/// The live view's layout: on a narrow terminal the step, its progress and the result stay; the slot and unit give way.
@Suite struct StationLiveViewTests {
    static func unit(_ json: String) throws -> UnitResult {
        try JSONDecoder().decode(UnitResult.self, from: Data(json.utf8))
    }

    static func view() throws -> StationLiveView {
        var view = StationLiveView()
        let slots = ["tcp:127.0.0.1:4300", "tcp:127.0.0.1:4301", "tcp:127.0.0.1:4302"]
        view.apply(.started(slots: slots, recipe: "recipes/sim-headset.yaml", recipeHash: "x", station: "s"))
        view.apply(.arrived(slot: slots[0], hardwareID: "9c1e44a2d0f1a3b7"))
        view.apply(.stepStarted(slot: slots[0], hardwareID: "9c1e44a2d0f1a3b7", step: "flash-application"))
        view.apply(.progress(slot: slots[0], hardwareID: "9c1e44a2d0f1a3b7", step: "flash-application", fraction: 0.42))
        view.apply(.arrived(slot: slots[1], hardwareID: "0011223344556677"))
        view.apply(.finished(try unit("""
            {"slot": "tcp:127.0.0.1:4301", "hardwareID": "0011223344556677", "serial": "TS1-202650-000001", "outcome": "pass",
             "seconds": 12.34, "stationSeconds": 0.1, "skippedSteps": []}
            """)))
        view.apply(.arrived(slot: slots[2], hardwareID: "8899aabbccddeeff"))
        view.apply(.finished(try unit("""
            {"slot": "tcp:127.0.0.1:4302", "hardwareID": "8899aabbccddeeff", "outcome": "fail", "failedStep": "calibrate-anc",
             "message": "ANC correction 7.2 dB is outside 0...6", "seconds": 3, "stationSeconds": 0.1, "skippedSteps": []}
            """)))
        return view
    }

    @Test(arguments: [40, 32])
    func aNarrowTerminalKeepsTheStepProgressAndResult(columns: Int) throws {
        let lines = try Self.view().lines(columns: columns)
        #expect(lines.count == 4)
        for line in lines.dropLast() { #expect(line.count <= columns - 1, "\(line)") }
        #expect(lines[0].contains("flash-application 42%"), "\(lines[0])")
        #expect(lines[0].hasPrefix("…") && lines[0].contains(":4300"), "the slot's end: \(lines[0])")
        #expect(lines[1].contains("done PASS TS1-2"), "\(lines[1])")
        #expect(lines[2].contains("done FAIL at calib"), "\(lines[2])")
    }

    @Test func aWideTerminalKeepsTheColumns() throws {
        let lines = try Self.view().lines(columns: 120)
        #expect(lines[0] == "tcp:127.0.0.1:4300  9c1e44a2d0f1a3b7  flash-application  42%")
        #expect(lines[1].hasPrefix("tcp:127.0.0.1:4301  0011223344556677  done                        PASS TS1-202650-000001 in 12.3 s"))
        #expect(lines[3].hasPrefix("passed 0, failed 0, errors 0, - units/h"))
    }
}
