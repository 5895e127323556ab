import Foundation
import Testing
import LightX
@testable import Firmware

@Suite struct ManifestTests {
    @Test func factoryMatchesTheSimulatorsFactoryState() throws {
        // The simulator's GraphicEQState.factory / HeadsetState.factory values (Sources/Simulator), repeated here
        // because this target cannot see the simulator; keep both in step.
        let f = AppManifest.factory
        #expect(f.version == "1.4.2" && f.model == "TS-1" && f.product == "Tuneup Sim Headset")
        #expect(f.bandFrequencies == [31, 62, 125, 250, 500, 1000, 2000, 4000, 8000, 16000])
        #expect(f.minGain == -10 && f.maxGain == 10)
        #expect(f.presets.map(\.name) == ["Music", "Movie", "Voice", "User"])
        #expect(f.presets[0].gains == [4, 3, 2, 0, -1, -1, 0, 2, 3, 4])
        #expect(f.presets[1].gains == [5, 4, 2, 0, 0, 1, 2, 1, 0, -1])
        #expect(f.presets[2].gains == [-4, -3, -2, 0, 2, 4, 5, 4, 1, -2])
        #expect(f.presets[3].gains == [Int32](repeating: 0, count: 10))
        #expect(f.ambientSteps == 8)
        #expect(f.firmwareVersion == FirmwareVersion(1, 4, 2))
        try f.validate()
    }

    @Test func encodingIsMagicLengthSortedJSON() throws {
        let m = AppManifest(version: "1.0.0", model: "TS-1", bandFrequencies: [100], minGain: -1, maxGain: 1,
                            presets: [.init(name: "A/B", gains: [1])], ambientSteps: 2)
        let e = m.encoded()
        let json = #"{"ambientSteps":2,"bandFrequencies":[100],"maxGain":1,"minGain":-1,"model":"TS-1","presets":[{"gains":[1],"name":"A/B"}],"version":"1.0.0"}"#
        #expect(Array(e[0..<4]) == Array("TUFW".utf8))
        #expect(LE.u32(e, 4) == UInt32(json.utf8.count))
        #expect(String(decoding: e[8...], as: UTF8.self) == json)
        #expect(try AppManifest(decoding: e[...]) == m)
        #expect(try AppManifest(decoding: (e + [1, 2, 3])[...]) == m, "trailing bytes are ignored")
        #expect(try AppManifest(json: Array(m.prettyJSON().utf8)) == m)
    }

    @Test func roundTripsEveryField() throws {
        var m = AppManifest.factory
        m.product = nil
        #expect(try AppManifest(decoding: m.encoded()[...]) == m)
        m.product = "Tuneup Sim Headset Pro"
        m.presets.append(.init(name: "Bass Boost", gains: [6, 5, 4, 2, 0, 0, 0, 0, 0, 0]))
        #expect(try AppManifest(decoding: m.encoded()[...]) == m)
    }

    @Test func rejectsBrokenManifests() {
        func decodeError(_ b: [UInt8]) -> ImageError? { imageError { _ = try AppManifest(decoding: b[...]) } }
        #expect(decodeError(Array("TUF".utf8))?.code == .badManifest)
        #expect(decodeError(Array("XXXX".utf8) + [0, 0, 0, 0])?.code == .badManifest)
        #expect(decodeError(Array("TUFW".utf8) + [1, 0])?.code == .truncated)
        #expect(decodeError(Array("TUFW".utf8) + [10, 0, 0, 0] + Array("{}".utf8))?.code == .truncated)
        #expect(decodeError(Array("TUFW".utf8) + [0xFF, 0xFF, 0xFF, 0x7F])?.message.contains("more than") == true)
        #expect(decodeError(Array("TUFW".utf8) + [2, 0, 0, 0] + Array("{}".utf8))?.message.contains("missing field") == true)
        #expect(decodeError(Array("TUFW".utf8) + [2, 0, 0, 0] + Array("{x".utf8))?.message.contains("not valid JSON") == true)

        func invalid(_ change: (inout AppManifest) -> Void, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
            var m = AppManifest.factory
            change(&m)
            let e = decodeError(m.encoded())
            #expect(e?.code == .badManifest, sourceLocation: sourceLocation)
            #expect(e?.message.contains(fragment) == true, "\(e?.message ?? "decoded")", sourceLocation: sourceLocation)
        }
        invalid({ $0.version = "1.5" }, "version '1.5'")
        invalid({ $0.version = "1.256.0" }, "version")
        invalid({ $0.model = "" }, "model")
        invalid({ $0.product = String(repeating: "x", count: 65) }, "product")
        invalid({ $0.bandFrequencies = [] }, "0 bands")
        invalid({ $0.bandFrequencies = [UInt32](repeating: 100, count: 63) }, "63 bands")
        invalid({ $0.bandFrequencies[3] = 0 }, "0 Hz")
        invalid({ $0.minGain = 11 }, "above maxGain")
        invalid({ $0.presets = [] }, "0 presets")
        invalid({ $0.presets[1].gains.removeLast() }, "preset 1 'Movie' has 9 gains")
        invalid({ $0.presets[2].gains[0] = 11 }, "gain 11 is outside -10...10")
        invalid({ $0.presets[0].name = "" }, "preset 0 name")
        invalid({ $0.ambientSteps = 0 }, "ambientSteps 0")
    }

    @Test func buildPayloadIsDeterministic() throws {
        let a = AppManifest.buildPayload(.factory, size: 10_000, seed: 1)
        #expect(a.count == 10_000)
        #expect(a == AppManifest.buildPayload(.factory, size: 10_000, seed: 1))
        #expect(a != AppManifest.buildPayload(.factory, size: 10_000, seed: 2))
        #expect(Array(a.prefix(AppManifest.factory.encoded().count)) == AppManifest.factory.encoded())
        #expect(try AppManifest(decoding: a[...]) == .factory)
        // Filler is not trivially constant.
        #expect(Set(a.suffix(1000)).count > 200)
        // Too small a size gives just the manifest; odd sizes are exact.
        #expect(AppManifest.buildPayload(.factory, size: 3, seed: 1) == AppManifest.factory.encoded())
        #expect(AppManifest.buildPayload(.factory, size: 1001, seed: 9).count == 1001)
        // A fixed fingerprint: the same inputs give these bytes on every platform and build.
        #expect(Hex.string(AppManifest.buildPayload(.factory, size: 400, seed: 7).suffix(8)) == Self.fingerprint)
    }
    static let fingerprint = "e1cb631c663cf4d7"

    @Test func findInRawAndMCUbootImages() throws {
        var m = AppManifest.factory
        m.version = "1.5.0"
        let payload = AppManifest.buildPayload(m, size: 5000, seed: 3)
        #expect(AppManifest.find(in: payload) == m)
        let image = MCUbootImage.sign(payload: payload, version: .init(major: 1, minor: 5, revision: 0), model: "TS-1",
                                      region: .application, key: Keys.dev)
        #expect(AppManifest.find(in: image.bytes) == m)
        // A broken (truncated) MCUboot image still yields the manifest behind its header.
        #expect(AppManifest.find(in: Array(image.bytes.prefix(3000))) == m)
        let otherHeader = MCUbootImage.sign(payload: payload, version: .init(major: 1, minor: 5, revision: 0), model: nil,
                                            region: nil, key: nil, headerSize: 0x40)
        #expect(AppManifest.find(in: otherHeader.bytes) == m)
        #expect(AppManifest.find(in: [1, 2, 3]) == nil)
        #expect(AppManifest.find(in: []) == nil)
        #expect(AppManifest.find(in: Array(MCUbootLayoutTests.imgtoolSigned)) == nil)
    }
}
