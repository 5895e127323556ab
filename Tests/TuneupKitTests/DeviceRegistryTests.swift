import Testing
import Transport
import TuneupKit

/// The core registry has the real back ends only; the tools' registry is the same back ends with the in-process
/// simulators among them, in the order help lists them.
@Suite struct DeviceRegistryTests {
    static let simulatorSchemes = ["sim", "sim:headset", "sim:wearable", "sim:speaker"]

    @Test func theRealBackEndsKnowNoSimulator() throws {
        #expect(DeviceRegistry.real.addressSchemes.schemes.map(\.name) == ["tcp", "serial", "usb", "hidraw", "bt", "ble", "speaker"])
        let connector = DeviceRegistry.real.connector()
        for name in Self.simulatorSchemes {
            #expect(DeviceRegistry.real.entry(named: name) == nil, "\(name)")
            #expect(!connector.canOpen(name), "\(name)")
            #expect(throws: TransportError.self) { try DeviceRegistry.real.parseAddress(name) }
        }
        // A family's texts name only the forms this registry has.
        do {
            _ = try DeviceRegistry.real.parseHeadsetAddress("speaker:127.0.0.1:4000")
            Issue.record("a speaker's address was taken for a headset's")
        } catch {
            #expect(error.message == "'speaker:127.0.0.1:4000' is not a headset's address: expected tcp:HOST:PORT, serial:PATH, "
                + "usb:VID:PID[:SERIAL] or usb:BUS-PORT[.PORT], hidraw:/dev/hidrawN, bt:AA:BB:CC:DD:EE:FF[:CHANNEL]")
        }
    }

    @Test func theToolsRegistryIsTheRealOneWithTheSimulators() {
        #expect(Devices.registry.addressSchemes.schemes.map(\.name) == [
            "sim", "sim:headset", "tcp", "serial", "usb", "hidraw", "bt", "sim:wearable", "ble", "speaker", "sim:speaker",
        ])
        let real = Devices.registry.entries.filter { !Self.simulatorSchemes.contains($0.name) }
        #expect(real.map(\.address.form) == DeviceRegistry.real.entries.map(\.address.form))
        #expect(real.map(\.address.summary) == DeviceRegistry.real.entries.map(\.address.summary))
        let connector = Devices.registry.connector()
        for name in ["sim:headset", "sim:wearable", "sim:speaker"] { #expect(connector.canOpen(name), "\(name)") }
        #expect(Devices.registry.entry(named: "sim:speaker")?.localHost == "127.0.0.1")
    }
}
