import Testing
import LightX
import HeadsetSimulator
import Transport
@testable import Headset

/// The typed API against the simulated headset, end to end over an in-memory SPP link.
@Suite struct HeadsetAPITests {
    /// A headset on a fresh in-memory simulator (no state file).
    func withSimulator(_ body: (Headset, InProcessSimulatorLink) async throws -> Void) async throws {
        let link = try await SimulatorServer.inProcessLink(statePath: nil)
        // Every reply here must come: wait long (a loaded machine is slow), so a slow reply is not taken for a lost one.
        let headset = Headset(session: LightXSession(transport: link, options: .init(timeout: .seconds(10))))
        do {
            try await body(headset, link)
        } catch {
            await headset.close()
            throw error
        }
        await headset.close()
    }

    @Test func identityFirmwareBattery() async throws {
        try await withSimulator { h, _ in
            let id = try await h.identity()
            #expect(id.product == "Tuneup Sim Headset" && id.manufacturer == "Tuneup" && id.serial == "TS1-000001")
            #expect(try await h.firmwareVersion() == FirmwareVersion(1, 4, 2))
            #expect((0...100).contains(try await h.batteryLevel()))
            #expect(try await h.isInBootloader() == false)
        }
    }

    @Test func ancAndAmbientRoundTrip() async throws {
        try await withSimulator { h, _ in
            try await h.setANC(true)
            #expect(try await h.isANCEnabled())
            try await h.setANC(false)
            #expect(try await !h.isANCEnabled())
            try await h.setANCLevel(0.25)
            #expect(try await h.ancLevel() == 0.25)
            try await h.setAwarenessPreset(.high)
            #expect(try await h.awarenessPreset() == .high)
            try await h.setAmbient(left: 7, right: 0)
            #expect(try await h.ambientLevels() == AmbientLevels(left: 7, right: 0, steps: 8))
            try await h.setAmbient(left: nil, right: 5)
            #expect(try await h.ambientLevels().right == 5)
            try await h.setAudioEQPreset(.conference)
            #expect(try await h.audioEQPreset() == .conference)
        }
    }

    @Test func rangeChecksSendNothing() async throws {
        try await withSimulator { h, _ in
            _ = try await h.graphicEQLimits()
            _ = try await h.ambientSteps()
            let before = await h.session.statistics.requests
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setANCLevel(1.5) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setANCLevel(.nan) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setAmbient(left: 8, right: nil) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setAmbient(left: nil, right: -1) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setAwarenessPreset(AwarenessPreset(rawValue: 4)) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setGraphicEQBand(preset: 0, band: 10, gain: 0) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setGraphicEQBand(preset: 0, band: 0, gain: 11) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setGraphicEQBand(preset: 4, band: 0, gain: 0) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) { try await h.setGraphicEQGains(preset: 0, gains: [1, 2, 3]) }
            await #expect(throws: HeadsetError(.invalidArgument, "")) {
                try await h.setGraphicEQGains(preset: 0, gains: [0, 0, 0, 0, 0, 0, 0, 0, 0, -11])
            }
            #expect(await h.session.statistics.requests == before, "nothing may reach the device")
        }
    }

    @Test func deviceStatusesBecomeTypedErrors() async throws {
        try await withSimulator { h, _ in
            // The simulated model has no tap sensor: a real device answer, NotSupported.
            await #expect(throws: HeadsetError(.deviceNotSupported, "")) {
                _ = try await h.exchange(try Packet.request(.read, .appTapThresholdHigh))
            }
            // Bypass the client-side check: the device itself refuses out-of-range values.
            await #expect(throws: HeadsetError(.deviceExceededLimits, "")) {
                try await h.write(AppSettings.ancLevel, 3.0)
            }
            let level = try await h.ancLevel()
            #expect(level != 3.0)
        }
    }

    @Test func graphicEQ() async throws {
        try await withSimulator { h, _ in
            let info = try await h.graphicEQInfo()
            #expect(info.bandCount == 10 && info.minGain == -10 && info.maxGain == 10)
            #expect(info.frequencies == [31, 62, 125, 250, 500, 1000, 2000, 4000, 8000, 16000])
            #expect(info.presets.map(\.name) == ["Music", "Movie", "Voice", "User"])
            #expect(info.presetIndex("user") == 3)
            #expect(info.presetIndex("2") == 2)
            #expect(info.presetIndex("jazz") == nil)

            let gains = [-10, -5, 0, 1, 2, 3, 4, 5, 9, 10]
            try await h.setGraphicEQGains(preset: 3, gains: gains)
            #expect(try await h.graphicEQGains(preset: 3) == gains)
            try await h.setGraphicEQBand(preset: 3, band: 2, gain: -7)
            #expect(try await h.graphicEQBand(preset: 3, band: 2) == -7)
            try await h.selectGraphicEQPreset(3)
            #expect(try await h.graphicEQCurrentPreset() == 3)
            try await h.persistGraphicEQPreset(3)
            try await h.setDefaultGraphicEQPreset(3)

            let factory = try await h.graphicEQGains(preset: 1)
            try await h.setGraphicEQBand(preset: 1, band: 0, gain: 10)
            try await h.factoryResetGraphicEQ(preset: 1)
            #expect(try await h.graphicEQGains(preset: 1) == factory)
            try await h.factoryResetGraphicEQ(preset: nil)
            #expect(try await h.graphicEQGains(preset: 3) != gains)
        }
    }

    @Test func settingsAndAuthentication() async throws {
        try await withSimulator { h, _ in
            try await h.setVoicePrompt(false)
            #expect(try await !h.voicePrompt())
            try await h.setAutoOff(false)
            #expect(try await !h.autoOff())
            try await h.setSmartButtonControlsANC(false)
            #expect(try await !h.smartButtonControlsANC())
            try await h.authenticate()
        }
    }

    @Test func pushesFromButtonPresses() async throws {
        try await withSimulator { h, link in
            let pushes = await h.pushes()
            try await h.setANC(false)
            _ = await link.device.press(.anc)
            _ = await link.device.press(.ambient)
            _ = await link.device.setBatteryLevel(33)
            var seen: [HeadsetPush] = []
            for await p in pushes {
                seen.append(p)
                if seen.count == 3 { break }
            }
            #expect(seen.contains(.ancEnabled(true)))
            #expect(seen.contains(.batteryLevel(33)))
            #expect(seen.contains { if case .awarenessPreset = $0 { return true } else { return false } })
        }
    }

    @Test func snapshotReadsEverything() async throws {
        try await withSimulator { h, _ in
            let s = try await h.snapshot()
            #expect(s.identity.model == "TS-1")
            #expect(s.firmwareVersion == "1.4.2")
            #expect(s.anc?.level == 0.5)
            #expect(s.ambient?.steps == 8)
            #expect(s.eq.graphic?.bandCount == 10 && s.eq.gains?.count == 10)
            #expect(s.settings.voicePrompt != nil)
        }
    }

    @Test func unresponsiveDeviceTimesOutWithAClearError() async throws {
        let link = try await SimulatorServer.inProcessLink(statePath: nil, options: SimulatorOptions(profile: .silent))
        let h = Headset(session: LightXSession(transport: link, options: .init(timeout: .milliseconds(100), retransmissions: 1)))
        do {
            _ = try await h.batteryLevel()
            Issue.record("a silent device answered")
        } catch let error as HeadsetError {
            #expect(error.code == .timeout)
            #expect(error.message.contains("AppBatteryLevel"))
        }
        await h.close()
    }
}
