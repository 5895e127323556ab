import Foundation
import LightX
import Testing
@testable import HeadsetSimulator
@testable import Simulator

@Suite struct HeadsetStateTests {
    @Test func factoryStateIsValid() throws {
        for k in 0..<3 { try HeadsetState.factory(index: k).validate() }
        let s = HeadsetState.factory()
        #expect(s.graphicEQ.bandCount == 10 && s.graphicEQ.presetCount == 4)
        #expect(s.graphicEQ.presets.map(\.name) == ["Music", "Movie", "Voice", "User"])
        #expect(s.identity.firmwareVersion == s.firmwareVersion.description)
    }

    @Test func powerCycleRestoresPersistedGainsAndSelectsTheDefaultPreset() {
        var s = HeadsetState.factory()
        s.graphicEQ.presets[1].workingGains[0] = 9
        s.graphicEQ.presets[2].workingGains[0] = 8
        s.graphicEQ.presets[2].persistedGains[0] = 8
        s.graphicEQ.currentPreset = 3
        s.graphicEQ.defaultPreset = 2
        s.ancEnabled = true
        let on = s.poweredOn()
        #expect(on.graphicEQ.presets[1].workingGains[0] == 5)
        #expect(on.graphicEQ.presets[2].workingGains[0] == 8)
        #expect(on.graphicEQ.currentPreset == 2)
        #expect(on.ancEnabled, "non-volatile settings survive")
    }

    @Test func jsonRoundTrip() throws {
        var s = HeadsetState.factory(index: 2)
        s.ancLevel = 0.3
        s.graphicEQ.presets[0].workingGains[4] = -7
        let bytes = try StateStore.encode([s, .factory(index: 1)])
        let back = try StateStore.decode(bytes, path: "mem")
        #expect(back == [s, .factory(index: 1)])
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("\"version\" : 1"))
    }

    @Test(arguments: [
        ("{", "not valid JSON"),
        ("[]", "corrupt"),
        ("{\"version\": 1}", "missing key 'devices'"),
        ("{\"version\": 1, \"devices\": [{}]}", "missing key"),
    ])
    func corruptContentsAreDescribed(text: String, fragment: String) {
        #expect {
            try StateStore.decode(Array(text.utf8), path: "/x/state.json")
        } throws: { error in
            guard let e = error as? SimulatorError else { return false }
            return e.code == .corruptState && e.message.contains("/x/state.json") && e.message.contains(fragment)
        }
    }

    @Test func outOfRangeValuesAreCorrupt() throws {
        let cases: [(inout HeadsetState) -> Void] = [
            { $0.ancLevel = 2 },
            { $0.ambientLeft = 8 },
            { $0.awarenessPreset = 9 },
            { $0.batteryPercent = 101 },
            { $0.graphicEQ.presets[0].workingGains[0] = 11 },
            { $0.graphicEQ.presets[0].persistedGains = [1] },
            { $0.graphicEQ.currentPreset = 4 },
            { $0.graphicEQ.bandFrequencies = [] },
        ]
        for mutate in cases {
            var s = HeadsetState.factory()
            mutate(&s)
            let bytes = try StateStore.encode([s])
            #expect(throws: SimulatorError(.corruptState, "")) { try StateStore.decode(bytes, path: "p") }
        }
    }

    @Test func otherSchemaVersionsAreRefused() throws {
        var text = String(decoding: try StateStore.encode([.factory()]), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"version\" : 1", with: "\"version\" : 2")
        #expect {
            try StateStore.decode(Array(text.utf8), path: "/s.json")
        } throws: { error in
            (error as? SimulatorError)?.code == .unsupportedStateVersion && "\(error)".contains("/s.json")
                && "\(error)".contains("version 2")
        }
    }
}
