import HeadsetSimulator
import LightX
import Testing
import Transport
@testable import Headset

/// The `tuneup eq` actions on named presets, made by the library (issue 31 §1), against the simulated headset.
@Suite struct EQActionsTests {
    @Test func presetsByNameAnswerWithTheirGainsAfterwards() async throws {
        let link = try await SimulatorServer.inProcessLink(statePath: nil)
        let h = Headset(session: LightXSession(transport: link, options: .init(timeout: .seconds(10))))
        defer { Task { await h.close() } }
        let info = try await h.graphicEQInfo()
        let user = try #require(info.presets.first { $0.name.lowercased() == "user" })
        let set = try await h.setGraphicEQ(preset: "user", gains: Array(repeating: 1, count: info.bandCount))
        #expect(set.preset == user.index && set.gains == Array(repeating: 1, count: info.bandCount))
        let band = try await h.setGraphicEQ(preset: "USER", band: 0, gain: -2)
        #expect(band.gains.first == -2 && band.gains.dropFirst().allSatisfy { $0 == 1 })
        let selected = try await h.selectGraphicEQPreset(named: "user")
        #expect(selected.current && selected.preset == user.index)
        #expect(try await h.persistGraphicEQPreset(named: nil).preset == user.index)
        let reset = try await h.factoryResetGraphicEQ(named: "user")
        #expect(reset.preset == user.index && reset.gains != band.gains)
        await #expect(throws: HeadsetError.self) { _ = try await h.setDefaultGraphicEQPreset(named: "no-such-preset") }
        #expect(try await h.audioEQPresetName(setting: .named("gaming")) == "gaming")
        #expect(try await h.audioEQPresetName(setting: nil) == "gaming")
    }
}
