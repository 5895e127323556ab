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

/// withHeadset's advice, made by the library (issue 31 §1): an application command refused by a headset in its
/// bootloader says so and how to get an application running.
@Suite struct BootloaderAdviceTests {
    @Test func anApplicationCommandRefusedInTheBootloaderIsExplained() async throws {
        let server = try await SimulatorServer.start(count: 1, statePath: nil, options: SimulatorOptions(timeScale: 0))
        let h = Headset(session: LightXSession(transport: await server.devices[0].connect(), options: .init(timeout: .seconds(10))))
        let refusal = HeadsetError(.deviceNotSupported, "not supported")
        #expect(await h.bootloaderAdvice(for: refusal) == nil, "the application runs: the error stands")
        try await FactoryAPITests.enterBootloader(h.bootloader)
        let advice = await h.bootloaderAdvice(for: refusal)
        #expect(advice?.message == "the headset is in its bootloader, not running its application: "
            + "'tuneup bootloader leave' starts the committed 1.4.2, or 'tuneup flash IMAGE' installs one")
        #expect(advice?.category == .device)
        #expect(await h.bootloaderAdvice(for: HeadsetError(.timeout, "t")) == nil, "only a refusal is explained")
        await h.close()
        await server.shutdown()
    }
}
