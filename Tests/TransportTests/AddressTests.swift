import Testing
@testable import Transport

@Test func parsesTCP() throws {
    #expect(try DeviceAddress(parsing: "tcp:127.0.0.1:4000") == .tcp(host: "127.0.0.1", port: 4000))
}

@Suite struct AddressTests {
    static let bt = BluetoothAddress("00:1A:7D:DA:71:13")

    @Test(arguments: [
        ("tcp:127.0.0.1:4000", DeviceAddress.tcp(host: "127.0.0.1", port: 4000)),
        ("tcp:localhost:0", .tcp(host: "localhost", port: 0)),
        ("tcp:headset.local:65535", .tcp(host: "headset.local", port: 65535)),
        ("tcp:[::1]:4000", .tcp(host: "::1", port: 4000)),
        ("tcp:[fe80::1%eth0]:22", .tcp(host: "fe80::1%eth0", port: 22)),
        ("tcp:::1:4000", .tcp(host: "::1", port: 4000)),
        ("serial:/dev/ttyUSB0", .serial(path: "/dev/ttyUSB0")),
        ("serial:/dev/rfcomm0", .serial(path: "/dev/rfcomm0")),
        ("serial:relative/path:with:colons", .serial(path: "relative/path:with:colons")),
        ("sim", .simulator(statePath: nil)),
        ("sim:", .simulator(statePath: nil)),
        ("sim:/tmp/headset.json", .simulator(statePath: "/tmp/headset.json")),
        ("usb:1d6b:0104", .usb(vendorID: 0x1d6b, productID: 0x0104, serial: nil)),
        ("usb:1D6B:104", .usb(vendorID: 0x1d6b, productID: 0x0104, serial: nil)),
        ("usb:0a12:0001:SN-123:x", .usb(vendorID: 0x0a12, productID: 0x0001, serial: "SN-123:x")),
        ("usb:1-2", .usbPort(bus: 1, ports: [2])),
        ("usb:3-1.4.2", .usbPort(bus: 3, ports: [1, 4, 2])),
        ("bt:00:1A:7D:DA:71:13", .bluetooth(address: bt!, channel: nil)),
        ("bt:00:1a:7d:da:71:13:5", .bluetooth(address: bt!, channel: 5)),
        ("bt:00:1A:7D:DA:71:13:30", .bluetooth(address: bt!, channel: 30)),
    ])
    func parsesEveryForm(text: String, expected: DeviceAddress) throws {
        let parsed = try DeviceAddress(parsing: text)
        #expect(parsed == expected)
        // description is itself parseable and means the same address.
        #expect(try DeviceAddress(parsing: parsed.description) == parsed)
    }

    @Test(arguments: [
        ("tcp:127.0.0.1:4000", "tcp:127.0.0.1:4000"),
        ("tcp:::1:4000", "tcp:[::1]:4000"),
        ("tcp:[::1]:4000", "tcp:[::1]:4000"),
        ("serial:/dev/ttyACM0", "serial:/dev/ttyACM0"),
        ("sim", "sim"),
        ("sim:", "sim"),
        ("sim:state.json", "sim:state.json"),
        ("usb:1D6B:104", "usb:1d6b:0104"),
        ("usb:1d6b:0104:ABC", "usb:1d6b:0104:ABC"),
        ("usb:1-2.3", "usb:1-2.3"),
        ("bt:aa:bb:cc:dd:ee:0f", "bt:AA:BB:CC:DD:EE:0F"),
        ("bt:aa:bb:cc:dd:ee:0f:1", "bt:AA:BB:CC:DD:EE:0F:1"),
    ])
    func canonicalDescription(text: String, description: String) throws {
        #expect(try DeviceAddress(parsing: text).description == description)
    }

    @Test(arguments: [
        // (input, a fragment naming the expected form)
        ("", "expected one of"),
        ("foo", "expected one of"),
        ("tcp", "expected tcp:HOST:PORT"),
        ("serial", "expected serial:PATH"),
        ("usb", "expected usb:VID:PID[:SERIAL] or usb:BUS-PORT[.PORT]"),
        ("bt", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("ftp:host", "expected tcp:, serial:, sim, usb: or bt:"),
        ("tcp:", "expected tcp:HOST:PORT"),
        ("tcp:host", "expected tcp:HOST:PORT"),
        ("tcp::80", "expected tcp:HOST:PORT"),
        ("tcp:host:", "expected tcp:HOST:PORT"),
        ("tcp:host:65536", "expected tcp:HOST:PORT"),
        ("tcp:host:-1", "expected tcp:HOST:PORT"),
        ("tcp:host:+80", "expected tcp:HOST:PORT"),
        ("tcp:host:http", "expected tcp:HOST:PORT"),
        ("tcp:[::1]", "expected tcp:[IPV6]:PORT"),
        ("tcp:[::1]80", "expected tcp:[IPV6]:PORT"),
        ("tcp:[::1:80", "expected tcp:[IPV6]:PORT"),
        ("tcp:[]:80", "expected tcp:HOST:PORT"),
        ("serial:", "expected serial:PATH"),
        ("usb:", "expected usb:VID:PID"),
        ("usb:1d6b", "expected usb:VID:PID"),
        ("usb:1d6b:", "expected usb:VID:PID"),
        ("usb:zzzz:0104", "expected usb:VID:PID"),
        ("usb:12345:0104", "expected usb:VID:PID"),
        ("usb:+1:0104", "expected usb:VID:PID"),
        ("usb:1d6b:0104:", "expected usb:VID:PID[:SERIAL]"),
        ("usb:1-", "expected usb:BUS-PORT[.PORT...]"),
        ("usb:x-1", "expected usb:BUS-PORT[.PORT...]"),
        ("usb:256-1", "expected usb:BUS-PORT[.PORT...]"),
        ("usb:1-2..3", "expected usb:BUS-PORT[.PORT...]"),
        ("usb:1-+2", "expected usb:BUS-PORT[.PORT...]"),
        ("usb:1-1.2.3.4.5.6.7.8", "expected usb:BUS-PORT[.PORT...]"),
        ("bt:", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("bt:00:1A:7D:DA:71", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("bt:00:1A:7D:DA:71:1G", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("bt:0:1A:7D:DA:71:13", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("bt:+0:1A:7D:DA:71:13", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("bt:00:1A:7D:DA:71:13:0", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("bt:00:1A:7D:DA:71:13:31", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("bt:00:1A:7D:DA:71:13:+3", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
        ("bt:00:1A:7D:DA:71:13:1:2", "expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]"),
    ])
    func rejectsBadAddresses(text: String, form: String) async {
        let error = await expectTransportError(.invalidAddress) { _ = try DeviceAddress(parsing: text) }
        #expect(error?.message.contains(form) == true, "message: \(error?.message ?? "-")")
        #expect(error?.message.contains("\n") == false)
        #expect(error?.errno == nil)
    }

    @Test func bluetoothAddressParsing() {
        #expect(BluetoothAddress("00:1a:7d:da:71:13")?.bytes == [0x00, 0x1A, 0x7D, 0xDA, 0x71, 0x13])
        #expect(BluetoothAddress("00:1a:7d:da:71:13")?.description == "00:1A:7D:DA:71:13")
        #expect(BluetoothAddress("00:1a:7d:da:71") == nil)
        #expect(BluetoothAddress("00:1a:7d:da:71:13:00") == nil)
        #expect(BluetoothAddress("001a7dda7113") == nil)
        #expect(BluetoothAddress("0x:1a:7d:da:71:13") == nil)
    }

    @Test func transportErrorsCompareByCode() {
        let a = TransportError(.closed, "one")
        let b = TransportError(.closed, "two", errno: 5)
        #expect(a == b)
        #expect(a != TransportError(.io, "one"))
        #expect(Set([a, b]).count == 1)
        #expect(b.description == "two")
        #expect(TransportError.Code.allCases.map(\.rawValue).contains("connection-refused"))
    }
}

/// The explicit form of the built-in headset, and how a text finds its scheme.
@Suite struct AddressSchemeTests {
    @Test(arguments: [
        ("sim:headset", DeviceAddress.simulator(statePath: nil), "sim"),
        ("sim:headset:", .simulator(statePath: nil), "sim"),
        ("sim:headset:/tmp/h.json", .simulator(statePath: "/tmp/h.json"), "sim:/tmp/h.json"),
        ("sim:headset:state", .simulator(statePath: "state"), "sim:state"),
        ("sim:state", .simulator(statePath: "state"), "sim:state"),
        ("sim:headset:a:b", .simulator(statePath: "a:b"), "sim:a:b"),
        ("sim:headset:headset", .simulator(statePath: "headset"), "sim:headset:headset"),
        ("sim:headset:headset:x", .simulator(statePath: "headset:x"), "sim:headset:headset:x"),
        ("sim:./headset", .simulator(statePath: "./headset"), "sim:./headset"),
    ])
    func headsetForms(text: String, expected: DeviceAddress, canonical: String) throws {
        let parsed = try DeviceAddress(parsing: text)
        #expect(parsed == expected)
        #expect(parsed.description == canonical)
        #expect(try DeviceAddress(parsing: canonical) == parsed)
        #expect(parsed.scheme == "sim:headset")
    }

    @Test func builtInSchemesAreRegisteredInOrder() {
        #expect(AddressSchemes.builtIn.schemes.map(\.name) == ["tcp", "serial", "sim", "sim:headset", "usb", "bt"])
        #expect(AddressSchemes.builtIn.scheme(named: "usb")?.form == "usb:VID:PID[:SERIAL] or usb:BUS-PORT[.PORT]")
    }

    /// The longest registered name wins: a `sim:speaker` scheme takes `sim:speaker...`, `sim:PATH` stays the headset.
    @Test func theLongestRegisteredNameWins() throws {
        let speaker = AddressScheme(name: "sim:speaker", form: "sim:speaker[:STATEFILE]", summary: "a speaker", standsAlone: true) { rest, _ in
            .registered(RegisteredAddress(scheme: "sim:speaker", text: rest.isEmpty ? "sim:speaker" : "sim:speaker:\(rest)", value: rest))
        }
        let schemes = AddressSchemes.builtIn.registering(speaker)
        let bare = try schemes.parse("sim:speaker")
        #expect(bare.scheme == "sim:speaker" && bare.description == "sim:speaker")
        let withFile = try schemes.parse("sim:speaker:/tmp/s.json")
        guard case let .registered(registered) = withFile else { Issue.record("not a registered address"); return }
        #expect(registered.value(as: String.self) == "/tmp/s.json")
        #expect(registered.value(as: Int.self) == nil)
        #expect(try schemes.parse("sim:/tmp/h.json") == .simulator(statePath: "/tmp/h.json"))
        #expect(try schemes.parse("sim:speakers") == .simulator(statePath: "speakers"))
        #expect(try schemes.parse("sim") == .simulator(statePath: nil))
        // Before it is registered, the same text is the headset with a state file of that name.
        #expect(try DeviceAddress(parsing: "sim:speaker") == .simulator(statePath: "speaker"))
    }

    @Test func unknownAndIncompleteTextsNameTheRegisteredForms() async {
        let schemes = AddressSchemes([
            AddressScheme(name: "echo", form: "echo:NAME", summary: "an echo") { rest, _ in
                .registered(RegisteredAddress(scheme: "echo", text: "echo:\(rest)"))
            },
            AddressScheme(name: "loop", form: "loop", summary: "a loop", standsAlone: true) { _, _ in
                .registered(RegisteredAddress(scheme: "loop", text: "loop"))
            },
        ])
        let unknown = await expectTransportError(.invalidAddress) { _ = try schemes.parse("ftp:x") }
        #expect(unknown?.message == "unknown address scheme 'ftp'; expected echo: or loop")
        let bare = await expectTransportError(.invalidAddress) { _ = try schemes.parse("nothing") }
        #expect(bare?.message == "unknown device address 'nothing'; expected one of echo:NAME, loop")
        let incomplete = await expectTransportError(.invalidAddress) { _ = try schemes.parse("echo") }
        #expect(incomplete?.message == "'echo' needs more: expected echo:NAME")
        let empty = await expectTransportError(.invalidAddress) { _ = try AddressSchemes().parse("tcp:h:1") }
        #expect(empty?.message == "unknown address scheme 'tcp'; expected no address at all (no scheme is registered)")
    }

    @Test func aLaterRegistrationReplacesTheSameName() throws {
        let other = AddressScheme(name: "serial", form: "serial:NAME", summary: "named lines") { rest, _ in .serial(path: "/dev/" + rest) }
        let schemes = AddressSchemes.builtIn.registering(other)
        #expect(schemes.schemes.map(\.name) == AddressSchemes.builtIn.schemes.map(\.name))
        #expect(try schemes.parse("serial:ttyS0") == .serial(path: "/dev/ttyS0"))
        #expect(schemes.scheme(named: "serial")?.summary == "named lines")
    }
}
