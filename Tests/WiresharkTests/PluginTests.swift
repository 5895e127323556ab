import Foundation
import LightX
import Speaker
import Testing
import TestSupport

// The dissectors as Debian's package installs them (tools/package.sh: every *.lua of tools/wireshark/ in one plugin
// folder, which Wireshark loads file by file) against the same files loaded by hand (`-X lua_script:`, the tests' and
// docs/wireshark.md's way): the helpers they share (tuneup-common.lua) load once either way, and alone register
// nothing.

/// A capture of the three families' byte streams, a frame of each cut across two packets (the shared reassembly).
private func streamsCapture() throws -> CaptureFixture {
    var capture = CaptureFixture()
    let spp = capture.addInterface(linkType: 147, name: "tcp:127.0.0.1:4100", description: "LightX over SPP; host side")
    let request = SPPFraming.encode(try AppSettings.ancEnabled.writeRequest(true))
    let reply = SPPFraming.encode(try Packet.reply(to: try AppSettings.ancEnabled.writeRequest(true)))
    capture.add(spp, .outbound, request)
    capture.add(spp, .inbound, Array(reply.prefix(9)))
    capture.add(spp, .inbound, Array(reply.dropFirst(9)))
    let control = capture.addInterface(linkType: 149, name: "tcp:127.0.0.1:45455", description: "HKWirelessHD control; host side")
    let volume = try ControlFrame(version: 4, type: 0x04, requestId: 7, payload: [30]).encode()
    capture.add(control, .outbound, Array(volume.prefix(5)))
    capture.add(control, .outbound, Array(volume.dropFirst(5)))
    let gatt = capture.addInterface(linkType: 152, name: "tcp:127.0.0.1:4300", description: "Bose Wearable GATT framing; host side")
    let read: [UInt8] = [0x57, 0x00, 0x03, 0x0A, 0x00, 0x03]  // Read Request of handle 0x0003
    capture.add(gatt, .outbound, Array(read.prefix(2)))
    capture.add(gatt, .outbound, Array(read.dropFirst(2)))
    return capture
}

@Suite struct WiresharkPluginTests {
    @Test func installedAsPluginsTheDissectorsDecodeAsLoadedByHand() async throws {
        let directory = try TemporaryDirectory.make("tuneup-wireshark-plugins")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let home = directory + "/home"
        let scripts = try await offThePool {
            let plugins = home + "/.local/lib/wireshark/plugins/tuneup"
            try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
            let scripts = try FileManager.default.contentsOfDirectory(atPath: dissectorsDirectory).filter { $0.hasSuffix(".lua") }
            for name in scripts { try FileManager.default.copyItem(atPath: dissectorsDirectory + "/" + name, toPath: plugins + "/" + name) }
            return scripts
        }
        #expect(scripts.contains("tuneup-common.lua"))
        let capture = try streamsCapture()
        let path = directory + "/streams.pcapng"
        try await capture.write(to: path)

        let byHand = try await Tshark.dissect(path, in: directory)
        let asPlugins = try await Tshark.dissect(path, in: directory, scripts: [], environment: ["HOME": home])
        for result in [byHand, asPlugins] {
            #expect(result.errors.isEmpty, "\(result.errors.prefix(5))")
            #expect(result.stderr.isEmpty, "tshark said \(result.stderr)")
        }
        // Each family's frames, the reassembled ones too.
        #expect(Set(byHand.messages.map(\.protocolName)) == ["lightx", "hkwhd", "wearable"], "\(byHand.messages)")
        #expect(byHand.messages.count == 4, "\(byHand.messages)")
        #expect(asPlugins.messages.map(\.description) == byHand.messages.map(\.description))
    }

    @Test func theSharedHelpersAloneRegisterNothing() async throws {
        let directory = try TemporaryDirectory.make("tuneup-wireshark-plugins")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/streams.pcapng"
        try await streamsCapture().write(to: path)
        let result = try await Tshark.dissect(path, in: directory, scripts: ["-X", "lua_script:" + dissectorsDirectory + "/tuneup-common.lua"])
        // (Wireshark's own USER2 handling reports the control frames malformed: no dissector took them.)
        #expect(!result.errors.contains { $0.localizedCaseInsensitiveContains("lua") }, "\(result.errors.prefix(5))")
        #expect(result.stderr.isEmpty, "tshark said \(result.stderr)")
        #expect(result.messages.isEmpty, "\(result.messages)")
    }
}
